"""The Celery app every process uses; ``infra.celery_app`` names it for the ``celery -A
controlcenter`` command line."""

from __future__ import annotations

from celery import Celery

app = Celery("controlcenter")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
