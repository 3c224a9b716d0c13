"""The guards on the ways in that are not a person's chat (issue 36): a schedule's run and a
subagent's turn — a key in a result reaches their model redacted, a token in the arguments
waits for a person — and a remembered approval (for the person, for a schedule) never lets
through a call a guard holds. ``/mcp/`` and ``/v1`` are in tests/tools/mcp/test_mcp_guards.py
and tests/api/test_v1_guards.py (they need the app server)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from chat_app.models import Turn
from chat_app.services.turns import turn_start
from platform_app.models import Schedule, Subagent
from platform_app.tasks import schedules_tick
from tests.approvals.conftest import requester_mode
from tests.conftest import wait_turn
from tests.helpers import wait_for
from tests.httpserver import HttpServer, serving
from tests.llm_server import Call, Reply
from tests.tools.conftest import configure
from tools_app.models import StandingApproval, ToolCall
from tools_app.runtime import BindContext
from tools_app.services.binding import CallRequest, toolcall_bind
from tools_app.services.standing import toolcall_decide_widened

pytestmark = [pytest.mark.django_db(transaction=True)]

PAGES = "127.0.0.65"
AWS = "AKIAIOSFODNN7EXAMPLE"
GITHUB = "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"
REASON = "the arguments carry GitHub Token (arguments.body)"
TASK = "Fetch the deployment notes."


@pytest.fixture
def pages() -> Iterator[HttpServer]:
    def key(hit: Any) -> Any:
        return 200, [("Content-Type", "text/plain")], f"aws_access_key_id={AWS}".encode()

    def plain(hit: Any) -> Any:
        return 200, [("Content-Type", "text/plain")], b"nothing to see"

    with serving(PAGES, {"/key": key, "/plain": plain}) as server:
        configure("http", private_allowed=[PAGES])
        yield server


def _seen(body: dict[str, Any]) -> str:
    return "\n".join(str(m["content"]) for m in body["messages"] if m["role"] == "tool")


def _leak(pages: HttpServer) -> dict[str, Any]:
    return {"url": pages.url("/plain"), "method": "POST", "body": f"t={GITHUB}"}


def _fire(user: Any, message: str) -> Turn:
    schedule = Schedule.objects.create(
        user=user,
        name="nightly",
        cron="0 3 * * *",
        message=message,
        next_run_at=timezone.now() - timedelta(minutes=1),
    )
    schedules_tick()
    return wait_for(lambda: Turn.objects.filter(schedule_id=schedule.pk).first())


# --- a schedule's run -----------------------------------------------------------------------
@pytest.mark.modes
def test_a_schedules_model_reads_the_key_redacted(worker, user, llm, provider, pages):
    llm.script(Reply(calls=[Call("http_request", {"url": pages.url("/key")})]), Reply(text="ok"))
    turn = wait_turn(_fire(user, "Fetch the key page.").pk)
    assert turn.status == Turn.Status.SUCCEEDED, turn.error
    seen = _seen(llm.requests[1])
    assert "[REDACTED:AWS Access Key]" in seen and AWS not in seen
    call = ToolCall.objects.get(turn=turn)
    assert AWS not in json.dumps(call.result)


def test_a_schedules_call_carrying_a_token_waits(worker, user, llm, provider, pages):
    llm.script(Reply(calls=[Call("http_request", _leak(pages))]))
    turn = _fire(user, "Post the token.")
    call = wait_for(lambda: ToolCall.objects.filter(turn=turn).first())
    assert call.status == ToolCall.Status.AWAITING_APPROVAL and call.policy_reason == REASON
    assert pages.hits == []


# --- a subagent's turn ----------------------------------------------------------------------
def _subagent_model(call: Call) -> Any:
    def model(body: dict[str, Any]) -> Reply:
        first = next(m["content"] for m in body["messages"] if m["role"] == "user")
        tools = [m for m in body["messages"] if m["role"] == "tool"]
        if str(first).startswith(TASK):  # the subagent
            return Reply(calls=[call]) if not tools else Reply(text="fetched")
        if not tools:
            return Reply(calls=[Call("subagent_spawn", {"name": "fetcher", "message": TASK})])
        return Reply(text="started")

    return model


@pytest.mark.modes
def test_a_subagents_model_reads_the_key_redacted(worker, user, conversation, llm, provider, pages):
    llm.set_default(_subagent_model(Call("http_request", {"url": pages.url("/key")})))
    wait_turn(turn_start(conversation=conversation, user_id=user.pk, text="Go").pk)
    subagent = wait_for(lambda: Subagent.objects.filter(status="succeeded").first(), timeout=20)
    call = ToolCall.objects.get(conversation=subagent.conversation, tool="http_request")
    assert call.status == ToolCall.Status.SUCCEEDED and AWS not in json.dumps(call.result)
    read = [r for r in llm.requests if "[REDACTED:AWS Access Key]" in _seen(r)]
    assert read, "the subagent's model never read the page"
    assert all(AWS not in json.dumps(r) for r in llm.requests)


def test_a_subagents_call_carrying_a_token_waits(worker, user, conversation, llm, provider, pages):
    llm.set_default(_subagent_model(Call("http_request", _leak(pages))))
    wait_turn(turn_start(conversation=conversation, user_id=user.pk, text="Go").pk)
    call = wait_for(
        lambda: ToolCall.objects.filter(tool="http_request").first(),
        timeout=20,
        message="the subagent's call",
    )
    assert call.conversation_id != conversation.pk  # the subagent's own conversation
    assert call.status == ToolCall.Status.AWAITING_APPROVAL and call.policy_reason == REASON
    assert pages.hits == []


# --- remembered approvals never stand in for a guard ---------------------------------------
def _bind(user: Any, conversation: Any, arguments: dict[str, Any]) -> ToolCall:
    return toolcall_bind(
        request=CallRequest(tool="http_request", arguments=arguments),
        ctx=BindContext(user_id=user.pk, conversation_id=conversation.pk, source="chat"),
    )


def test_a_remembered_approval_never_lets_a_guarded_call_through(user, conversation, pages):
    requester_mode("http_request")
    until = (timezone.now() + timedelta(hours=1)).isoformat()
    # A clean call remembered for the person runs the next time without asking...
    clean = {"url": pages.url("/plain"), "method": "POST", "body": "t=hello"}
    first = _bind(user, conversation, clean)
    toolcall_decide_widened(
        user=user, call_id=first.pk, approve=True, widening={"scope": "person", "until": until}
    )
    assert _bind(user, conversation, clean).status == ToolCall.Status.QUEUED
    # ...and the person approving a guarded call "for this person" does not make the guard
    # quiet: the same call, with the same token, asks again.
    held = _bind(user, conversation, _leak(pages))
    assert held.policy_reason == REASON
    toolcall_decide_widened(
        user=user, call_id=held.pk, approve=True, widening={"scope": "person", "until": until}
    )
    assert StandingApproval.objects.filter(arguments=held.arguments).exists()
    again = _bind(user, conversation, _leak(pages))
    assert again.status == ToolCall.Status.AWAITING_APPROVAL and again.policy_reason == REASON
    assert again.decided_by_id is None and again.decision_note == ""
