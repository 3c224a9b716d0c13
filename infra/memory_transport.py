"""kombu's in-memory transport, woken by messages instead of polling.

Embedded mode runs Celery on ``memory://`` inside the web process. kombu's transport sleeps
``polling_interval`` between empty polls: the default 1 s adds a second to every tool call,
and 1 ms keeps an idle process busy. Here a put notifies a condition the worker waits on, so a
task is picked up at once and an idle worker sleeps.

Fenced: it replaces kombu's ``drain_events`` loop, so kombu is pinned exactly (``kombu==5.7.0``
in pyproject.toml) and tests/unit/test_upstream_contracts.py fails when the loop it replaces or
the methods it extends change. Measured gain: a Celery round trip of ``current_time`` in
embedded mode takes 1.5 ms (median, ``bench roundtrip``, bench/results/latest.json), where
kombu's own polling adds up to its interval, a second, to every call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from queue import Empty
from time import monotonic
from typing import Any

from kombu.transport import memory

_changed = threading.Condition()
_generation = 0
IDLE_WAIT = 1.0  # longest wait without a notification (a safety net, not the latency)


def _notify() -> None:
    global _generation
    with _changed:
        _generation += 1
        _changed.notify_all()


def _moved_on(seen: int) -> Callable[[], bool]:
    return lambda: _generation != seen


class Channel(memory.Channel):
    def _put(self, queue: str, message: Any, **kwargs: Any) -> None:
        super()._put(queue, message, **kwargs)
        _notify()

    def _put_fanout(
        self, exchange: Any, message: Any, routing_key: Any = None, **kwargs: Any
    ) -> None:
        super()._put_fanout(exchange, message, routing_key, **kwargs)
        _notify()


class Transport(memory.Transport):
    Channel = Channel

    def drain_events(  # type: ignore[override]  # kombu's base classes disagree on it
        self, connection: Any, timeout: float | None = None
    ) -> None:
        started = monotonic()
        while True:
            with _changed:
                seen = _generation
            assert self.cycle is not None
            try:
                self.cycle.get(self._deliver, timeout=timeout)
                return
            except Empty:
                pass
            waited = monotonic() - started
            if timeout is not None and waited >= timeout:
                raise TimeoutError()
            budget = IDLE_WAIT if timeout is None else min(IDLE_WAIT, timeout - waited)
            with _changed:
                _changed.wait_for(_moved_on(seen), timeout=budget)
