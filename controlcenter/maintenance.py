"""Background housekeeping that every worker process runs: reap tool calls whose worker died,
and idle sandboxes. Idempotent and safe to run in several processes at once (conditional
updates), so there is no single scheduler to keep alive."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from django.db import close_old_connections

logger = logging.getLogger(__name__)

INTERVAL_SECONDS = 10.0
_started = threading.Event()


def run_maintenance_once() -> None:
    from tools_app.services.execution import toolcall_reap_lost

    try:
        reaped = toolcall_reap_lost()
        if reaped:
            logger.warning("marked %d tool call(s) with a lost worker as failed", reaped)
        for hook in HOOKS:
            hook()
    except Exception:
        logger.exception("maintenance pass failed")
    finally:
        close_old_connections()


# Further housekeeping, run after the reaper (sandbox reaping is appended below).
HOOKS: list[Callable[[], None]] = []


def start_maintenance_thread() -> None:
    if _started.is_set():
        return
    _started.set()

    def loop() -> None:
        stop = threading.Event()
        while not stop.wait(INTERVAL_SECONDS):
            run_maintenance_once()

    threading.Thread(target=loop, name="cc-maintenance", daemon=True).start()


def _reap_idle_sandboxes() -> None:
    from tools_app.sandbox import reap_idle_sandboxes

    reaped = reap_idle_sandboxes()
    if reaped:
        logger.info("removed %d idle sandbox container(s)", reaped)


HOOKS.append(_reap_idle_sandboxes)
