"""Included by the project's urls at ``media/screenshots/``."""

from __future__ import annotations

from django.urls import path

from tools_app.executors.browser.views import screenshot_view

urlpatterns = [
    path("<int:pk>/", screenshot_view, name="browser-screenshot"),
]
