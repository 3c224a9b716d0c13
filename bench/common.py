"""Shared bench plumbing: an isolated Django setup per mode, stats, helper processes."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
DATABASE_URL = os.environ.get(
    "BENCH_DATABASE_URL", "postgres://postgres:postgres@127.0.0.1:5432/controlcenter_bench"
)


BENCH_SECRET_KEY = os.environ.get("BENCH_SECRET_KEY", "bench-only-" + "k3y" * 16)

# The pool of the distributed worker: "threads" (what the docs recommend for tool workers,
# whose calls mostly wait on sandboxes and the network) or "prefork" (Celery's default).
WORKER_POOL = os.environ.get("BENCH_WORKER_POOL", "threads")


def mode_env(mode: str) -> dict[str, str]:
    env = {"CC_VAR_DIR": str(ROOT / "var" / f"bench-{mode}"), "PYTHONUNBUFFERED": "1"}
    if mode == "distributed":
        # Every process of a distributed deployment is given the same key (none is generated);
        # the bench's database is thrown away after each run, so a fixed one does.
        env.update(REDIS_URL=REDIS_URL, DATABASE_URL=DATABASE_URL, SECRET_KEY=BENCH_SECRET_KEY)
    return env


def setup_django(mode: str) -> None:
    """Configure this process for ``mode`` and migrate its bench database."""
    for key in ("REDIS_URL", "DATABASE_URL"):
        os.environ.pop(key, None)
    os.environ.update(mode_env(mode))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlcenter.settings")
    sys.path.insert(0, str(ROOT))
    # Bench databases are disposable: start from a fresh schema every run.
    if mode == "distributed":
        _fresh_postgres_db()
    else:
        for suffix in ("", "-wal", "-shm"):
            (Path(env_var_dir(mode)) / f"db.sqlite3{suffix}").unlink(missing_ok=True)
        import redis

        redis.Redis.from_url(REDIS_URL).flushdb()
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)


def env_var_dir(mode: str) -> str:
    return mode_env(mode)["CC_VAR_DIR"]


def _fresh_postgres_db() -> None:
    import psycopg

    base, _, name = DATABASE_URL.rpartition("/")
    with psycopg.connect(base + "/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def child_env(mode: str) -> dict[str, str]:
    env = os.environ.copy()
    for key in ("REDIS_URL", "DATABASE_URL"):
        env.pop(key, None)
    env.update(mode_env(mode))
    return env


def start_worker(mode: str, queues: str = "tools,browser") -> subprocess.Popen[bytes]:
    from infra.celery_app import app

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "controlcenter",
            "worker",
            "-Q",
            queues,
            "-P",
            WORKER_POOL,
            "-c",
            "4",
            "-l",
            "WARNING",
            "--without-mingle",
            "--without-gossip",
        ],
        cwd=ROOT,
        env=child_env(mode),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait(lambda: app.control.ping(timeout=0.3), 60, "celery worker")
    return proc


def start_server(mode: str, port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(port)],
        cwd=ROOT,
        env=child_env(mode),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def healthy() -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as r:
                return r.status == 200
        except OSError:
            return False

    wait(healthy, 60, "app server")
    return proc


def free_port() -> int:
    """A free loopback port (the benches import nothing from the tests: their conftest
    needs Django's settings at import)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop(proc: subprocess.Popen[Any]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def wait(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise TimeoutError(f"{what} not ready after {timeout} s")


def stats_ms(samples: list[float]) -> dict[str, float]:
    """Median and p95 in milliseconds of samples given in seconds."""
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return {
        "n": len(ordered),
        "median_ms": round(statistics.median(ordered) * 1000, 3),
        "p95_ms": round(p95 * 1000, 3),
    }


def emit(result: dict[str, Any]) -> None:
    """The last stdout line of a bench module is its JSON result."""
    print(json.dumps(result))


def run_each_mode(module: str) -> dict[str, Any]:
    """``python -m bench.<module> <mode>`` for each mode in a process of its own (a process
    holds one Django configuration): mode → its result, or ``{"error": ...}``."""
    out: dict[str, Any] = {}
    for mode in ("embedded", "distributed"):
        proc = subprocess.run(
            [sys.executable, "-m", f"bench.{module}", mode],
            capture_output=True,
            text=True,
            check=False,
            cwd=ROOT,
        )
        sys.stderr.write(proc.stderr[-3000:])
        if proc.returncode != 0:
            out[mode] = {"error": f"exit code {proc.returncode}"}
            continue
        out[mode] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out
