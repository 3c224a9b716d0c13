"""Celery tasks of the platform tools (found by ``app.autodiscover_tasks``)."""

from __future__ import annotations

from typing import Any

from celery import shared_task


@shared_task(name="platform_app.tasks.schedules_tick", ignore_result=True)
def schedules_tick() -> None:
    """Sent by Celery beat every SCHEDULES_TICK_SECONDS: fire the schedules that are due."""
    from platform_app.schedules import beat_ticked, schedules_fire_due

    schedules_fire_due()
    beat_ticked()


@shared_task(
    bind=True, name="platform_app.tasks.webhook_deliver", ignore_result=True, max_retries=None
)
def webhook_deliver(self: Any, delivery_id: int) -> None:
    """One attempt of a webhook delivery; the task schedules its own next attempt (the
    service says when, from the attempts logged so far, and when to stop)."""
    from platform_app.webhooks.services import delivery_attempt

    wait = delivery_attempt(delivery_id)
    if wait is not None:
        raise self.retry(countdown=wait)


@shared_task(name="platform_app.tasks.memory_backfill", ignore_result=True)
def memory_backfill() -> None:
    """Embed memory the configured embedder has no vectors for, a batch at a time, queueing
    itself again while some is left (``memory_backfill_kick`` starts it)."""
    from platform_app.memory.backfill import backfill_batch

    backfill_batch()


@shared_task(name="platform_app.tasks.audit_export_tick", ignore_result=True)
def audit_export_tick() -> None:
    """Sent by Celery beat every AUDIT_EXPORT_SECONDS: deliver the sealed audit records to
    every exporter that is due (``platform_app.audit_export.services``)."""
    from platform_app.audit_export.services import exporters_tick

    exporters_tick()


@shared_task(name="platform_app.tasks.api_request_keys_sweep", ignore_result=True)
def api_request_keys_sweep() -> None:
    """Sent by Celery beat hourly: forget the /v1 retry keys that expired."""
    from platform_app.api.v1.retries import request_keys_sweep

    request_keys_sweep()
