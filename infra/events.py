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
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Any, Self

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)


def conversation_group(conversation_id: int) -> str:
    return f"conversation_{conversation_id}"


def toolcall_group(call_id: int) -> str:
    return f"toolcall_{call_id}"


def person_group(user_id: int) -> str:
    """Every open socket of one person: told when the account stops being usable."""
    return f"person_{user_id}"


# The event that closes a person's sockets (``infra.websocket``): the account was deactivated.
PERSON_ENDED = "person.ended"


async def apublish(groups: Iterable[str], payload: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    message = {"type": "cc.event", "payload": payload}

    async def send(group: str) -> None:
        try:
            await layer.group_send(group, message)
        except Exception:  # a full or unreachable layer must not break a tool call
            logger.warning("could not publish %s to %s", payload.get("type"), group, exc_info=True)

    await asyncio.gather(*(send(g) for g in groups))


class _Publisher:
    """Publishing from sync code: one long-lived event loop thread per process, fed through
    one queue so events leave in the order they were published. A layer that can send
    without a loop (``group_send_now``: embedded mode's) is given each event at once instead.

    ``async_to_sync`` would start a fresh loop per call, and channels_redis keeps its Redis
    connections per loop, so every event would pay for a new connection. ``wait=False`` lets a
    tool call go on while its live updates are sent. Re-created after a fork (Celery's prefork
    children).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: asyncio.Queue[tuple[list[str], dict[str, Any], Future[None]]]
        self._pid = 0

    def _start(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():
                loop = asyncio.new_event_loop()
                self._queue = asyncio.Queue()
                loop.create_task(self._drain())
                thread = threading.Thread(target=loop.run_forever, name="cc-publisher", daemon=True)
                thread.start()
                self._loop, self._pid = loop, os.getpid()
            return self._loop

    async def _drain(self) -> None:
        while True:
            groups, payload, done = await self._queue.get()
            try:
                await apublish(groups, payload)
            finally:
                if done.set_running_or_notify_cancel():
                    done.set_result(None)

    def submit(self, groups: list[str], payload: dict[str, Any]) -> Future[None]:
        """Queue an event; the future returned is done once it is sent (cancelling it does
        not stop the event). In embedded mode it is sent before this returns, and the future
        is one shared done future: callers only ever wait on it."""
        try:
            send_now = getattr(get_channel_layer(), "group_send_now", None)
        except Exception:  # a layer that cannot be built: the queue below logs it per event
            send_now = None
        if send_now is not None:
            # Embedded mode's layer is a lock and deques: the event is put in every
            # receiver's channel here, in this thread, in the order of the calls. A hop to
            # the publishing thread (and back to a caller who waits) would only cost two
            # thread switches per event; the order is the same, since the queue below is
            # only ever fed in call order too.
            _send_now(send_now, groups, {"type": "cc.event", "payload": payload})
            return _SENT
        loop = self._start()
        done: Future[None] = Future()
        loop.call_soon_threadsafe(self._queue.put_nowait, (groups, payload, done))
        return done


def _send_now(
    send_now: Callable[[str, dict[str, Any]], None], groups: list[str], message: dict[str, Any]
) -> None:
    for group in groups:
        try:
            send_now(group, message)
        except Exception:  # as in apublish: a broken layer must not break a tool call
            logger.warning(
                "could not publish %s to %s", message["payload"].get("type"), group, exc_info=True
            )


_SENT: Future[None] = Future()
_SENT.set_result(None)

_publisher = _Publisher()


async def apublish_in_order(groups: Iterable[str], payload: dict[str, Any]) -> None:
    """Publish from async code, after every event this process has queued with ``publish``:
    a token of a message never overtakes the event that announced the message, though that
    one was queued without waiting."""
    groups = list(groups)
    if groups:
        sent = _publisher.submit(groups, payload)
        if not sent.done():  # wrapping a done one would still cost a wake-up of this loop
            await asyncio.wrap_future(sent)


PUBLISH_TIMEOUT = 30.0


def publish(groups: Iterable[str], payload: dict[str, Any], *, wait: bool = True) -> Future[None]:
    """Publish from sync code. ``wait=False``: queue it (in order) and return at once; the
    future returned is done once it is sent (``published_wait``). In embedded mode it is in
    its receivers' channels when this returns either way."""
    groups = list(groups)
    if groups:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            sent = _publisher.submit(groups, payload)
            if wait:
                published_wait(sent)
            return sent
        # Called from sync code running inside an event loop's thread (should not happen in
        # our code paths); fall back to asgiref, which raises a clear error in that case.
        async_to_sync(apublish)(groups, payload)
    done: Future[None] = Future()
    done.set_result(None)  # nothing left to send
    return done


def published_wait(sent: Future[None]) -> None:
    """Block until an event queued with ``publish(wait=False)`` has been sent."""
    sent.result(timeout=PUBLISH_TIMEOUT)


class GroupListener:
    """The events published to one group, received on a channel of this listener's own
    (``async with GroupListener(group) as events: payload = await events.receive(2.0)``).

    Subscribe before starting what publishes (a turn, a call), then read its state once:
    anything published before the subscription went to nobody. A receive that times out is
    kept and picked up by the next call, so no event is lost between two waits (cancelling
    a layer's receive midway may drop the message it was reading). With no layer, or one that
    fails, ``receive`` just waits: callers poll what they follow as a fallback.
    """

    def __init__(self, group: str) -> None:
        self.group = group
        self.layer: Any = get_channel_layer()
        self.channel = ""
        self._receiving: asyncio.Future[Any] | None = None

    async def __aenter__(self) -> Self:
        if self.layer is not None:
            try:
                self.channel = await self.layer.new_channel()
                await self.layer.group_add(self.group, self.channel)
            except Exception:  # an unreachable layer: the caller polls instead
                logger.warning("cannot subscribe to %s; polling it", self.group, exc_info=True)
                self.layer = None
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._receiving is not None:
            self._receiving.cancel()
        if self.layer is not None:
            try:
                await asyncio.shield(self.layer.group_discard(self.group, self.channel))
            except Exception:
                logger.warning("cannot leave %s", self.group, exc_info=True)

    async def receive(self, timeout: float) -> dict[str, Any] | None:
        """The next event's payload, or None when nothing came within ``timeout``."""
        if self.layer is None:
            await asyncio.sleep(timeout)
            return None
        if self._receiving is None:
            self._receiving = asyncio.ensure_future(self.layer.receive(self.channel))
        done, _ = await asyncio.wait({self._receiving}, timeout=timeout)
        if not done:
            return None  # still receiving: the next call picks the same receive up
        received, self._receiving = self._receiving, None
        try:
            payload = received.result().get("payload")
        except Exception:
            logger.warning("cannot receive the events of %s", self.group, exc_info=True)
            await asyncio.sleep(timeout)
            return None
        return payload if isinstance(payload, dict) else {}
