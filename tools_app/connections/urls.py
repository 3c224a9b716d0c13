from __future__ import annotations

from django.urls import path

from tools_app.connections import views

app_name = "connections"

urlpatterns = [
    path("connections/", views.connections_page, name="page"),
    path("connections/callback/", views.callback, name="callback"),
    path("connections/<slug:name>/connect/", views.connect, name="connect"),
    path("connections/<slug:name>/key/", views.api_key, name="api-key"),
    path("connections/<slug:name>/variables/", views.person_env, name="person-env"),
    path("connections/<int:connection_id>/disconnect/", views.disconnect, name="disconnect"),
    path(
        "tools/sources/<slug:name>/credentials/",
        views.source_credentials,
        name="source-credentials",
    ),
]
