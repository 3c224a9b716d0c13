"""Pages of one's own account, under /accounts/: the Password page (signed in) and the
one-time set-password page of invitations and resets (public: infra/middleware.py)."""

from __future__ import annotations

from django.urls import path

from platform_app.people import views

app_name = "account"

urlpatterns = [
    path("password/", views.PasswordChange.as_view(), name="password"),
    path("set-password/done/", views.set_password_done, name="set_password_done"),
    path(
        "set-password/<uidb64>/<token>/", views.SetPasswordFromLink.as_view(), name="set_password"
    ),
]
