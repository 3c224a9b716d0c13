"""A JSON websocket consumer that treats every frame as untrusted input.

Channels' ``AsyncJsonWebsocketConsumer`` decodes each frame with ``json.loads`` and lets the
error end the connection: one stray frame (``not json``, binary, a truncated object) and the
page loses its stream. Here every frame that is not a JSON object, is binary, or is larger
than ``CHAT_MAX_MESSAGE_BYTES`` is answered with an ``error`` event and the socket stays
open; a command that fails unexpectedly is logged and answered the same way.
"""

from __future__ import annotations

import functools
import json
import logging
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings

logger = logging.getLogger(__name__)

# Database work of a consumer runs on the server's thread pool, not on Channels' single
# "sync thread": hundreds of sockets must not queue behind each other's queries.
db = functools.partial(database_sync_to_async, thread_sensitive=False)


def size_text(size: int) -> str:
    return f"{size / 1024:.0f} KB" if size < 1024 * 1024 else f"{size / 1024 / 1024:.1f} MB"


class SafeJsonConsumer(AsyncJsonWebsocketConsumer):
    async def dispatch(self, message: dict[str, Any]) -> None:
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
            content = json.loads(text_data)
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
