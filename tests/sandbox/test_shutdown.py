"""Issue 23 B4: warm sandbox containers do not outlive the app.

They used to keep running after ``make run`` stopped, until the app ran again for
SANDBOX_IDLE_SECONDS. Now the process removes its warm containers on SIGTERM/SIGINT, and the
containers a killed process left are reaped by the next start, by label: only this
deployment's (``controlcenter.sandbox``), only those whose maker (``controlcenter.owner``) is
gone. The real app server (``manage.py serve``) runs a shell command over /mcp/ in its
in-process worker; the test's pool label keeps its containers apart from everyone else's on
the shared engine."""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from platform_app.api_tokens import api_token_create
from tests.conftest import _SHARED
from tests.e2e.conftest import run_app_server
from tests.helpers import wait_for
from tests.security.test_tokens_mcp import _with_session
from tests.tools.conftest import configure, require_backend

pytestmark = [pytest.mark.docker]


@pytest.fixture
def label(transactional_db: None) -> Iterator[str]:
    require_backend("docker")
    configure("shell", sandbox_backend="docker")
    value = f"b4-{uuid.uuid4().hex[:8]}"
    yield value
    for container in _containers(value):
        container.remove(force=True)


def _containers(label: str) -> list[Any]:
    import docker

    client = docker.from_env(timeout=30)
    return list(
        client.containers.list(all=True, filters={"label": f"controlcenter.sandbox={label}"})
    )


def _run_a_command(url: str, user: Any) -> None:
    token = api_token_create(user=user, name=f"b4 {uuid.uuid4().hex[:6]}")[1]

    async def work(session: Any) -> Any:
        return await session.call_tool("shell_exec", {"command": "echo warm"})

    result = asyncio.run(_with_session(url, token, work))
    assert result.structured_content["status"] == "succeeded", result.content


def _server_process() -> Any:
    """The app server run_app_server started last."""
    return _SHARED[-1]


def _server(label: str, log: str) -> Any:
    return run_app_server("--no-beat", log_name=log, SANDBOX_POOL_LABEL=label)


def test_sigterm_removes_the_warm_container(label: str, user: Any) -> None:
    with _server(label, "test-b4-term.log") as url:
        _run_a_command(url, user)
        assert [c.status for c in _containers(label)] == ["running"]
    # run_app_server ends with SIGTERM (terminate) and waits for the exit
    assert _containers(label) == []


def test_a_killed_servers_container_is_reaped_at_the_next_start(label: str, user: Any) -> None:
    # Another deployment's container (its own label) whose maker is gone too: never ours.
    other = _orphan_of_another_deployment(f"{label}-other")
    try:
        with _server(label, "test-b4-kill.log") as url:
            _run_a_command(url, user)
            server = _server_process()
            server.send_signal(signal.SIGKILL)
            server.wait(timeout=10)
        assert len(_containers(label)) == 1, "a killed process cannot remove its container"
        with _server(label, "test-b4-kill.log"):
            wait_for(lambda: _containers(label) == [], timeout=30, message="the orphan reaped")
            other.reload()
            assert other.status == "running", "another deployment's container was touched"
    finally:
        other.remove(force=True)


def _orphan_of_another_deployment(label: str) -> Any:
    import docker

    from tests.sandbox.conftest import IMAGE
    from tools_app.sandbox.docker_containers import LABEL, LABEL_OWNER

    dead = f"{socket.gethostname()}/{2**22 + 7}/1"  # above pid_max's default: no such process
    client = docker.from_env(timeout=30)
    return client.containers.run(
        IMAGE,
        ["sleep", "infinity"],
        detach=True,
        network_mode="none",
        labels={LABEL: label, LABEL_OWNER: dead},
        name=f"cc-test-b4-{uuid.uuid4().hex[:8]}",
    )


@pytest.mark.distributed_only
def test_a_worker_removes_its_warm_container_on_sigterm(label: str, user: Any) -> None:
    """A ``celery worker`` process (prefork: the container is a pool child's) on a queue of
    its own, so the session's shared worker never takes the call."""
    from tests.conftest import ROOT, child_env, stop_process
    from tools_app.models import ToolCall
    from tools_app.runtime import BindContext
    from tools_app.services.binding import CallRequest, toolcall_bind
    from tools_app.tasks import run_tool_call

    queue = f"b4-{label}"
    log = open(ROOT / "var" / "test-b4-worker.log", "ab")  # noqa: SIM115 - the process's
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "controlcenter",
            "worker",
            "-Q",
            queue,
            "-c",
            "2",
            "-n",
            f"{queue}@%h",
            "-l",
            "WARNING",
            "--without-mingle",
            "--without-gossip",
        ],
        cwd=ROOT,
        env=child_env(SANDBOX_POOL_LABEL=label),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        # Ready before the call is made: a call left waiting is sent again to the shared queue.
        from infra.celery_app import app

        wait_for(
            lambda: (
                proc.poll() is not None
                or any(queue in key for r in app.control.ping(timeout=0.3) for key in r)
            ),
            timeout=90,
            message="the worker to answer ping",
        )
        assert proc.poll() is None, "the worker exited; see var/test-b4-worker.log"
        call = toolcall_bind(
            request=CallRequest(tool="shell_exec", arguments={"command": "echo warm"}),
            ctx=BindContext(user_id=user.pk, conversation_id=None, source="api"),
        )
        assert call.status == ToolCall.Status.QUEUED, call.error
        run_tool_call.apply_async(args=[call.pk], queue=queue)
        done = wait_for(
            lambda: ToolCall.objects.filter(pk=call.pk, status__in=ToolCall.TERMINAL).first(),
            timeout=90,
            message="the worker to run the call",
        )
        assert done.status == ToolCall.Status.SUCCEEDED, done.error
        assert [c.status for c in _containers(label)] == ["running"]
    finally:
        stop_process(proc, timeout=30)  # SIGTERM: Celery's warm shutdown
    assert proc.returncode == 0, "the worker was killed, not stopped"
    assert _containers(label) == []
