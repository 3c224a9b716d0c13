"""The Celery app every process uses; ``infra.celery_app`` names it for the ``celery -A
controlcenter`` command line."""

from __future__ import annotations

from typing import Any

from celery import Celery
from celery.signals import task_postrun, task_prerun, worker_init
from django.conf import settings

from infra.gc_tuning import heap_settle
from infra.maintenance import close_connections_quietly

app = Celery("controlcenter")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@task_prerun.connect(weak=False, dispatch_uid="cc-db-before-task")
@task_postrun.connect(weak=False, dispatch_uid="cc-db-after-task")
def _close_broken_connections(sender: Any = None, **_: object) -> None:
    """Around every task, what Django does around every request: close this thread's
    connection if it broke or aged out (in a pool: give it back; the pool checks it before
    lending it again). Celery's fixup keeps a worker thread's connection for
    CELERY_DB_REUSE_MAX tasks, so after a database restart or failover each thread kept its
    dead one and failed every task it ran, until the worker was restarted by hand."""
    if getattr(getattr(sender, "request", None), "is_eager", False):
        return  # run in the caller's thread, perhaps inside the caller's transaction
    close_connections_quietly("celery task")


@worker_init.connect(weak=False, dispatch_uid="cc-gc-settle")
def _settle_heap(**_: object) -> None:
    """Before the pool forks: start-up's objects leave the collector's full walks, in the
    parent and so in every child (which then never writes to their pages to mark them)."""
    if settings.MODE == "embedded":
        return  # the worker runs inside ``serve``, which settles its own heap once started
    heap_settle()


# Each Celery process starts its metrics port and tracing when it starts (worker_init, beat_init).
import infra.observability  # noqa: E402, F401
