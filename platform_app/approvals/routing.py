from __future__ import annotations

from django.urls import path

from platform_app.approvals.consumers import ApprovalsConsumer

websocket_urlpatterns = [
    path("ws/approvals/", ApprovalsConsumer.as_asgi()),
]
