"""Embedding the memory that has no vectors yet, in the background.

Hybrid search is on by default (the local embedder), so memory saved before that — or while
the model could not load, or under another embedder — has no vector of the configured
embedder and is found by full text only. Every process's maintenance thread looks once a
minute (``backfill_kick``: one indexed query) and, when there is such memory, queues
``memory_backfill`` on the tools queue; a worker embeds a batch there and queues the next
until none is left (``backfill_batch``). ``manage.py memory_reindex`` does the same at once.
"""

from __future__ import annotations

import logging
import threading
import time

from platform_app.memory.embedders import embedder_for
from platform_app.memory.services import memory_backfill
from platform_app.models import MemoryChunk
from tools_app import selectors
from tools_app.errors import ToolError

logger = logging.getLogger(__name__)

TASK = "platform_app.tasks.memory_backfill"
CHECK_EVERY = 60.0  # seconds between two looks of one process
BATCH = 64

_lock = threading.Lock()
_last_check = 0.0
_last_error = ""


def _send() -> None:
    from infra.celery_app import app as celery_app

    celery_app.send_task(TASK, queue="tools")


def backfill_kick(*, now: float | None = None) -> bool:
    """Queue a backfill when some memory lacks vectors of the configured embedder; at most
    one look a minute per process. True when one was queued."""
    global _last_check
    now = time.monotonic() if now is None else now
    with _lock:
        if _last_check and now - _last_check < CHECK_EVERY:
            return False
        _last_check = now
    if not selectors.group_enabled("memory"):
        return False
    try:
        embedder = embedder_for(selectors.group_settings("memory"))
    except ToolError:
        return False  # a provider that is not there: memory_save says so when it is used
    if embedder is None or not MemoryChunk.objects.exclude(embedder=embedder.id).exists():
        return False
    _send()
    return True


def backfill_batch() -> int:
    """One batch (the task's body); queues the next when this one was full."""
    global _last_error
    try:
        done = memory_backfill(settings=selectors.group_settings("memory"), batch=BATCH)
    except ToolError as exc:
        if exc.message != _last_error:  # once per reason, not once a minute
            logger.warning("memory backfill: cannot embed (%s); full-text search only", exc)
            _last_error = exc.message
        return 0
    _last_error = ""
    if done:
        logger.info("memory backfill: embedded %d chunk(s)", done)
    if done >= BATCH:
        _send()
    return done
