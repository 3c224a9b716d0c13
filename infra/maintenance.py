"""Background housekeeping that every process runs (web, agent runner, workers): end or
re-queue work whose runner or worker died or whose message was lost, and remove idle
sandboxes. Idempotent and safe to run in several processes at once (conditional updates), so
there is no single scheduler to keep alive — and the web process notices lost work even when
no worker is left."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.db import close_old_connections

logger = logging.getLogger(__name__)

_started = threading.Event()


@dataclass(frozen=True)
class Step:
    name: str
    run: Callable[[], None]
    order: int


_steps: dict[str, Step] = {}


def maintenance_step(name: str, run: Callable[[], None], *, order: int) -> None:
    """Register one housekeeping step (an app calls this from its ``ready()``). Steps run in
    ``order``: lost tool calls (10) before turns (20), whose calls they may finish, before
    idle sandboxes (30). Registering a name again replaces it."""
    _steps[name] = Step(name, run, order)


def maintenance_steps() -> list[Step]:
    return sorted(_steps.values(), key=lambda step: (step.order, step.name))


def run_maintenance_once() -> None:
    for step in maintenance_steps():
        try:
            step.run()
        except Exception:
            logger.exception("maintenance step %s failed", step.name)
        close_connections_quietly("maintenance")


def close_connections_quietly(who: str) -> None:
    """``close_old_connections`` for a long-lived thread, which must outlive a database that
    is away (a raise here would end the thread for good)."""
    try:
        close_old_connections()
    except Exception as exc:
        logger.warning("%s: could not close a database connection (%s)", who, exc)


def start_maintenance_thread() -> None:
    if _started.is_set():
        return
    _started.set()

    def loop() -> None:
        stop = threading.Event()
        while not stop.wait(settings.MAINTENANCE_INTERVAL):
            run_maintenance_once()

    threading.Thread(target=loop, name="cc-maintenance", daemon=True).start()
