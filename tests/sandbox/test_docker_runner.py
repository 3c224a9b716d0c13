"""The docker backend's in-container command runner: sharing, loss, idle exit, fallback.

(What every backend must do — exit codes, streams, kills, containment — runs against the runner
in test_basics / test_kill / test_containment, and against the one-exec-per-command path as
``docker_exec``.)
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.sandbox.conftest import IMAGE, TEST_LABEL, Box
from tools_app.sandbox.base import SandboxError
from tools_app.sandbox.docker_backend import DockerSandbox

pytestmark = pytest.mark.docker

MINI_IMAGE = "controlcenter-sandbox-mini:latest"


def _runner(box: Box, sandbox_id: str):  # type: ignore[no-untyped-def]
    sandbox = box.sandbox
    assert isinstance(sandbox, DockerSandbox)
    return next(c for cid, c in sandbox._runners.items() if cid.startswith(sandbox_id))


def test_commands_go_through_one_runner_not_one_exec_each(docker_box: Box) -> None:
    first = docker_box.run("true")
    api = docker_box.sandbox.api  # type: ignore[attr-defined]
    before = api.inspect_container(first.sandbox_id)["ExecIDs"] or []
    for _ in range(5):
        assert docker_box.run("echo", "hi").stdout == "hi\n"
    after = api.inspect_container(first.sandbox_id)["ExecIDs"] or []
    assert len(after) == len(before), "a command created an exec of its own"
    assert _runner(docker_box, first.sandbox_id).running()


def test_parallel_commands_share_the_runner(docker_box: Box) -> None:
    docker_box.run("true")
    results: dict[int, str] = {}

    def one(n: int) -> None:
        results[n] = docker_box.sh(f"sleep 0.6; echo {n}; echo e{n} >&2").stdout

    threads = [threading.Thread(target=one, args=(n,)) for n in range(4)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {n: f"{n}\n" for n in range(4)}
    assert time.monotonic() - started < 2.0, "the commands ran one after another"


def test_a_command_that_kills_the_runner_fails_clearly_and_the_next_one_works(
    docker_box: Box,
) -> None:
    docker_box.run("true")
    # The runner is the command's parent; the command runs as the same uid, so it can.
    with pytest.raises(SandboxError, match="command runner was killed"):
        docker_box.sh("kill -9 $PPID; sleep 5", timeout=10)
    assert docker_box.run("echo", "again").stdout == "again\n"


def test_a_runner_with_nothing_to_do_leaves_so_the_container_can_be_reaped(
    sandbox_base: Path,
) -> None:
    sandbox = DockerSandbox(image=IMAGE, pool_label=f"{TEST_LABEL}-idle", runner_idle=1.0)
    box = Box(sandbox, "idle-runner", sandbox_base / "idle-runner")
    try:
        sandbox_id = box.run("true").sandbox_id
        conn = _runner(box, sandbox_id)
        deadline = time.monotonic() + 5
        while conn.running() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not conn.running(), "the idle runner is still there"
        assert box.run("echo", "back").stdout == "back\n"  # a new runner starts
        time.sleep(1.2)
        assert sandbox.reap_idle(1.0) == 1
    finally:
        sandbox.pool.release(box.workspace_id)


def test_an_image_without_python_gets_one_exec_per_command(
    docker_sandbox: object, sandbox_base: Path
) -> None:
    sandbox = DockerSandbox(image=MINI_IMAGE, pool_label=TEST_LABEL)
    box = Box(sandbox, "mini-runner", sandbox_base / "mini-runner")
    try:
        result = box.sh("echo out; echo err >&2; exit 3")
        assert (result.exit_code, result.stdout, result.stderr) == (3, "out\n", "err\n")
        assert any(cid.startswith(result.sandbox_id) for cid in sandbox._no_runner)
        timed = box.sh("sleep 30", timeout=1)
        assert timed.timed_out
    finally:
        sandbox.pool.release(box.workspace_id)
