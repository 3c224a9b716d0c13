"""Agent profiles and LLM providers (staff only), under /agents/."""

from __future__ import annotations

from django.urls import path

from chat_app.admin_pages import views

app_name = "agents"

urlpatterns = [
    path("", views.agents, name="agents"),
    path("new/", views.agent_new, name="agent_new"),
    path("<int:agent_id>/", views.agent_edit, name="agent"),
    path("<int:agent_id>/delete/", views.agent_delete, name="agent_delete"),
    path("providers/", views.providers, name="providers"),
    path("providers/new/", views.provider_new, name="provider_new"),
    path("providers/<int:provider_id>/", views.provider_edit, name="provider"),
    path("providers/<int:provider_id>/delete/", views.provider_delete, name="provider_delete"),
    path("providers/<int:provider_id>/test/", views.provider_test, name="provider_test"),
]
