"""The docker backend's in-container command runner: sharing, loss, idle exit, fallback.

(What every backend must do — exit codes, streams, kills, containment — runs against the runner
in test_basics / test_kill / test_containment, and against the one-exec-per-command path as
``docker_exec``.)
"""

from __future__ import annotations

import queue
import threading
import time
from pathlib import Path

import pytest

from tests.sandbox.conftest import IMAGE, TEST_LABEL, Box
from tools_app.sandbox.base import ExecRequest, SandboxError
from tools_app.sandbox.docker_backend import DockerSandbox, _NotStarted

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


def test_a_command_whose_runner_dies_at_once_is_never_run_a_second_time(docker_box: Box) -> None:
    # The runner acknowledges a command before it spawns it: a command that kills the runner
    # before the "started" event could be sent must not be taken for one that never ran (and
    # be run again through an exec of its own).
    for attempt in range(1, 4):
        docker_box.run("true")  # a runner is up
        with pytest.raises(SandboxError, match="command runner was killed"):
            docker_box.sh("echo ran >> ran-once.txt; kill -9 $PPID; sleep 5", timeout=10)
        assert (docker_box.dir / "ran-once.txt").read_text() == "ran\n" * attempt


class _GoneRunner:
    """A runner connection that loses its runner right after ``events`` (the race above,
    made certain)."""

    def __init__(self, *events: dict[str, object]) -> None:
        self.events = events

    def submit(self, *args: object, **kwargs: object) -> tuple[str, queue.SimpleQueue[object]]:
        got: queue.SimpleQueue[object] = queue.SimpleQueue()
        for event in (*self.events, {"lost": "the sandbox runner stopped"}):
            got.put(event)
        return "j1", got

    def kill(self, jid: str) -> None:
        pass

    def done(self, jid: str) -> None:
        pass


@pytest.mark.parametrize(
    ("events", "outcome"),
    [
        ((), _NotStarted),  # never read it: one exec of its own runs it instead
        (({"i": "j1", "a": 1},), SandboxError),  # read it, no "started" yet: it may have run
        (({"i": "j1", "a": 1}, {"i": "j1", "s": 7}), SandboxError),
    ],
    ids=["lost-before-reading", "lost-after-reading", "lost-after-starting"],
)
def test_a_lost_runner_s_command_is_retried_only_if_it_was_never_read(
    docker_box: Box, events: tuple[dict[str, object], ...], outcome: type[Exception]
) -> None:
    sandbox = docker_box.sandbox
    assert isinstance(sandbox, DockerSandbox)
    cid = _runner(docker_box, docker_box.run("true").sandbox_id).container_id
    with pytest.raises(outcome):
        sandbox._exec_on_runner(
            _GoneRunner(*events),  # type: ignore[arg-type]
            cid,
            docker_box.workspace_id,
            ExecRequest(["true"]),
            None,
            None,
            time.monotonic(),
            time.time(),
        )


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


def test_a_command_quiet_for_longer_than_the_engine_client_timeout_still_finishes(
    sandbox_base: Path,
) -> None:
    import docker

    sandbox = DockerSandbox(image=IMAGE, pool_label=TEST_LABEL)
    sandbox.pool._api = docker.from_env(timeout=1).api  # type: ignore[attr-defined]
    box = Box(sandbox, "quiet-runner", sandbox_base / "quiet-runner")
    try:
        assert box.sh("sleep 2.5; echo done", timeout=10).stdout == "done\n"
        conn = _runner(box, box.run("true").sandbox_id)
        time.sleep(1.5)
        assert conn.alive, "an idle runner connection died of the client's request timeout"
    finally:
        sandbox.pool.release(box.workspace_id)


def test_commands_cannot_reach_into_the_runner(docker_box: Box) -> None:
    # Same uid, but the runner is not dumpable: its fds and memory are not the command's.
    for attempt in (
        "ls /proc/$PPID/fd",
        'echo \'{"i":"x","x":0}\' > /proc/$PPID/fd/1',
        "head -c 10 /proc/$PPID/fd/0",
        "cat /proc/$PPID/environ",
    ):
        result = docker_box.sh(attempt, timeout=5)
        assert result.exit_code != 0, attempt
        assert "Permission denied" in result.stderr, (attempt, result.stderr)
    assert docker_box.run("echo", "still fine").stdout == "still fine\n"


def test_the_runner_kills_a_command_its_host_stopped_waiting_for(docker_box: Box) -> None:
    sandbox = docker_box.sandbox
    assert isinstance(sandbox, DockerSandbox)
    sandbox_id = docker_box.run("true").sandbox_id
    conn = _runner(docker_box, sandbox_id)
    jid, events = conn.submit(["sleep", "30"], "/workspace", {}, None, 1000, deadline=1.0)
    try:
        started = time.monotonic()
        seen: list[dict[str, object]] = []
        while not any("x" in e for e in seen):
            seen.append(events.get(timeout=5))
        assert time.monotonic() - started < 4
        assert seen[-1]["x"] == 137
    finally:
        conn.done(jid)


def test_odd_requests_do_not_hurt_the_runner(docker_box: Box) -> None:
    # A lone surrogate cannot be exec'd: it is replaced, as the engine would.
    assert docker_box.run("echo", "a\ud800b").stdout == "a?b\n"
    # A script without a #! line runs under sh, as a shell would run it.
    (docker_box.dir / "noshebang").write_text("echo from a plain script\n")
    (docker_box.dir / "noshebang").chmod(0o755)
    assert docker_box.run("./noshebang").stdout == "from a plain script\n"
    # Stdin too large for the control channel goes through an exec of its own.
    assert docker_box.run("wc", "-c", stdin=b"x" * 5_000_000).stdout.strip() == "5000000"
    assert docker_box.run("echo", "ok").stdout == "ok\n"
