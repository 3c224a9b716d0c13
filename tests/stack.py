"""A private distributed deployment for fault tests, and a websocket client that acts like the
chat page.

``Stack`` starts its own Redis server (on a free port, so restarting it disturbs nobody) and
the app's real processes on the test database: the web process (``manage.py serve``), an agent
runner (``manage.py agent_runner``) and a tools worker (``celery worker``), with short
heartbeat timeouts. Tests kill, restart and replace them. ``ChatSocket`` logs in as a user
(a session written to the shared database) and talks to ``/ws/conversations/<id>/`` over a
real TCP websocket, as the browser does.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings

from tests.conftest import ROOT, child_env
from tests.helpers import require, wait_for

HEARTBEAT_TIMEOUT = "5"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    def __init__(self) -> None:
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        binary = "/usr/bin/redis-server"
        require(Path(binary).exists(), "redis-server is not installed")
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
            + ["--appendonly", "no", "--dir", str(settings.VAR_DIR)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for(self.ping, timeout=10, message="the private Redis server")

    def ping(self) -> bool:
        import redis

        try:
            return bool(redis.Redis.from_url(self.url, socket_timeout=1).ping())
        except redis.RedisError:
            return False

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(timeout=10)
            self.proc = None

    def restart(self, down_for: float = 0.5) -> None:
        """A restart that keeps nothing (as ``--save ""`` deployments do)."""
        self.stop()
        time.sleep(down_for)
        self.start()


class Stack:
    def __init__(
        self,
        *,
        per_process: dict[str, dict[str, str]] | None = None,
        worker_pool: str = "prefork",
        **env: str,
    ) -> None:
        """``env``: for every process; ``per_process``: more for one of them ("web", "runner",
        "worker"), e.g. each its own METRICS_PORT. ``worker_pool``: the tools worker's Celery
        pool (Celery's default, or "threads" as docker-compose.yml runs it)."""
        self.per_process = per_process or {}
        self.worker_pool = worker_pool
        self.redis = RedisServer()
        self.env = {
            "AGENT_HEARTBEAT_TIMEOUT": HEARTBEAT_TIMEOUT,
            "TOOL_HEARTBEAT_TIMEOUT": HEARTBEAT_TIMEOUT,
            "MAINTENANCE_INTERVAL": "1",
            **env,
        }
        self.web: subprocess.Popen[bytes] | None = None
        self.runner: subprocess.Popen[bytes] | None = None
        self.worker: subprocess.Popen[bytes] | None = None
        self.port = free_port()
        self.runner_name = ""
        self.worker_name = ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _spawn(self, args: list[str], log: str, kind: str = "") -> subprocess.Popen[bytes]:
        out = open(Path(settings.VAR_DIR) / log, "ab")  # noqa: SIM115 - the process owns it
        env = {**self.env, **self.per_process.get(kind, {})}
        return subprocess.Popen(
            args,
            cwd=ROOT,
            env=child_env(REDIS_URL=self.redis.url, **env),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # killpg takes a worker's pool children with it
        )

    def start(self) -> Stack:
        self.redis.start()
        self.start_web()
        self.start_worker()
        self.start_runner()
        return self

    def start_web(self) -> None:
        self.web = self._spawn(
            [sys.executable, "manage.py", "serve", "--port", str(self.port)], "stack-web.log", "web"
        )
        wait_for(
            lambda: self.web is None or self.web.poll() is not None or self._healthz(),
            timeout=60,
            message="the stack's web process",
        )
        assert self.web.poll() is None, "web process exited; see var/.../stack-web.log"

    def start_runner(self) -> None:
        self.runner_name = f"stack-runner-{uuid.uuid4().hex[:6]}"
        self.runner = self._spawn(
            [sys.executable, "manage.py", "agent_runner", "--name", self.runner_name],
            "stack-runner.log",
            "runner",
        )
        wait_for(
            lambda: self.runner is None or self.runner.poll() is not None or self._runner_up(),
            timeout=60,
            message="the stack's agent runner",
        )
        assert self.runner.poll() is None, "agent runner exited; see stack-runner.log"

    def start_worker(self) -> None:
        self.worker_name = f"stack-{uuid.uuid4().hex[:6]}"
        self.worker = self._spawn(
            [sys.executable, "-m", "celery", "-A", "controlcenter", "worker"]
            + ["-Q", "tools,browser", "-P", self.worker_pool, "-c", "2"]
            + ["-n", f"{self.worker_name}@%h"]
            + ["-l", "WARNING", "--without-mingle", "--without-gossip"],
            "stack-worker.log",
            "worker",
        )
        wait_for(
            lambda: self.worker is None or self.worker.poll() is not None or self._worker_up(),
            timeout=60,
            message="the stack's tools worker",
        )
        assert self.worker.poll() is None, "tools worker exited; see stack-worker.log"

    def _healthz(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/healthz", timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    def _runner_up(self) -> bool:
        from chat_app.models import RunnerBeat

        return RunnerBeat.objects.filter(name=self.runner_name).exists()

    def _worker_up(self) -> bool:
        from celery import Celery

        app = Celery(broker=self.redis.url, set_as_current=False)
        try:
            replies = app.control.ping(timeout=0.5) or []
        finally:
            app.close()
        return any(self.worker_name in key for reply in replies for key in reply)

    def manage(self, *args: str) -> subprocess.CompletedProcess[str]:
        """A ``manage.py`` command against this stack, as an operator would run it."""
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=child_env(REDIS_URL=self.redis.url, **self.env),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    @staticmethod
    def kill(proc: subprocess.Popen[bytes] | None) -> None:
        """SIGKILL the process and everything it started: a crash, not a shutdown."""
        if proc is None or proc.poll() is not None:
            return
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def stop(self) -> None:
        for proc in (self.runner, self.worker, self.web):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    self.kill(proc)
        self.redis.stop()


def session_cookie(user: Any) -> str:
    from django.test import Client

    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


class ChatSocket:
    """The chat page's websocket, from outside the process."""

    def __init__(self, stack: Stack, conversation_id: int, user: Any) -> None:
        self.url = f"ws://127.0.0.1:{stack.port}/ws/conversations/{conversation_id}/"
        self.origin = stack.url
        self.cookie = session_cookie(user)
        self.ws: Any = None
        self.events: list[dict[str, Any]] = []

    async def connect(self, retry_for: float = 15) -> dict[str, Any]:
        """Connect as the page does: on failure, try again with a growing delay."""
        import websockets

        deadline, delay = time.monotonic() + retry_for, 0.25
        while True:
            try:
                self.ws = await websockets.connect(
                    self.url,
                    additional_headers={"Cookie": self.cookie, "Origin": self.origin},
                    max_size=None,
                    ping_interval=None,  # the server pings; an idle client adds no traffic
                )
                break
            except (OSError, websockets.InvalidHandshake):
                if time.monotonic() + delay > deadline:
                    raise
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5)
        snapshot = await self.next(timeout=10)
        assert snapshot["type"] == "snapshot", snapshot
        return snapshot

    async def send(self, payload: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(payload))

    async def next(self, timeout: float = 30) -> dict[str, Any]:
        event = json.loads(await asyncio.wait_for(self.ws.recv(), timeout))
        self.events.append(event)
        return event

    async def until_turn_ends(self, timeout: float = 60) -> list[dict[str, Any]]:
        seen: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while True:
            try:
                event = await self.next(timeout=max(0.1, deadline - time.monotonic()))
            except TimeoutError:
                summary = [(e["type"], e.get("status", e.get("running"))) for e in seen]
                raise AssertionError(
                    f"the turn did not end within {timeout} s; events seen: {summary}"
                ) from None
            seen.append(event)
            if event["type"] == "turn" and not event["running"]:
                return seen

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
