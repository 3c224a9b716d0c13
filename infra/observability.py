"""Start a process's metrics port and tracing, by the kind of process it is.

``manage.py serve`` (web: its metrics are on ``/metrics``), ``manage.py agent_runner``
(runner), a Celery worker (worker) and Celery beat (beat) each call ``observability_start``
once; the Celery ones through the signals connected here (``infra.celery_app`` imports this).
"""

from __future__ import annotations

import logging

from celery.signals import beat_init, before_task_publish, worker_init, worker_process_shutdown
from django.conf import settings

from infra import metrics, tracing
from infra.logs import log_process_kind_set

logger = logging.getLogger(__name__)

SCHEDULES_TICK_TASK = "platform_app.tasks.schedules_tick"
QUEUES = ("agent", "tools", "browser")
_REDIS_PRIORITY_KEYS = ("", "\x06\x163", "\x06\x166", "\x06\x169")  # kombu's priority lists


def queue_depths() -> dict[str, int]:
    """Messages waiting on each queue: Redis lists in distributed mode, kombu's in-memory
    queues in embedded mode."""
    if settings.MODE == "distributed":
        import redis

        client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2)
        try:
            pipe = client.pipeline(transaction=False)
            for queue in QUEUES:
                for suffix in _REDIS_PRIORITY_KEYS:
                    pipe.llen(queue + suffix)
            lengths = pipe.execute()
        finally:
            client.close()
        step = len(_REDIS_PRIORITY_KEYS)
        return {q: sum(lengths[i * step : (i + 1) * step]) for i, q in enumerate(QUEUES)}
    from kombu.transport import memory

    queues = memory.Channel.queues
    return {q: queues[q].qsize() if q in queues else 0 for q in QUEUES}


def _read_queue_depths() -> list[metrics.Metric]:
    family = metrics.GaugeMetricFamily(
        "cc_queue_depth", "Messages waiting on a queue", labels=["queue"]
    )
    for queue, depth in queue_depths().items():
        family.add_metric([queue], depth)
    return [family]


metrics.metrics_reader("queue depth", _read_queue_depths, scope="deployment")


def observability_start(kind: str, *, port: int | None = None) -> int | None:
    """Tracing (if configured) and, for a process other than the web's, the metrics port (if
    ``METRICS_PORT`` is set); returns the port served, if any."""
    metrics.process_kind_set(kind)
    log_process_kind_set(kind)
    tracing.tracing_start(kind)
    port = settings.METRICS_PORT if port is None else port
    if kind == "web" or not port:
        return None
    try:
        return metrics.metrics_serve(
            kind=kind,
            port=port,
            host=settings.METRICS_HOST,
            networks=settings.METRICS_ALLOWED_IPS,
            token=settings.METRICS_TOKEN,
        )
    except OSError as exc:  # the port is taken: the process still runs, without its port
        logger.error("metrics: cannot listen on %s:%s (%s)", settings.METRICS_HOST, port, exc)
        return None


@worker_init.connect(weak=False, dispatch_uid="cc-observability-worker")
def _worker_started(**_: object) -> None:
    observability_start("worker")


@beat_init.connect(weak=False, dispatch_uid="cc-observability-beat")
def _beat_started(**_: object) -> None:
    observability_start("beat")


@worker_process_shutdown.connect(weak=False, dispatch_uid="cc-observability-child-exit")
def _child_stopping(**_: object) -> None:
    # A prefork child leaves with os._exit: what its span processor holds goes now, and its
    # live gauges with it.
    tracing.tracing_flush(2000)
    metrics.process_gone()


@before_task_publish.connect(weak=False, dispatch_uid="cc-observability-ticks")
def _task_sent(sender: str | None = None, **_: object) -> None:
    if sender == SCHEDULES_TICK_TASK:
        metrics.BEAT_TICKS.inc()
