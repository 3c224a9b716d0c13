"""A Celery beat that ticks every half second, in the current mode: a thread of this process
(embedded, as ``manage.py serve`` starts it) or a real ``celery beat`` process (distributed)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest
from django.conf import settings

from tests.conftest import start_beat_process, stop_process

TICK = 0.5


@pytest.fixture
def fast_beat(worker: str) -> Iterator[None]:
    from infra.celery_app import app

    saved = app.conf.beat_schedule
    entry = dict(saved["schedules-tick"])
    app.conf.beat_schedule = {"schedules-tick": {**entry, "schedule": TICK}}
    proc: subprocess.Popen[bytes] | None = None
    try:
        if settings.MODE == "embedded":
            from chat_app.embedded import start_embedded_beat

            start_embedded_beat()
        else:
            proc = start_beat_process(tick=TICK)
        yield
    finally:
        if proc is not None:
            stop_process(proc)
        else:
            from chat_app.embedded import stop_embedded_beat

            stop_embedded_beat()
        app.conf.beat_schedule = saved
