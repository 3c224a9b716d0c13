"""shell_exec through the real path: policy at binding, exit codes, live output, timeouts, Stop,
output caps, the network switch and the ``/shell`` shorthand, on docker and bubblewrap."""

from __future__ import annotations

import contextlib
import random
import shlex
import socket
import time
from typing import Any

import pytest
from django.conf import settings

from chat_app.models import Turn
from chat_app.services.turns import turn_start
from tests.conftest import wait_turn
from tests.helpers import require, wait_for
from tests.httpserver import Hit, HttpServer, Response, serving
from tests.tools.conftest import (
    ISOLATED,
    EventTap,
    Tools,
    configure,
    sandbox_processes,
)
from tools_app.models import ToolCall
from tools_app.sandbox.selection import docker_container_name
from tools_app.services.binding import toolcall_dispatch
from tools_app.services.execution import toolcall_cancel

pytestmark = pytest.mark.parametrize("backend", ISOLATED, indirect=True)


def test_it_denies_a_blocked_program_at_binding(tools: Tools) -> None:
    configure("shell", sandbox_backend=tools.backend, blocked_commands=["rm", "curl"])
    (tools.workspace / "keep.txt").write_text("precious\n")
    call = tools.bind("shell_exec", {"command": "ls && rm -f keep.txt"})
    assert call.status == ToolCall.Status.DENIED
    assert call.error.startswith("policy: ") and "rm" in call.error, call.error
    assert call.result == {"success": False, "error": call.error}
    assert call.policy_verdict == "denied"
    assert (tools.workspace / "keep.txt").read_text() == "precious\n"


def test_it_runs_only_allowlisted_programs(tools: Tools) -> None:
    configure("shell", sandbox_backend=tools.backend, allowed_commands=["echo", "ls"])
    denied = tools.call("shell_exec", command="echo hi | cat")
    assert denied.status == ToolCall.Status.DENIED
    assert "cat" in denied.error, denied.error
    allowed = tools.call("shell_exec", command="echo hi")
    assert allowed.status == ToolCall.Status.SUCCEEDED, allowed.result
    assert allowed.result["stdout"] == "hi\n"


def test_it_fails_with_the_exit_code_and_both_streams(tools: Tools) -> None:
    call = tools.call("shell_exec", command="echo out; echo err >&2; exit 3")
    assert call.status == ToolCall.Status.FAILED
    assert call.error == "command exited with status 3"
    assert call.result["success"] is False
    assert call.result["exit_code"] == 3
    assert call.result["stdout"] == "out\n"
    assert call.result["stderr"] == "err\n"


def test_it_runs_in_the_workspace_as_the_sandbox_user(tools: Tools) -> None:
    (tools.workspace / "here.txt").write_text("x")
    call = tools.sh("pwd; id -u; ls")
    assert call.result["stdout"].split() == ["/workspace", str(settings.SANDBOX_UID), "here.txt"]


def test_it_reports_a_timeout_with_the_output_so_far(tools: Tools) -> None:
    configure("shell", sandbox_backend=tools.backend, timeout_seconds=1)
    started = time.monotonic()
    call = tools.call("shell_exec", command="echo before; sleep 20; echo after")
    assert time.monotonic() - started < 5
    assert call.status == ToolCall.Status.FAILED
    assert call.error == "timed out after 1 s"
    assert "before" in call.result["output"] and "after" not in call.result["output"]
    assert "before" in call.output


def test_a_key_a_command_prints_is_redacted_in_its_result_and_its_kept_output(
    tools: Tools,
) -> None:
    key = "AKIA" + "IOSFODNN7EXAMPLE"  # not in the command line as one word
    call = tools.sh('k=AKIA; echo "aws_access_key_id=${k}IOSFODNN7EXAMPLE"')
    assert "aws_access_key_id=[REDACTED:AWS Access Key]" in call.output
    assert key not in call.output and key not in str(call.result)
    configure("shell", sandbox_backend=tools.backend, guard_secrets_result="block")
    call = tools.call("shell_exec", command='k=AKIA; echo "aws_access_key_id=${k}IOSFODNN7EXAMPLE"')
    assert call.status == ToolCall.Status.FAILED and call.error.startswith("guard: the result")
    assert call.output == "[output withheld: it carried AWS Access Key (output)]"


def test_it_caps_the_output_with_a_notice(tools: Tools) -> None:
    configure("shell", sandbox_backend=tools.backend, max_output_bytes=1000)
    call = tools.call("shell_exec", command="head -c 50000 /dev/zero | tr '\\0' x; echo e >&2")
    assert call.status == ToolCall.Status.SUCCEEDED, call.error
    assert call.result["stdout"] == "x" * 1000
    assert call.result["stderr"] == "e\n"
    assert call.result["truncated"] is True
    assert call.result["notice"] == "output truncated to 1000 bytes per stream"


# -- through the worker: settings, live output and Stop -----------------------------------------


def run_in_worker(tools: Tools, command: str) -> ToolCall:
    call = tools.bind("shell_exec", {"command": command})
    toolcall_dispatch(call)
    return wait_for(
        lambda: ToolCall.objects.filter(pk=call.pk, status__in=ToolCall.TERMINAL).first(),
        timeout=30,
        message="the call to finish",
    )


@pytest.mark.modes
def test_a_worker_runs_the_next_call_with_the_timeout_just_saved(worker: str, tools: Tools) -> None:
    """The worker caches the settings it runs calls with; a change made here (the web process,
    in distributed mode) applies to its very next call."""
    configure("shell", sandbox_backend=tools.backend, timeout_seconds=1)
    call = run_in_worker(tools, "sleep 1.6; echo done")
    assert call.status == ToolCall.Status.FAILED and call.error == "timed out after 1 s"
    configure("shell", sandbox_backend=tools.backend, timeout_seconds=30)
    call = run_in_worker(tools, "sleep 1.6; echo done")
    assert call.status == ToolCall.Status.SUCCEEDED, call.error
    configure("shell", sandbox_backend=tools.backend, timeout_seconds=1)
    call = run_in_worker(tools, "sleep 1.6; echo done")
    assert call.error == "timed out after 1 s"


@pytest.mark.modes
def test_it_streams_output_while_the_command_runs(worker: str, tools: Tools) -> None:
    script = "for i in 1 2 3 4; do echo line$i; sleep 0.3; done"
    with EventTap(f"conversation_{tools.conversation_id}") as tap:
        call = tools.bind("shell_exec", {"command": script})
        toolcall_dispatch(call)
        wait_for(
            lambda: [e for e in tap.of_type("toolcall") if e["status"] in ToolCall.TERMINAL],
            message="the call to finish",
        )
        time.sleep(0.2)  # output flushed at the end may trail the card by a moment
    call.refresh_from_db()
    assert call.status == ToolCall.Status.SUCCEEDED, call.error
    chunks = [(t, e) for t, e in tap.timed("output") if e["id"] == call.pk]
    finished = [t for t, e in tap.timed("toolcall") if e["status"] in ToolCall.TERMINAL][0]
    assert len(chunks) >= 3, chunks  # several flushes while it ran, not one at the end
    first_at, first = chunks[0]
    assert first["text"].startswith("line1\n")
    # line1 was on the page while three more lines were still 0.9 s away.
    assert finished - first_at > 0.6, (finished - first_at, chunks)
    text = ""
    for _, chunk in chunks:
        assert chunk["offset"] == len(text), chunks
        text += chunk["text"]
    assert text == "line1\nline2\nline3\nline4\n"
    assert call.output == text


@pytest.mark.modes
def test_stop_kills_a_running_command_and_everything_it_started(worker: str, tools: Tools) -> None:
    marker = f"sleep 29.{random.randrange(1000, 9999)}"
    with EventTap(f"conversation_{tools.conversation_id}") as tap:
        call = tools.bind("shell_exec", {"command": f"echo ready; {marker} & {marker}; wait"})
        toolcall_dispatch(call)
        wait_for(lambda: tap.of_type("output"), message="the command to start")
    container = docker_container_name(tools.workspace_id)

    def sleeping() -> list[str]:
        found = sandbox_processes(tools.backend, marker, container=container)
        return [args for args in found if args.split()[0] == "sleep"]

    assert len(sleeping()) == 2, sleeping()
    # The watchdog also stores the output on the row while the call runs (heartbeat, 2 s).
    wait_for(
        lambda: "ready" in ToolCall.objects.get(pk=call.pk).output,
        timeout=4,
        message="the output to be stored while running",
    )
    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.RUNNING
    started = time.monotonic()
    toolcall_cancel(call)
    wait_for(
        lambda: ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.CANCELLED,
        timeout=3,
        message="the call to be cancelled",
    )
    elapsed = time.monotonic() - started
    assert elapsed < 1.5, f"Stop took {elapsed:.2f} s"
    assert sleeping() == []
    call.refresh_from_db()
    assert call.error == "cancelled by the user"
    assert call.result["success"] is False


@pytest.mark.modes
def test_the_shell_slash_shorthand_runs_a_command(worker: str, tools: Tools, owner: Any) -> None:
    from chat_app.models import Conversation

    (tools.workspace / "notes.txt").write_text("n\n")
    conversation = Conversation.objects.get(pk=tools.conversation_id)
    turn = turn_start(conversation=conversation, user_id=owner.pk, text="/shell ls -la")
    assert turn is not None
    turn = wait_turn(turn.pk)
    assert turn.status == Turn.Status.SUCCEEDED, turn.error
    call = ToolCall.objects.get(turn=turn)
    assert call.tool == "shell_exec" and call.source == ToolCall.Source.SLASH
    assert call.arguments == {"command": "ls -la"}
    assert "notes.txt" in call.result["stdout"]


# -- network ----------------------------------------------------------------------------------


def _ok(hit: Hit) -> Response:
    return 200, [], b"ok"


def _server(host: str) -> contextlib.AbstractContextManager[HttpServer]:
    return serving(host, default=_ok)


def _host_address() -> str:
    """The host's own address on its default route (connecting UDP sends no packet)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))
        except OSError:
            require(False, "this host has no default route: no address outside loopback to try")
        return str(s.getsockname()[0])


# Prints one line per target: "<host>:<port> <status or error>".
PROBE = """
import sys, urllib.request
for url in sys.argv[1:]:
    try:
        with urllib.request.urlopen(url, timeout=3) as r:
            print(url, r.status)
    except Exception as e:
        print(url, getattr(e, "reason", e))
"""


def _probe(tools: Tools, *urls: str) -> tuple[ToolCall, dict[str, str]]:
    call = tools.call("shell_exec", command=_python(PROBE, *urls))
    lines = call.result.get("stdout", "").splitlines()
    return call, dict(line.split(" ", 1) for line in lines)


def _python(code: str, *args: str) -> str:
    return " ".join(shlex.quote(a) for a in ["python3", "-c", code, *args])


def test_the_network_is_off_by_default(tools: Tools) -> None:
    host = _host_address()
    with _server("127.0.0.1") as loopback, _server(host) as outside:
        urls = [
            f"http://127.0.0.1:{loopback.port}/",
            f"http://{host}:{outside.port}/",
        ]
        call, seen = _probe(tools, *urls)
    assert call.status == ToolCall.Status.SUCCEEDED, call.result
    assert loopback.hits == [] and outside.hits == []
    # The sandbox's own loopback answers (nothing listens there); nothing else is routable.
    assert "Connection refused" in seen[urls[0]], seen
    assert "Network is unreachable" in seen[urls[1]], seen


def test_network_on_reaches_out_but_not_the_host_loopback(tools: Tools) -> None:
    """With allow_network the sandbox gets a real interface: a server on the host's own
    address is reachable (docker: through the cc-sandbox-net bridge). The host's loopback,
    where Redis, Postgres and the app itself listen, must stay out of reach, as it does with
    docker, whose network namespace has a loopback of its own. A backend that cannot give
    that guarantee must refuse network access rather than hand out the host's loopback."""
    configure("shell", sandbox_backend=tools.backend, allow_network=True)
    host = _host_address()
    with _server("127.0.0.1") as loopback, _server(host) as outside:
        urls = [
            f"http://{host}:{outside.port}/reached",
            f"http://127.0.0.1:{loopback.port}/loopback",
        ]
        call, seen = _probe(tools, *urls)
    assert loopback.hits == [], f"the sandbox reached the host's loopback: {seen}"
    if call.status == ToolCall.Status.SUCCEEDED:
        assert seen[urls[0]] == "200", seen
        assert outside.paths() == ["/reached"], seen
        assert "Connection refused" in seen[urls[1]], seen
    else:  # refused outright: fine, if it says why
        assert "network" in call.error, call.result
