"""``manage.py health --kind runner|worker|browser-worker|beat``: exit 0 or 1 and one line of
JSON, for container health checks. A process of that kind on this host must have reported
itself lately (from its own thread: one that cannot reach the database goes stale), and the
database and the broker must answer."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

import pytest
from django.conf import settings

from tests.conftest import (
    ROOT,
    child_env,
    shared_processes_paused,
    start_beat_process,
    stop_process,
)
from tests.helpers import wait_for


def health(kind: str, *flags: str, **env: str) -> tuple[int, dict[str, Any]]:
    proc = subprocess.run(
        [sys.executable, "manage.py", "health", "--kind", kind, *flags],
        cwd=ROOT,
        env=child_env(**env),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1, (proc.stdout, proc.stderr)
    return proc.returncode, json.loads(lines[0])


@pytest.mark.distributed_only
def test_it_reports_the_worker_runner_and_browser_worker_healthy(worker):
    for kind in ("worker", "browser-worker", "runner"):
        # The session's shared worker may be a heartbeat away from a fault an earlier test
        # played (a database failover, a paused process): healthy within a few beats.
        deadline = time.monotonic() + 30
        code, report = health(kind)
        while code != 0 and time.monotonic() < deadline:
            time.sleep(1)
            code, report = health(kind)
        assert code == 0, report
        assert report["ok"] is True and report["kind"] == kind
        assert report["heartbeat"]["processes"]
        for check in ("database", "migrations", "broker", "keys", "shared_dirs"):
            assert report[check]["ok"] is True, check


@pytest.mark.distributed_only
def test_it_reports_beat_unhealthy_until_one_runs(transactional_db):
    code, report = health("beat")
    assert code == 1
    assert any(reason.startswith("heartbeat: no beat on ") for reason in report["reasons"])
    beat = start_beat_process(log_name="test-health-beat.log", tick=5)
    try:
        wait_for(lambda: health("beat")[0] == 0, timeout=60, interval=1, message="beat healthy")
        code, report = health("beat")
        assert "shared_dirs" not in report  # beat reads no shared directory
    finally:
        stop_process(beat)


@pytest.mark.distributed_only
def test_it_reports_a_worker_whose_heartbeat_went_stale_unhealthy(worker, worker_process):
    with shared_processes_paused(only=worker_process[:1]):  # the celery worker
        time.sleep(3)
        code, report = health("worker", PROCESS_HEARTBEAT_TIMEOUT="2")
    assert code == 1
    assert any(reason.startswith("heartbeat: no worker on ") for reason in report["reasons"])
    assert report["database"]["ok"] is True  # the probe reaches it; the worker did not report


@pytest.mark.distributed_only
def test_it_reports_unhealthy_when_the_broker_does_not_answer(worker):
    code, report = health("worker", REDIS_URL="redis://127.0.0.1:1/0")
    assert code == 1
    assert report["broker"]["ok"] is False
    assert any(reason.startswith("broker: ") for reason in report["reasons"])


def test_it_points_embedded_mode_to_the_web_readiness(transactional_db):
    if settings.MODE != "embedded":
        pytest.skip("embedded mode")
    code, report = health("worker")
    assert code == 1
    assert "/healthz/ready" in report["reasons"][0]


@pytest.mark.distributed_only
def test_liveness_holds_while_the_database_is_unreachable_and_readiness_does_not(worker):
    # The worker and the runner on this host touch their liveness files from their loops; the
    # probe reads nothing else, so an outage (here: a database the probe cannot reach) makes
    # them unready, never dead (Kubernetes would restart them all).
    broken = {"DATABASE_URL": "postgres://nobody@127.0.0.1:1/none"}
    for kind in ("worker", "browser-worker", "runner"):
        code, report = health(kind, "--live", **broken)
        assert code == 0 and report["live"] is True and report["pids"], report
        assert health(kind, **broken)[0] == 1


@pytest.mark.distributed_only
def test_liveness_fails_when_the_loop_stops_turning(worker, worker_process):
    with shared_processes_paused(only=worker_process[:1]):  # the celery worker, stopped
        time.sleep(6)
        code, report = health("worker", "--live", LIVENESS_SECONDS="5")
    assert code == 1 and report["live"] is False
    assert "no worker process here turned its loop in 5 s" in report["reasons"][0]


def test_liveness_files_name_live_processes_only(tmp_path, settings):
    import os

    from infra import liveness

    settings.LIVENESS_DIR = tmp_path / "alive"
    liveness.touch("worker:tools")
    assert liveness.fresh("worker:tools", 60) == [os.getpid()]
    assert liveness.fresh("worker:browser", 60) == []
    (tmp_path / "alive" / "worker:tools.999999999").touch()  # a dead pid
    assert liveness.fresh("worker:tools", 60) == [os.getpid()]
    old = time.time() - 120
    os.utime(liveness.alive_dir() / f"worker:tools.{os.getpid()}", (old, old))
    assert liveness.fresh("worker:tools", 60) == []
    liveness.remove("worker:tools")
    assert not (liveness.alive_dir() / f"worker:tools.{os.getpid()}").exists()
