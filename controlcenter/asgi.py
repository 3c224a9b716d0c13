"""ASGI entry point: HTTP through Django (request bodies capped), websockets through Channels
(authenticated, origin-checked against ALLOWED_HOSTS)."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlcenter.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from chat_app.routing import websocket_urlpatterns as chat_ws  # noqa: E402
from infra.body_limit import BodyLimit  # noqa: E402
from platform_app.api.v1.app import OpenAIRouter  # noqa: E402
from platform_app.approvals.routing import websocket_urlpatterns as approvals_ws  # noqa: E402
from platform_app.mcp_gateway import McpRouter  # noqa: E402
from platform_app.preferences.websocket import LanguageMiddleware  # noqa: E402
from tools_app.manager.routing import websocket_urlpatterns as tools_ws  # noqa: E402

application = ProtocolTypeRouter(
    {
        # /mcp/: our governed tools for outside MCP clients (platform_app.mcp_gateway);
        # /v1: the OpenAI-compatible endpoint (platform_app.api.v1).
        "http": BodyLimit(McpRouter(OpenAIRouter(django_asgi_app))),
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(LanguageMiddleware(URLRouter([*chat_ws, *tools_ws, *approvals_ws])))
        ),
    }
)
