"""The Celery app every process uses; ``infra.celery_app`` names it for the ``celery -A
controlcenter`` command line."""

from __future__ import annotations

from celery import Celery

app = Celery("controlcenter")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Each Celery process starts its metrics port and tracing when it starts (worker_init, beat_init).
import infra.observability  # noqa: E402, F401
