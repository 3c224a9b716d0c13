"""Background housekeeping that every process runs (web, agent runner, workers): end or
re-queue work whose runner or worker died or whose message was lost, and remove idle
sandboxes. Idempotent and safe to run in several processes at once (conditional updates), so
there is no single scheduler to keep alive — and the web process notices lost work even when
no worker is left."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from django.conf import settings
from django.db import close_old_connections

logger = logging.getLogger(__name__)

_started = threading.Event()


def _reap_tool_calls() -> None:
    from tools_app.services.execution import toolcall_reap_lost, toolcall_redeliver_queued

    reaped = toolcall_reap_lost()
    if reaped:
        logger.warning("marked %d tool call(s) with a lost worker as failed", reaped)
    sent = toolcall_redeliver_queued()
    if sent:
        logger.warning("queued %d waiting tool call(s) again", sent)


def _reap_turns() -> None:
    from chat_app.services.reaper import turns_reap_lost

    turns_reap_lost()


def _reap_idle_sandboxes() -> None:
    from tools_app.sandbox import reap_idle_sandboxes

    reaped = reap_idle_sandboxes()
    if reaped:
        logger.info("removed %d idle sandbox container(s)", reaped)


# In order: lost tool calls first (their turns may then move on), then turns, then sandboxes.
HOOKS: list[Callable[[], None]] = [_reap_tool_calls, _reap_turns, _reap_idle_sandboxes]


def run_maintenance_once() -> None:
    for hook in HOOKS:
        try:
            hook()
        except Exception:
            logger.exception("maintenance step %s failed", hook.__name__)
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
