from __future__ import annotations

from django.urls import path

from tools_app.manager.consumers import ToolCallConsumer

websocket_urlpatterns = [
    path("ws/toolcalls/<int:call_id>/", ToolCallConsumer.as_asgi()),
]
