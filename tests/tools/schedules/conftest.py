"""A Celery beat that ticks every half second, in the current mode: a thread of this process
(embedded, as ``manage.py serve`` starts it) or a real ``celery beat`` process (distributed)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from tests.conftest import ROOT, child_env, stop_process

TICK = 0.5


@pytest.fixture
def fast_beat(worker: str) -> Iterator[None]:
    from controlcenter.celery import app

    saved = app.conf.beat_schedule
    entry = dict(saved["schedules-tick"])
    app.conf.beat_schedule = {"schedules-tick": {**entry, "schedule": TICK}}
    proc: subprocess.Popen[bytes] | None = None
    try:
        if settings.MODE == "embedded":
            from controlcenter.embedded import start_embedded_beat

            start_embedded_beat()
        else:
            proc = start_beat_process()
        yield
    finally:
        if proc is not None:
            stop_process(proc)
        else:
            from controlcenter.embedded import stop_embedded_beat

            stop_embedded_beat()
        app.conf.beat_schedule = saved


def start_beat_process(**env: Any) -> subprocess.Popen[bytes]:
    log = open(Path(settings.VAR_DIR) / "test-beat.log", "ab")  # noqa: SIM115
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "controlcenter", "beat", "-l", "INFO"],
        cwd=ROOT,
        env=child_env(SCHEDULES_TICK_SECONDS=str(TICK), **env),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
