"""What every backend does the same way: exit codes, stdin, env, cwd, streams, caps."""

from __future__ import annotations

import os
import time

import pytest
from django.conf import settings

from tests.sandbox import ALL
from tests.sandbox.conftest import Box
from tools_app.sandbox.base import ExecRequest

pytestmark = pytest.mark.parametrize("box", ALL, indirect=True)


def test_it_reports_exit_codes(box: Box) -> None:
    assert box.sh("exit 0").exit_code == 0
    assert box.sh("exit 7").exit_code == 7
    missing = box.run("definitely-not-a-program")
    assert missing.exit_code == 127
    assert "definitely-not-a-program" in missing.stderr


def test_it_passes_stdin(box: Box) -> None:
    assert box.run("cat", stdin=b"hello\nworld\n").stdout == "hello\nworld\n"
    # Larger than any pipe or socket buffer: must not deadlock.
    assert box.run("wc", "-c", stdin=b"x" * 3_000_000).stdout.strip() == "3000000"


def test_it_gives_an_empty_stdin_when_none_is_passed(box: Box) -> None:
    result = box.run("cat", timeout=10)
    assert (result.exit_code, result.stdout, result.timed_out) == (0, "", False)


def test_it_uses_a_clean_environment(box: Box, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC_HOST_SECRET", "must-not-leak")
    result = box.run("env", env={"FOO": "bar baz"})
    env = dict(line.split("=", 1) for line in result.stdout.splitlines())
    assert "CC_HOST_SECRET" not in env
    assert env["FOO"] == "bar baz"
    assert env["LANG"] == "C.UTF-8"
    assert "/usr/bin" in env["PATH"]
    if box.name != "none":
        assert env["HOME"] == "/workspace"
    # Docker adds HOSTNAME; the shell wrapper may add PWD. Nothing else comes from the host.
    assert set(env) <= {"FOO", "LANG", "PATH", "HOME", "HOSTNAME", "PWD", "SHLVL"}


def test_it_runs_in_the_requested_directory(box: Box) -> None:
    assert box.sh("mkdir -p sub/dir").exit_code == 0
    result = box.run("pwd", cwd="/workspace/sub/dir")
    assert result.stdout.strip().endswith("/sub/dir")
    if box.name != "none":
        assert result.stdout.strip() == "/workspace/sub/dir"
    assert box.run("pwd", cwd="/workspace/no/such/dir").exit_code != 0


def test_it_keeps_stdout_and_stderr_apart(box: Box) -> None:
    result = box.sh("echo out; echo err >&2; echo out2")
    assert result.stdout == "out\nout2\n"
    assert result.stderr == "err\n"


def test_it_shares_the_workspace_with_the_host(box: Box) -> None:
    box.dir.mkdir(parents=True, exist_ok=True)
    (box.dir / "from-host.txt").write_text("hi from host")
    result = box.sh("cat from-host.txt && echo sandbox > from-sandbox.txt")
    assert result.stdout == "hi from host"
    written = box.dir / "from-sandbox.txt"
    assert written.read_text() == "sandbox\n"
    if box.name != "none" and os.geteuid() == 0:
        assert written.stat().st_uid == settings.SANDBOX_UID  # a real unprivileged uid, not root


def test_it_streams_output_in_order_while_running(box: Box) -> None:
    events: list[tuple[str, str, float]] = []
    started = time.monotonic()
    result = box.sh(
        "echo one; sleep 0.4; echo two >&2; sleep 0.4; echo three",
        on_output=lambda stream, text: events.append((stream, text, time.monotonic())),
    )
    finished = time.monotonic()
    merged: list[list[str]] = []
    for stream, text, _ in events:
        if merged and merged[-1][0] == stream:
            merged[-1][1] += text
        else:
            merged.append([stream, text])
    assert merged == [["stdout", "one\n"], ["stderr", "two\n"], ["stdout", "three\n"]]
    assert events[0][2] - started < finished - started - 0.5, "first chunk came only at the end"
    assert result.stdout == "one\nthree\n"


def test_it_caps_output_and_says_so(box: Box) -> None:
    streamed: list[str] = []
    result = box.sh(
        "head -c 50000 /dev/zero | tr '\\0' a; echo err >&2",
        max_output=1000,
        on_output=lambda stream, text: streamed.append(text) if stream == "stdout" else None,
    )
    assert result.exit_code == 0
    assert result.truncated is True
    assert result.stdout == "a" * 1000
    assert "".join(streamed) == "a" * 1000  # the callback stops at the cap too
    assert result.stderr == "err\n"
    assert box.sh("echo small", max_output=1000).truncated is False


def test_it_decodes_output_as_utf8_with_replacement(box: Box) -> None:
    result = box.sh(r"printf 'caf\303\251 \377\n'")
    assert result.stdout == "café \ufffd\n"


def test_it_reports_duration_and_sandbox_id(box: Box) -> None:
    result = box.sh("sleep 0.2")
    assert result.duration_ms >= 200
    assert result.sandbox_id
    assert not (result.timed_out or result.cancelled or result.killed_reason)


@pytest.mark.parametrize("cwd", ["/etc", "/workspace/../etc", "../x"])
def test_it_rejects_a_cwd_outside_the_workspace(box: Box, cwd: str) -> None:
    with pytest.raises(ValueError, match="cwd must be /workspace or below"):
        ExecRequest(["pwd"], cwd=cwd)


def test_it_reports_death_by_signal_like_a_shell(box: Box) -> None:
    result = box.sh("kill -9 $$")
    assert result.exit_code == 137
    assert result.killed_reason is None, "we did not kill it, and it was not out of memory"
    assert not (result.timed_out or result.cancelled)
