"""Publishing events to browsers through the channel layer.

Every event is ``{"type": "cc.event", "payload": {...}}`` sent to a group; consumers forward
the payload as JSON. Groups: ``conversation_<id>`` (chat page) and ``toolcall_<id>`` (a Test
run in the Tools Manager).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)


def conversation_group(conversation_id: int) -> str:
    return f"conversation_{conversation_id}"


def toolcall_group(call_id: int) -> str:
    return f"toolcall_{call_id}"


async def apublish(groups: Iterable[str], payload: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    for group in groups:
        try:
            await layer.group_send(group, {"type": "cc.event", "payload": payload})
        except Exception:  # a full or unreachable layer must not break a tool call
            logger.warning("could not publish %s to %s", payload.get("type"), group, exc_info=True)


def publish(groups: Iterable[str], payload: dict[str, Any]) -> None:
    groups = list(groups)
    if groups:
        async_to_sync(apublish)(groups, payload)
