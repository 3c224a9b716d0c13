"""Which agent runners are alive: each reports itself every ``BEAT_SECONDS`` in the database,
so every process (the web process, the reaper, ``/healthz``, a container health check) sees
the same answer in both modes."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from chat_app.models import RunnerBeat

BEAT_SECONDS = 2.0


def runner_beat(*, name: str, in_flight: int, capacity: int) -> None:
    RunnerBeat.objects.update_or_create(
        name=name,
        defaults={"beat_at": timezone.now(), "in_flight": in_flight, "capacity": capacity},
    )


def runner_gone(*, name: str) -> None:
    """A runner that stops on purpose says so at once."""
    RunnerBeat.objects.filter(name=name).delete()


def runners_alive() -> list[RunnerBeat]:
    limit = timezone.now() - timedelta(seconds=settings.AGENT_HEARTBEAT_TIMEOUT)
    return list(RunnerBeat.objects.filter(beat_at__gte=limit))


def runners_forget_dead() -> int:
    """Rows of runners dead for a long time (kept a while for the record)."""
    limit = timezone.now() - timedelta(hours=1)
    deleted, _ = RunnerBeat.objects.filter(beat_at__lt=limit).delete()
    return deleted
