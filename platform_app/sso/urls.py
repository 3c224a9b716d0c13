from __future__ import annotations

from django.urls import path

from platform_app.sso import views

# Under /accounts/ next to Django's auth views; public (infra/middleware.py PUBLIC_PREFIXES).
urlpatterns = [
    path("login/", views.LoginView.as_view(), name="login"),
    path("oidc/login/", views.oidc_login, name="sso-login"),
    path("oidc/callback/", views.oidc_callback, name="sso-callback"),
]
