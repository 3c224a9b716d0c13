"""A JSON websocket consumer that treats every frame as untrusted input.

Channels' ``AsyncJsonWebsocketConsumer`` decodes each frame with ``json.loads`` and lets the
error end the connection: one stray frame (``not json``, binary, a truncated object) and the
page loses its stream. Here every frame that is not a JSON object, is binary, is nested
deeper than ``infra.safe_json.MAX_DEPTH`` or is larger than ``CHAT_MAX_MESSAGE_BYTES`` is
answered with an ``error`` event and the socket stays open; a command that fails
unexpectedly is logged and answered the same way.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings

from infra import access
from infra.events import PERSON_ENDED, person_group
from infra.safe_json import JsonTooDeep, json_loads_safe

logger = logging.getLogger(__name__)

# Database work of a consumer runs on the server's thread pool, not on Channels' single
# "sync thread": hundreds of sockets must not queue behind each other's queries.
db = functools.partial(database_sync_to_async, thread_sensitive=False)

# The close code of a socket whose session or account ended (4401: sign in again).
CLOSE_SESSION_ENDED = 4401


def size_text(size: int) -> str:
    return f"{size / 1024:.0f} KB" if size < 1024 * 1024 else f"{size / 1024 / 1024:.1f} MB"


class SafeJsonConsumer(AsyncJsonWebsocketConsumer):
    """Also the principal's check (``infra.access``): the socket joins its person's group, so
    deactivating the account closes it at once, and every frame is refused — the socket
    closed with the reason — once the session or the account is no longer good."""

    person: str = ""

    async def websocket_connect(self, message: dict[str, Any]) -> None:
        user = self.scope.get("user")
        if access.active(user):
            self.person = person_group(user.pk)
            await self.channel_layer.group_add(self.person, self.channel_name)
        await super().websocket_connect(message)

    async def websocket_disconnect(self, message: dict[str, Any]) -> None:
        if self.person:
            await self.channel_layer.group_discard(self.person, self.channel_name)
        await super().websocket_disconnect(message)

    async def websocket_receive(self, message: dict[str, Any]) -> None:
        user = self.scope.get("user")
        session = self.scope.get("session")
        principal = await db(access.principal_current)(
            session_key=getattr(session, "session_key", None), user_id=getattr(user, "pk", None)
        )
        if principal.user is None:
            await self.principal_ended(principal.reason)
            return
        self.scope["user"] = principal.user  # as the database has it now
        await super().websocket_receive(message)

    async def principal_ended(self, reason: str) -> None:
        await self.send_json({"type": "error", "message": reason, "code": "session_ended"})
        await self.close(code=CLOSE_SESSION_ENDED, reason=reason[:120])

    async def dispatch(self, message: dict[str, Any]) -> None:
        if message.get("type") == "cc.event" and message["payload"].get("type") == PERSON_ENDED:
            await self.principal_ended(message["payload"].get("reason", ""))
            return
        # Channels runs close_old_connections on its single sync thread before *every*
        # message, events included: with hundreds of sockets each event queued behind the
        # others there. Our handlers touch the database only through ``db`` (which closes
        # stale connections on its own thread), so events from the layer skip that hop.
        if message.get("type") == "cc.event":
            await self.cc_event(message)
            return
        await super().dispatch(message)

    async def cc_event(self, event: dict[str, Any]) -> None:
        """An event published to one of this socket's groups: forward its payload."""
        await self.send_json(event["payload"])

    async def receive(
        self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any
    ) -> None:
        if text_data is None:
            await self.send_error("binary frames are not accepted: send a JSON object as text")
            return
        limit = settings.CHAT_MAX_MESSAGE_BYTES
        size = len(text_data.encode("utf-8", "surrogatepass"))
        if size > limit:
            await self.send_error(
                f"message too large: {size_text(size)} (the limit is {size_text(limit)})"
            )
            return
        try:
            content = json_loads_safe(text_data)
        except JsonTooDeep as exc:
            await self.send_error(f"malformed frame: {exc}")
            return
        except ValueError as exc:
            await self.send_error(f"malformed frame: not JSON ({exc})")
            return
        if not isinstance(content, dict):
            await self.send_error("malformed frame: expected a JSON object with an 'action'")
            return
        try:
            await self.receive_json(content, **kwargs)
        except Exception:
            logger.exception("websocket command failed: %.200r", content)
            await self.send_error("the command failed unexpectedly; it was logged for an admin")

    async def send_error(self, message: str, **extra: Any) -> None:
        await self.send_json({"type": "error", "message": message, **extra})
