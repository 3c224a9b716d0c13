"""The watch over running calls: Stop, timeouts, live output and heartbeats.

One thread per worker process watches every call that process runs (a thread per call cost a
thread start per call and, for any call longer than one poll, a database connection of its
own). Every ``POLL_SECONDS`` it:

- flushes each call's new output to its card (``output`` events with offsets) and keeps it;
- enforces each call's deadline (its group's timeout plus a short grace: activities enforce
  their own timeout first) by setting the call's cancel event;
- reads the ``cancel_requested`` flags of all the calls in one query, so Stop works the same on
  every queue and in every mode, and sets their cancel events, which sandboxes turn into
  killing the process tree;
- writes each call's heartbeat (with its output so far) every ``HEARTBEAT_SECONDS``, so the
  calls of a worker that died are failed by ``toolcall_reap_lost``.

A call's "running" card is sent by the watcher thread once the call has run
``ANNOUNCE_SECONDS``: a quicker call goes from its queued card straight to its finished one.
Nobody can see a state that lasts a few milliseconds, and the card it would cost (rendered and
sent while the command runs, in the process that runs it) cost such a call about a tenth of its
time. Events of one call leave in order: the running card, its output, then (once
``Watch.close`` has returned) whatever the caller publishes, e.g. the finished card.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time

from django.db import close_old_connections, connection
from django.utils import timezone

from tools_app.events import toolcall_publish, toolcall_publish_output
from tools_app.models import ToolCall
from tools_app.runtime import ActivityContext

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.1
ANNOUNCE_SECONDS = 0.05  # a call shows "running" once it has run this long
HEARTBEAT_SECONDS = 2.0
CARD_OUTPUT_LIMIT = 64_000  # characters of live output kept on the card
TIMEOUT_GRACE_SECONDS = 2.0  # activities enforce their own timeout; this is the backstop


class Watch:
    """One running call under watch. ``reason`` says why its cancel event was set, if the
    watch set it: "timeout" or "cancelled"."""

    def __init__(self, call: ToolCall, ctx: ActivityContext, timeout: float) -> None:
        self.call = call
        self.ctx = ctx
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout + TIMEOUT_GRACE_SECONDS
        self.reason: str | None = None
        self._pending: list[str] = []
        self._output = ""
        self._pending_lock = threading.Lock()
        # Held while anything is published or written for this call; ``close`` takes it, so
        # nothing is in flight for the call once it returns.
        self._io = threading.Lock()
        self._closed = False
        self._announced = False  # the running card has been sent
        self.announce_at = time.monotonic() + ANNOUNCE_SECONDS
        self._last_beat = time.monotonic()

    def emit(self, stream: str, text: str) -> None:
        with self._pending_lock:
            self._pending.append(text)

    def close(self) -> str:
        """Stop watching; return the output collected. After this nothing more is published
        or written for the call by the watch."""
        _supervisor.remove(self)
        with self._io:
            self._closed = True
            self._flush(publish=False)  # the final card carries the whole output anyway
        return self._output

    # -- called by the watcher thread (and by close), with ``_io`` held --------------------

    def _announce(self) -> None:
        if not self._announced:
            self._announced = True
            toolcall_publish(self.call, wait=False)

    def _flush(self, *, publish: bool = True) -> None:
        """Output goes out after the running card; until then it waits (or, if the call ends
        first, the finished card carries it)."""
        with self._pending_lock:
            text = "".join(self._pending)
            self._pending.clear()
        if not text:
            return
        room = CARD_OUTPUT_LIMIT - len(self._output)
        if room <= 0:
            return
        text = text[:room]
        offset = len(self._output)
        self._output += text
        if publish:
            toolcall_publish_output(self.call, offset=offset, text=text)

    def _tick(self, now: float) -> None:
        with self._io:
            if self._closed:
                return
            if now >= self.announce_at:
                self._announce()
            if self._announced:
                self._flush()
            if now >= self.deadline and not self.ctx.cancel.is_set():
                self.reason = "timeout"
                self.ctx.cancel.set()

    def _cancel_requested(self) -> None:
        if not self.ctx.cancel.is_set():
            self.reason = "cancelled"
            self.ctx.cancel.set()

    def _heartbeat(self, now: float) -> None:
        with self._io:
            if self._closed or now - self._last_beat < HEARTBEAT_SECONDS:
                return
            self._last_beat = now
            ToolCall.objects.filter(pk=self.call.pk, status=ToolCall.Status.RUNNING).update(
                heartbeat_at=timezone.now(), output=self._output
            )


class _Supervisor:
    """The watcher thread of this process and the calls it watches."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        # Also after a fork: a child (Celery's prefork pool) has no watcher thread yet.
        self._lock = threading.Lock()
        self._watches: dict[int, Watch] = {}
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._next_poll = 0.0
        self._wait_until = 0.0  # when the watcher thread wakes next (inf: when woken)

    def add(self, watch: Watch) -> None:
        with self._lock:
            if not self._watches:
                # The first look at the database one poll after the call starts: calls that
                # are over by then cost the watch no query at all.
                self._next_poll = time.monotonic() + POLL_SECONDS
            self._watches[id(watch)] = watch
            if watch.announce_at < self._wait_until:
                self._wake.set()  # to wait for this call's running card instead
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="toolcall-watchdog", daemon=True
                )
                self._thread.start()

    def remove(self, watch: Watch) -> None:
        with self._lock:
            self._watches.pop(id(watch), None)
            last = not self._watches
        if last:
            self._wake.set()  # to go idle now

    def _run(self) -> None:
        while True:
            with self._lock:
                idle = not self._watches
                due = [w.announce_at for w in self._watches.values() if not w._announced]
                self._wait_until = math.inf if idle else min([self._next_poll, *due])
                timeout = None if idle else max(0.0, self._wait_until - time.monotonic())
            if idle:
                # Asleep while nothing runs: an idle worker costs no wake-ups and holds no
                # database connection for this thread (it opens one again when a call runs
                # longer than a poll).
                connection.close()
            self._wake.wait(timeout)
            self._wake.clear()
            try:
                self._round()
            except Exception:
                logger.exception("the tool-call watchdog failed; it goes on")
                close_old_connections()  # a broken connection is replaced on the next round

    def _round(self) -> None:
        with self._lock:
            watches = list(self._watches.values())
        if not watches:
            return
        now = time.monotonic()
        for watch in watches:
            watch._tick(now)
        if now < self._next_poll - POLL_SECONDS / 10:
            return  # woken early (for a running card): the poll is still to come
        self._next_poll = now + POLL_SECONDS
        waiting = {w.call.pk: w for w in watches if not w.ctx.cancel.is_set()}
        if waiting:
            flagged = ToolCall.objects.filter(pk__in=list(waiting), cancel_requested=True)
            for pk in flagged.values_list("pk", flat=True):
                waiting[pk]._cancel_requested()
        for watch in watches:
            watch._heartbeat(now)


_supervisor = _Supervisor()
os.register_at_fork(after_in_child=_supervisor.reset)


def watch_call(call: ToolCall, ctx: ActivityContext, timeout: float) -> Watch:
    """Start watching the call (the watcher thread sends its running card once it has run
    ``ANNOUNCE_SECONDS``); ``Watch.close`` when it has finished."""
    watch = Watch(call, ctx, timeout)
    _supervisor.add(watch)
    return watch
