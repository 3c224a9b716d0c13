"""The rounds streaming on one event loop, and the chores they share.

``RoundSupervisor`` keeps the live rounds of one loop (the agent runner's). Every
``POLL_SECONDS`` it does, for all of them at once and in one database call: read which turns
were stopped (Stop reaches a stream within ~0.3 s) and store the text streamed so far (every
``PERSIST_SECONDS``, so a reload mid-reply shows it). Polling per round would cost hundreds of
queries a second with hundreds of rounds; this costs two. (That the runner is alive is told
once for all its turns, by ``runner_beats``.)

``LiveRound`` batches a stream's text into ``token`` events: the first token of a batch
schedules one publish ``TOKEN_FLUSH_SECONDS`` later, so a waiting stream costs no wake-ups.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

from django.db import close_old_connections
from django.db.models import Case, F, TextField, Value, When

from chat_app.events import token_publish
from chat_app.models import Message, Turn
from chat_app.providers import ClientCache

logger = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

TOKEN_FLUSH_SECONDS = 0.03
POLL_SECONDS = 0.25
PERSIST_SECONDS = 0.5


class Stopped(Exception):
    """A stream ended on purpose: ``cancelled`` (Stop) or ``shutdown`` (the runner stopped)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class LiveRound:
    def __init__(self, *, turn_id: int, conversation_id: int, message_id: int) -> None:
        self.turn_id = turn_id
        self.conversation_id = conversation_id
        self.message_id = message_id
        self.text = ""
        self.sent = 0  # characters published as token events
        self.persisted = 0  # characters stored on the message
        self.stop_reason: str | None = None
        self.task: asyncio.Task[Any] | None = None
        self._flush: asyncio.Task[None] | None = None

    def start(self, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """Run the stream as its own task: Stop cancels it and nothing else."""
        task = asyncio.get_running_loop().create_task(coro)
        self.task = task
        return task

    def stop(self, reason: str) -> None:
        if self.stop_reason is None:
            self.stop_reason = reason
        if self.task is not None and not self.task.done():
            self.task.cancel()

    def add_text(self, text: str) -> None:
        self.text += text
        if self._flush is None:
            self._flush = asyncio.get_running_loop().create_task(self._flush_soon())

    async def _flush_soon(self) -> None:
        # Never cancelled: a group_send cut short loses its event.
        try:
            await asyncio.sleep(TOKEN_FLUSH_SECONDS)
            while self.sent < len(self.text):
                offset, chunk = self.sent, self.text[self.sent :]
                self.sent = len(self.text)
                await token_publish(
                    conversation_id=self.conversation_id,
                    message_id=self.message_id,
                    offset=offset,
                    text=chunk,
                )
        finally:
            self._flush = None

    async def drain(self) -> None:
        """Publish what is left before the message is closed."""
        while self._flush is not None:
            await asyncio.shield(self._flush)
        if self.sent < len(self.text):
            offset, chunk = self.sent, self.text[self.sent :]
            self.sent = len(self.text)
            await token_publish(
                conversation_id=self.conversation_id,
                message_id=self.message_id,
                offset=offset,
                text=chunk,
            )

    async def restart(self) -> None:
        """Forget the text so far: the reply starts over (a retry, the text fallback)."""
        while self._flush is not None:
            await asyncio.shield(self._flush)
        self.text, self.sent, self.persisted = "", 0, 0


def _in_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    try:
        return fn(*args, **kwargs)
    finally:
        # Give the connection back (to the pool, or closed if it broke or aged out).
        close_old_connections()


def sync_live_rounds(turn_ids: list[int], *, texts: dict[int, str]) -> list[int]:
    """One pass for all live rounds: store partial text, and tell which were stopped."""
    if texts:
        # Only while streaming: a message closed meanwhile keeps its final text.
        whens = [
            When(pk=pk, then=Value(text, output_field=TextField())) for pk, text in texts.items()
        ]
        Message.objects.filter(pk__in=list(texts), state=Message.State.STREAMING).update(
            content=Case(*whens, default=F("content"))
        )
    return list(
        Turn.objects.filter(pk__in=turn_ids)
        .filter(cancel_requested=True)
        .values_list("pk", flat=True)
    )


class RoundSupervisor:
    """The live rounds of one event loop; create it on that loop."""

    def __init__(self, *, name: str, executor: Executor | None = None) -> None:
        self.name = name
        self.executor = executor
        # The chores get a thread of their own: queued behind a backlog of round work, Stop
        # would wait behind it too.
        self._chores = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agent-chores")
        self.clients = ClientCache()
        self.rounds: dict[int, LiveRound] = {}
        self._task: asyncio.Task[None] | None = None
        self._last_persist = 0.0

    async def db(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run a short piece of database work on the thread pool, off the loop."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self.executor, functools.partial(_in_thread, fn, *args, **kwargs)
        )

    def track(self, *, turn_id: int, conversation_id: int, message_id: int) -> LiveRound:
        live = LiveRound(turn_id=turn_id, conversation_id=conversation_id, message_id=message_id)
        self.rounds[turn_id] = live
        self._ensure_watch()
        return live

    def _ensure_watch(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._watch())

    def untrack(self, live: LiveRound) -> None:
        if self.rounds.get(live.turn_id) is live:
            del self.rounds[live.turn_id]

    def stop_all(self, reason: str) -> None:
        for live in list(self.rounds.values()):
            live.stop(reason)

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.clients.aclose()
        self._chores.shutdown(wait=False)

    async def _watch(self) -> None:
        while self.rounds:
            await asyncio.sleep(POLL_SECONDS)
            try:
                await self.poll()
            except Exception:  # a database hiccup must not end the watch for every round
                logger.warning("live-round poll failed", exc_info=True)

    async def poll(self) -> None:
        if not self.rounds:
            return
        now = time.monotonic()
        texts: dict[int, str] = {}
        if now - self._last_persist >= PERSIST_SECONDS:
            self._last_persist = now
            texts = {
                live.message_id: live.text
                for live in self.rounds.values()
                if len(live.text) > live.persisted
            }
        snapshot = {pk: len(text) for pk, text in texts.items()}
        chore = functools.partial(
            _in_thread,
            sync_live_rounds,
            list(self.rounds),
            texts=texts,
        )
        stopped = await asyncio.get_running_loop().run_in_executor(self._chores, chore)
        for live in self.rounds.values():
            if live.message_id in snapshot:
                live.persisted = max(live.persisted, snapshot[live.message_id])
        for turn_id in stopped:
            stopping = self.rounds.get(turn_id)
            if stopping is not None:
                stopping.stop("cancelled")
