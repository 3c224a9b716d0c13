"""A channel layer for embedded mode that is safe to use from several threads.

Channels' ``InMemoryChannelLayer`` keeps ``asyncio.Queue`` objects that belong to whichever
event loop touched them first. In embedded mode the Celery worker threads publish events while
the ASGI server's loop consumes them, so waking a waiter from another thread must go through
``loop.call_soon_threadsafe``. This layer keeps plain deques under a lock and wakes receivers on
their own loop. It only crosses threads, never processes: distributed mode uses channels_redis.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import string
import threading
import time
from collections import deque
from typing import Any

from channels.exceptions import ChannelFull
from channels.layers import BaseChannelLayer


class _Channel:
    __slots__ = ("messages", "waiters")

    def __init__(self) -> None:
        self.messages: deque[tuple[float, dict[str, Any]]] = deque()
        self.waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()


class ThreadSafeInMemoryChannelLayer(BaseChannelLayer):
    extensions = ["groups", "flush"]

    def __init__(
        self,
        expiry: int = 60,
        group_expiry: int = 86400,
        capacity: int = 1000,
        channel_capacity: dict[str, int] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(expiry=expiry, capacity=capacity, channel_capacity=channel_capacity)
        self.group_expiry = group_expiry
        self._lock = threading.Lock()
        self._channels: dict[str, _Channel] = {}
        self._groups: dict[str, dict[str, float]] = {}

    # --- channel API ------------------------------------------------------------------------
    async def send(self, channel: str, message: dict[str, Any]) -> None:
        assert isinstance(message, dict), "message is not a dict"
        self.require_valid_channel_name(channel)
        assert "__asgi_channel__" not in message
        self._put(channel, message)

    def _put(self, channel: str, message: dict[str, Any]) -> None:
        with self._lock:
            waiter = self._append(channel, message)
        _wake_on_its_loop(waiter)

    def _append(
        self, channel: str, message: dict[str, Any]
    ) -> tuple[asyncio.AbstractEventLoop, asyncio.Future[None]] | None:
        """Under the lock: the message into the channel; the receiver to wake, if one waits."""
        chan = self._channels.setdefault(channel, _Channel())
        self._expire(chan)
        if len(chan.messages) >= self.get_capacity(channel):
            raise ChannelFull(channel)
        chan.messages.append((time.monotonic() + self.expiry, dict(message)))
        while chan.waiters:
            loop, fut = chan.waiters.popleft()
            if not fut.done():
                return loop, fut
        return None

    async def receive(self, channel: str) -> dict[str, Any]:
        self.require_valid_channel_name(channel)
        loop = asyncio.get_running_loop()
        while True:
            with self._lock:
                chan = self._channels.setdefault(channel, _Channel())
                self._expire(chan)
                if chan.messages:
                    _, message = chan.messages.popleft()
                    if not chan.messages and not chan.waiters:
                        self._channels.pop(channel, None)
                    return message
                fut: asyncio.Future[None] = loop.create_future()
                chan.waiters.append((loop, fut))
            try:
                await fut
            except asyncio.CancelledError:
                with self._lock:
                    chan2 = self._channels.get(channel)
                    if chan2 is not None:
                        try:
                            chan2.waiters.remove((loop, fut))
                        except ValueError:
                            # We were woken and then cancelled: pass the wake-up on.
                            if chan2.messages and chan2.waiters:
                                wl, wf = chan2.waiters.popleft()
                                wl.call_soon_threadsafe(_wake, wf)
                        # A closed websocket's receive ends here: its channel goes with it.
                        if not chan2.messages and not chan2.waiters:
                            self._channels.pop(channel, None)
                raise

    async def new_channel(self, prefix: str = "specific.") -> str:
        return prefix + "inmemory!" + "".join(random.choices(string.ascii_letters, k=12))

    # --- groups -----------------------------------------------------------------------------
    async def group_add(self, group: str, channel: str) -> None:
        self.require_valid_group_name(group)
        self.require_valid_channel_name(channel)
        with self._lock:
            self._groups.setdefault(group, {})[channel] = time.monotonic()

    async def group_discard(self, group: str, channel: str) -> None:
        with self._lock:
            members = self._groups.get(group)
            if members is not None:
                members.pop(channel, None)
                if not members:
                    self._groups.pop(group, None)

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        self.group_send_now(group, message)

    def group_send_now(self, group: str, message: dict[str, Any]) -> None:
        """``group_send`` without a loop: it never waits, so any thread may call it, and the
        message is in its receivers' channels when it returns (``infra.events.publish``).
        One hold of the lock puts it into every member's channel, so two sends to a group
        reach all its members in the same order; the receivers are woken after it."""
        assert isinstance(message, dict), "message is not a dict"
        self.require_valid_group_name(group)
        waiters = []
        with self._lock:
            cutoff = time.monotonic() - self.group_expiry
            members = [c for c, added in self._groups.get(group, {}).items() if added >= cutoff]
            for channel in members:
                with contextlib.suppress(ChannelFull):  # a slow consumer must not block others
                    waiters.append(self._append(channel, message))
        for waiter in waiters:
            _wake_on_its_loop(waiter)

    async def flush(self) -> None:
        with self._lock:
            self._channels.clear()
            self._groups.clear()

    async def close(self) -> None:
        pass

    def _expire(self, chan: _Channel) -> None:
        now = time.monotonic()
        while chan.messages and chan.messages[0][0] < now:
            chan.messages.popleft()


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def _wake_on_its_loop(
    waiter: tuple[asyncio.AbstractEventLoop, asyncio.Future[None]] | None,
) -> None:
    if waiter is None:
        return
    loop, fut = waiter
    if asyncio.events._get_running_loop() is loop:
        _wake(fut)  # on the receiver's own loop: no self-pipe write
        return
    with contextlib.suppress(RuntimeError):  # its loop is closed: nobody left to wake
        loop.call_soon_threadsafe(_wake, fut)
