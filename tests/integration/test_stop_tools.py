"""Stop in the middle of a turn whose tool calls are running in the sandbox.

In distributed mode the calls run in a separate worker process (Celery on Redis) while Stop
comes from this process, so the only way the kill can travel is the one production uses: the
call's ``cancel_requested`` flag, polled by the watchdog next to the running command.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from typing import Any

import pytest

from chat_app.models import Turn
from chat_app.services.turns import turn_start, turn_stop
from tests.helpers import wait_for
from tests.llm_server import Call, Reply
from tests.scenarios.workspace import isolated_conversation, sandbox_processes, workspace_of
from tools_app.models import ToolCall, ToolFunctionConfig
from tools_app.services.approval import ApprovalError, toolcall_approve

pytestmark = [pytest.mark.modes]

STOP_WITHIN = 2.0  # seconds from Stop to: turn cancelled, calls cancelled, processes gone
START_TIMEOUT = 60.0  # the first call may create the sandbox container


@pytest.fixture
def conversation(user: Any) -> Iterator[Any]:
    with isolated_conversation(user, title="Stop") as conversation:
        yield conversation


# Command lines unique to the test, so pgrep (bubblewrap) cannot mistake another's process.
def sleeper() -> str:
    return f"sleep {random.randint(300, 399)}.{random.randint(100, 999)}"


def ticker() -> tuple[str, str]:
    marker = f"tick-{random.randint(10**5, 10**6)}"
    return f"while true; do echo {marker}; sleep 0.2; done", marker


def start(llm, conversation, user, calls: list[Call]) -> Turn:
    llm.script(Reply(text="Running them now.", calls=calls))
    return turn_start(conversation=conversation, user_id=user.pk, text="run these")


def statuses(turn: Turn) -> list[str]:
    return list(
        ToolCall.objects.filter(turn=turn).order_by("index").values_list("status", flat=True)
    )


def wait_statuses(turn: Turn, expected: list[str]) -> None:
    wait_for(
        lambda: statuses(turn) == expected,
        timeout=START_TIMEOUT,
        message=f"tool calls to be {expected}",
    )


def stop_and_wait(turn: Turn, conversation, markers: list[str]) -> float:
    """Stop the turn; return how long until it was cancelled. By then its commands must be
    gone: a call is only marked cancelled once its process group was killed."""
    started = time.monotonic()
    turn_stop(turn=turn)

    def finished() -> bool:
        turn.refresh_from_db()
        return not turn.is_running

    wait_for(finished, timeout=STOP_WITHIN + 3, interval=0.02, message="Stop to settle")
    elapsed = time.monotonic() - started
    left = [line for m in markers for line in sandbox_processes(conversation, m)]
    assert not left, f"still running in the sandbox after Stop: {left}"
    return elapsed


def assert_cancelled(turn: Turn, elapsed: float, expected_calls: int) -> list[ToolCall]:
    turn.refresh_from_db()
    assert turn.status == Turn.Status.CANCELLED
    assert elapsed <= STOP_WITHIN, f"Stop took {elapsed:.2f} s"
    calls = list(ToolCall.objects.filter(turn=turn).order_by("index"))
    assert len(calls) == expected_calls
    assert [c.status for c in calls] == ["cancelled"] * expected_calls
    assert not ToolCall.objects.filter(status=ToolCall.Status.RUNNING, turn=turn).exists()
    for call in calls:
        assert call.finished_at is not None
        assert call.result["success"] is False and "cancel" in call.result["error"]
    return calls


def test_stop_kills_two_parallel_running_calls(worker, conversation, user, llm, provider):
    sleep, (tick, tick_marker) = sleeper(), ticker()
    turn = start(
        llm,
        conversation,
        user,
        [Call("shell_exec", {"command": sleep}), Call("shell_exec", {"command": tick})],
    )
    wait_statuses(turn, ["running", "running"])
    # Really running in the sandbox, not just marked so.
    wait_for(
        lambda: (
            sandbox_processes(conversation, sleep) and sandbox_processes(conversation, tick_marker)
        ),
        timeout=START_TIMEOUT,
        message="both commands to run in the sandbox",
    )

    elapsed = stop_and_wait(turn, conversation, [sleep, tick_marker])

    calls = assert_cancelled(turn, elapsed, expected_calls=2)
    assert tick_marker in calls[1].output  # it did run, streaming, until Stop
    assert len(llm.requests) == 1  # no model round after Stop


def test_stop_cancels_a_call_awaiting_approval_and_kills_a_running_one(
    worker, conversation, user, llm, provider
):
    ToolFunctionConfig.objects.create(name="write_file", approval_mode="requester")
    sleep = sleeper()
    turn = start(
        llm,
        conversation,
        user,
        [
            Call("shell_exec", {"command": sleep}),
            Call("write_file", {"path": "never.txt", "content": "approved?"}),
        ],
    )
    wait_statuses(turn, ["running", "awaiting_approval"])
    wait_for(
        lambda: sandbox_processes(conversation, sleep),
        timeout=START_TIMEOUT,
        message="the command to run in the sandbox",
    )

    elapsed = stop_and_wait(turn, conversation, [sleep])

    calls = assert_cancelled(turn, elapsed, expected_calls=2)
    with pytest.raises(ApprovalError, match="no longer awaiting approval"):
        toolcall_approve(call=calls[1], user=user)
    time.sleep(0.3)  # had anything been dispatched, it would have run by now
    assert not (workspace_of(conversation) / "never.txt").exists()
    assert statuses(turn) == ["cancelled", "cancelled"]
    assert len(llm.requests) == 1
