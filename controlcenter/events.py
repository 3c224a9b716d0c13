"""Publishing events to browsers through the channel layer.

Every event is ``{"type": "cc.event", "payload": {...}}`` sent to a group; consumers forward
the payload as JSON. Groups: ``conversation_<id>`` (chat page) and ``toolcall_<id>`` (a Test
run in the Tools Manager).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
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


class _PublisherLoop:
    """One long-lived event loop per process for publishing from sync code.

    ``async_to_sync`` would start a fresh loop per call, and channels_redis keeps its Redis
    connections per loop, so every event would pay for a new connection. Re-created after a
    fork (Celery's prefork children).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid = 0

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="cc-publisher", daemon=True)
                thread.start()
                self._loop, self._pid = loop, os.getpid()
            return self._loop


_publisher = _PublisherLoop()


def publish(groups: Iterable[str], payload: dict[str, Any]) -> None:
    groups = list(groups)
    if not groups:
        return
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        future = asyncio.run_coroutine_threadsafe(apublish(groups, payload), _publisher.loop())
        future.result(timeout=30)
        return
    # Called from sync code running inside an event loop's thread (should not happen in our
    # code paths); fall back to asgiref, which raises a clear error in that case.
    async_to_sync(apublish)(groups, payload)
