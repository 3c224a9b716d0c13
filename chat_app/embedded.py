"""What runs tasks inside the web process in embedded mode: a Celery worker for the tool
queues and the agent runner for model rounds.

Embedded mode has no broker process: Celery uses kombu's ``memory://`` transport, which only
works inside one process, so the worker consumes from threads of the web server's process and
the agent runner's loop runs in a thread beside it. Distributed mode never calls this; it runs
``celery -A controlcenter worker`` and ``manage.py agent_runner`` instead.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import TYPE_CHECKING, Any

from django.conf import settings

if TYPE_CHECKING:
    from chat_app.runner import AgentRunner

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_worker_thread: threading.Thread | None = None
_worker: object | None = None
_runner: AgentRunner | None = None
_beat: Any = None

QUEUES = ("tools", "browser")  # the agent queue is the runner's


def embedded_worker_alive() -> bool:
    return _worker_thread is not None and _worker_thread.is_alive()


def embedded_runner() -> AgentRunner | None:
    return _runner


def start_embedded_worker(*, concurrency: int | None = None) -> None:
    """Start the in-process worker and agent runner once; later calls are no-ops."""
    global _worker_thread, _worker, _runner
    if settings.MODE != "embedded":
        raise RuntimeError("the in-process worker only runs in embedded mode")
    with _lock:
        if _runner is None or not _runner.alive:
            from chat_app.runner import AgentRunner
            from chat_app.services.turns import round_handoff_set

            # One name per process: two processes on one database (a test run beside `serve`)
            # must not report, or forget, each other's runner.
            _runner = AgentRunner(name=f"embedded@{_hostname()}:{os.getpid()}")
            _runner.start()
            round_handoff_set(_runner.try_submit)
        if embedded_worker_alive():
            return
        from infra.celery_app import app

        ready = threading.Event()

        class EmbeddedWorker(app.WorkController):  # type: ignore[name-defined,misc]
            def on_consumer_ready(self, consumer: object) -> None:
                ready.set()

        worker = EmbeddedWorker(
            pool_cls="threads",
            concurrency=concurrency or settings.EMBEDDED_WORKER_CONCURRENCY,
            queues=list(QUEUES),
            hostname=f"embedded@{_hostname()}",
            without_heartbeat=True,
            without_mingle=True,
            without_gossip=True,
            loglevel="WARNING",
        )
        _worker = worker

        def _run() -> None:
            try:
                worker.start()
            except Exception:  # pragma: no cover - logged for operators
                logger.exception("embedded Celery worker stopped")

        _worker_thread = threading.Thread(target=_run, name="embedded-celery", daemon=True)
        _worker_thread.start()
        if not ready.wait(timeout=30):
            raise RuntimeError("embedded Celery worker did not start within 30 s")
        time.sleep(0.01)


def start_embedded_beat() -> None:
    """Celery beat in a thread of this process: it sends ``schedules_tick`` every
    SCHEDULES_TICK_SECONDS to the in-process worker (distributed mode runs ``celery beat``).
    Safe beside other beats: firing a schedule is claimed in the database."""
    global _beat
    if settings.MODE != "embedded":
        raise RuntimeError("the in-process beat only runs in embedded mode")
    with _lock:
        if _beat is not None and _beat.is_alive():
            return
        from celery.beat import EmbeddedService

        from infra.celery_app import app

        _beat = EmbeddedService(
            app,
            thread=True,
            max_interval=settings.CELERY_BEAT_MAX_LOOP_INTERVAL,
            scheduler_cls=settings.CELERY_BEAT_SCHEDULER,  # Service's default keeps a file
        )
        _beat.name = "embedded-beat"
        _beat.start()


def stop_embedded_beat() -> None:
    global _beat
    with _lock:
        if _beat is not None:
            _beat.stop()
            _beat.join(timeout=10)
        _beat = None


def _hostname() -> str:
    import socket

    return socket.gethostname()
