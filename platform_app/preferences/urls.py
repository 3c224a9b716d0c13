from __future__ import annotations

from django.urls import path

from platform_app.preferences import views

app_name = "preferences"

urlpatterns = [
    path("theme/", views.theme, name="theme"),
    path("language/", views.language, name="language"),
]
