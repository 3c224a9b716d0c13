"""The coding agent end to end: it writes a test, sees it fail, fixes the code, sees it pass
and commits; the commit is then in the conversation's workspace repository on the host.

The "model" is the scripted agent of ``tests/scenarios/agent.py``: each reply is decided from
the tool results in the request, as a real model's would be, and a result the plan does not
expect fails the test with the step and the result named. Tools run for real, in the default
sandbox backend (Docker when an engine is reachable).
"""

from __future__ import annotations

import pytest

from chat_app.models import Message, Provider, Turn
from chat_app.services.turns import turn_start
from tests.conftest import wait_turn
from tests.scenarios.agent import Step, assert_no_surprises, scripted_agent
from tests.scenarios.plans import (
    BUGGY,
    COMMIT,
    DONE,
    FIXED,
    PYTEST,
    SUBJECT,
    TASK,
    TURN_TIMEOUT,
    native_plan,
    text_plan,
)
from tests.scenarios.workspace import git, workspace_of
from tools_app.models import ToolCall

NATIVE_CALLS = [
    ("write_file", "succeeded"),
    ("write_file", "succeeded"),
    ("run_tests", "failed"),
    ("write_file", "succeeded"),
    ("run_tests", "succeeded"),
    ("git_add", "succeeded"),
    ("git_commit", "succeeded"),
]


def run_turn(conversation, user) -> Turn:
    turn = turn_start(conversation=conversation, user_id=user.pk, text=TASK)
    return wait_turn(turn.pk, timeout=TURN_TIMEOUT)


def calls_of(turn: Turn) -> list[ToolCall]:
    return list(ToolCall.objects.filter(turn=turn).order_by("created_at", "index", "id"))


def assert_committed(conversation, *, files: set[str]) -> str:
    workspace = workspace_of(conversation)
    assert git(workspace, "log", "--format=%s").splitlines() == [SUBJECT]
    assert set(git(workspace, "ls-tree", "-r", "--name-only", "HEAD").split()) == files
    assert git(workspace, "show", "HEAD:src/calc.py") == FIXED
    assert git(workspace, "status", "--porcelain") == ""  # everything of value is committed
    return git(workspace, "rev-parse", "HEAD").strip()


def assert_native_scenario(turn: Turn, llm, conversation, plan: list[Step]) -> None:
    assert_no_surprises(llm)
    assert turn.status == Turn.Status.SUCCEEDED, turn.error
    calls = calls_of(turn)
    assert [(c.tool, c.status) for c in calls] == NATIVE_CALLS, [c.result for c in calls]
    failing = calls[2].result
    assert failing["success"] is False and failing["returncode"] == 1
    assert "assert -1 == 5" in calls[2].output  # streamed live to the card
    assert calls[4].result["success"] is True
    head = assert_committed(conversation, files={"src/calc.py", "tests/test_calc.py"})
    assert calls[6].result["commit"] == head
    assert len(llm.requests) == len(plan)
    final = Message.objects.filter(turn=turn, role=Message.Role.ASSISTANT).last()
    assert final.content == DONE


@pytest.mark.modes
def test_it_fixes_the_code_and_commits_with_native_tool_calls(
    worker, user, dev_conversation, llm, provider
):
    plan = native_plan()
    scripted_agent(llm, plan, dialect="openai", task=TASK)
    turn = run_turn(dev_conversation, user)
    assert_native_scenario(turn, llm, dev_conversation, plan)
    assert llm.requests[0]["tools"]  # native: the schemas travel as `tools`


def test_it_fixes_the_code_and_commits_over_the_anthropic_protocol(
    worker, user, dev_conversation, llm, provider
):
    provider.kind = Provider.Kind.ANTHROPIC
    provider.base_url = llm.anthropic_base_url
    provider.save()
    plan = native_plan()
    scripted_agent(llm, plan, dialect="anthropic", task=TASK)
    turn = run_turn(dev_conversation, user)
    assert all(r["_path"] == "/v1/messages" for r in llm.requests)
    assert_native_scenario(turn, llm, dev_conversation, plan)


# --- text fallback ------------------------------------------------------------------------


def test_it_fixes_the_code_and_commits_with_text_tool_calls(
    worker, user, dev_conversation, llm, provider
):
    provider.native_tools = Provider.NativeTools.FALSE
    provider.save()
    plan = text_plan()
    transcript = scripted_agent(llm, plan, dialect="text", task=TASK)
    turn = run_turn(dev_conversation, user)

    assert_no_surprises(llm)
    assert turn.status == Turn.Status.SUCCEEDED, turn.error
    first = llm.requests[0]
    assert "tools" not in first
    assert ">>> RUN COMMAND" in first["messages"][0]["content"]  # the format block
    calls = calls_of(turn)
    assert [(c.tool, c.status) for c in calls] == [
        ("write_file", "succeeded"),
        ("write_file", "succeeded"),
        ("write_file", "succeeded"),
        ("shell_exec", "failed"),
        ("write_file", "succeeded"),
        ("shell_exec", "succeeded"),
        ("shell_exec", "succeeded"),
    ], [c.result for c in calls]
    assert all(c.call_id.startswith("text_") for c in calls)
    assert calls[0].arguments == {"path": "src/calc.py", "content": BUGGY}  # from the JSON
    assert calls[3].arguments == {"command": PYTEST}  # from the RUN block
    assert calls[6].arguments == {"command": COMMIT}  # a multi-line RUN block, verbatim
    assert calls[3].result["exit_code"] == 1
    assert "1 failed" in calls[3].output  # streamed live to the card
    head = assert_committed(
        dev_conversation, files={".gitignore", "src/calc.py", "tests/test_calc.py"}
    )
    # The model read the commit id in its last results (a user message, not tool messages).
    (log,) = transcript.seen[-1]
    assert log.result["stdout"].strip() == f"{head} {SUBJECT}"
    assert not any(m["role"] == "tool" for m in llm.requests[-1]["messages"])
    final = Message.objects.filter(turn=turn, role=Message.Role.ASSISTANT).last()
    assert final.content == DONE and final.fallback
