"""Migrations run once, as a job, not on every web start (where replicas race): the image's
default command migrates only in embedded mode; in distributed mode it only serves (and the
web process's readiness checks that none is left: tests/observability/test_readiness.py)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def image_start(**env: str) -> list[str]:
    """The Dockerfile's CMD, run with ``python`` standing for an echo of what it would run."""
    line = next(
        line for line in (ROOT / "Dockerfile").read_text().splitlines() if line.startswith("CMD")
    )
    argv = json.loads(line.removeprefix("CMD"))
    script = argv[-1].replace("exec python", "echo").replace("python", "echo")
    environment = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    proc = subprocess.run(
        [*argv[:-1], script], env={**environment, **env}, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_it_migrates_on_start_in_embedded_mode():
    assert image_start() == [
        "manage.py migrate --noinput",
        "manage.py ensure_admin",
        "manage.py serve",
    ]


def test_it_only_serves_in_distributed_mode():
    assert image_start(REDIS_URL="redis://redis:6379/0") == ["manage.py serve"]
