"""Approvals, limits, agent profiles, latent tools and _reasoningForCall, through real turns."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

from chat_app.models import Agent, Conversation, Turn
from chat_app.services.agents import AgentImportError, agents_export, agents_import
from chat_app.services.turns import turn_start, turn_stop
from tests.conftest import wait_turn
from tests.helpers import tool_json, wait_for
from tests.llm_server import Call, Reply
from tools_app.models import AuditRecord, ToolCall, ToolFunctionConfig, ToolGroupConfig
from tools_app.registry import BaseTool, unregister_tool
from tools_app.services.approval import ApprovalError, toolcall_decide


def start(conversation, user, text):
    return turn_start(conversation=conversation, user_id=user.pk, text=text)


def awaiting(turn):
    return wait_for(
        lambda: ToolCall.objects.filter(turn=turn, status="awaiting_approval").first(),
        message="a call awaiting approval",
    )


@pytest.mark.modes
def test_an_approved_call_runs_and_the_turn_goes_on(worker, conversation, user, llm, provider):
    ToolFunctionConfig.objects.create(name="current_time", approval_mode="requester")
    llm.script(Reply(calls=[Call("current_time", {"timezone": "UTC"})]), Reply(text="Done."))
    turn = start(conversation, user, "time?")
    call = awaiting(turn)
    assert Turn.objects.get(pk=turn.pk).is_running
    toolcall_decide(user=user, call_id=call.pk, approve=True, arguments={"timezone": "Asia/Tokyo"})
    turn = wait_turn(turn.pk)
    call.refresh_from_db()
    assert call.status == "succeeded" and call.result["timezone"] == "Asia/Tokyo"
    decision = AuditRecord.objects.get(kind="approval", tool_call=call)
    assert decision.username == "alice"
    assert decision.detail["arguments_before"] == {"timezone": "UTC"}
    assert decision.status == "approved with edited arguments"


@pytest.mark.modes
def test_a_denied_call_tells_the_model(worker, conversation, user, llm, provider):
    ToolFunctionConfig.objects.create(name="current_time", approval_mode="requester")
    llm.script(Reply(calls=[Call("current_time", {})]), Reply(text="OK, I will not."))
    turn = start(conversation, user, "time?")
    call = awaiting(turn)
    toolcall_decide(user=user, call_id=call.pk, approve=False)
    assert wait_turn(turn.pk).status == Turn.Status.SUCCEEDED
    tool_msg = next(m for m in llm.requests[1]["messages"] if m["role"] == "tool")
    assert "denied by alice" in tool_json(tool_msg["content"])["error"]


def test_edited_arguments_are_validated_again(worker, conversation, user, llm, provider):
    ToolFunctionConfig.objects.create(name="current_time", approval_mode="requester")
    llm.script(Reply(calls=[Call("current_time", {})]), Reply(text="ok"))
    turn = start(conversation, user, "time?")
    call = awaiting(turn)
    with pytest.raises(ApprovalError, match="unknown timezone"):
        toolcall_decide(user=user, call_id=call.pk, approve=True, arguments={"timezone": "Nope/No"})
    assert ToolCall.objects.get(pk=call.pk).status == "awaiting_approval"
    turn_stop(turn=turn)
    assert wait_turn(turn.pk).status == Turn.Status.CANCELLED
    assert ToolCall.objects.get(pk=call.pk).status == "cancelled"  # Stop cancels pending approvals


def test_only_the_requester_may_confirm(worker, conversation, user, other_user, llm, provider):
    ToolFunctionConfig.objects.create(name="current_time", approval_mode="requester")
    llm.script(Reply(calls=[Call("current_time", {})]), Reply(text="ok"))
    turn = start(conversation, user, "time?")
    call = awaiting(turn)
    with pytest.raises(ApprovalError, match="no such tool call"):
        toolcall_decide(user=other_user, call_id=call.pk, approve=True)
    turn_stop(turn=turn)
    wait_turn(turn.pk)


@pytest.mark.modes
def test_the_per_turn_limit_refuses_extra_calls(worker, conversation, user, llm, provider):
    agent = Agent.objects.create(name="Frugal", max_calls_per_turn=2)
    conversation.agent = agent
    conversation.save()
    llm.script(Reply(calls=[Call("current_time", {}) for _ in range(3)]), Reply(text="ok"))
    turn = wait_turn(start(conversation, user, "three times").pk)
    calls = list(ToolCall.objects.filter(turn=turn).order_by("index"))
    assert [c.status for c in calls] == ["succeeded", "succeeded", "denied"]
    assert "this turn already made 2 tool calls" in calls[2].error
    assert calls[2].policy_verdict == "rate_limited"


@pytest.mark.modes
def test_the_per_conversation_limit_counts_every_turn(worker, conversation, user, llm, provider):
    agent = Agent.objects.create(name="Thrifty", max_calls_per_turn=2, max_calls_per_conversation=3)
    conversation.agent = agent
    conversation.save()
    llm.script(Reply(calls=[Call("current_time", {}) for _ in range(2)]), Reply(text="ok"))
    first = wait_turn(start(conversation, user, "twice").pk)
    llm.script(Reply(calls=[Call("current_time", {}) for _ in range(2)]), Reply(text="ok"))
    second = wait_turn(start(conversation, user, "twice more").pk)
    calls = list(ToolCall.objects.filter(turn__in=[first, second]).order_by("turn", "index"))
    assert [c.status for c in calls] == ["succeeded", "succeeded", "succeeded", "denied"]
    assert "this conversation reached its maximum of 3 tool calls" in calls[3].error
    assert calls[3].policy_verdict == "rate_limited"


def test_the_per_minute_limit_of_a_tool(worker, conversation, user, llm, provider):
    ToolGroupConfig.objects.create(name="time", settings={"calls_per_minute": 1})
    llm.script(Reply(calls=[Call("current_time", {}), Call("current_time", {})]), Reply(text="ok"))
    turn = wait_turn(start(conversation, user, "twice").pk)
    statuses = list(
        ToolCall.objects.filter(turn=turn).order_by("index").values_list("status", "error")
    )
    assert statuses[0][0] == "succeeded"
    assert statuses[1][0] == "denied" and "1 times per minute" in statuses[1][1]


def test_an_agent_only_offers_its_tools_and_its_prompt(worker, user, llm, provider):
    agent = Agent.objects.create(
        name="Mute", system_prompt="You are terse.", all_tools=False, tools=[]
    )
    conversation = Conversation.objects.create(owner=user, agent=agent)
    llm.script(Reply(calls=[Call("current_time", {})]), Reply(text="ok"))
    turn = wait_turn(start(conversation, user, "time").pk)
    first = llm.requests[0]
    assert "tools" not in first
    assert first["messages"][0]["content"].startswith("You are terse.")
    call = ToolCall.objects.get(turn=turn)
    assert call.status == "denied" and "not available to this agent" in call.error


def test_agents_round_trip_through_yaml(db):
    Agent.objects.create(
        name="Dev",
        description="coder",
        all_tools=False,
        tools=["current_time"],
        max_calls_per_turn=5,
    )
    text = agents_export()
    Agent.objects.all().delete()
    agents = {a.name: a for a in agents_import(text)}
    assert set(agents) == {"Dev", "Researcher"}  # the shipped profile (a data migration)
    agent = agents["Dev"]
    assert agent.name == "Dev" and agent.tools == ["current_time"] and agent.max_calls_per_turn == 5
    researcher = agents["Researcher"]
    assert (researcher.kind, researcher.max_iterations) == ("sgr", 10)
    assert researcher.tool_budgets == {"clarification": 3, "web_search": 4}
    with pytest.raises(AgentImportError, match="unknown keys"):
        agents_import("agents:\n- name: X\n  colour: red\n")


def test_reasoning_for_call_is_asked_for_and_shown(worker, conversation, user, llm, provider):
    ToolFunctionConfig.objects.create(name="current_time", reasoning_for_call=True)
    llm.script(
        Reply(
            calls=[
                Call(
                    "current_time",
                    {"_reasoningForCall": "The user asked the time.", "timezone": "UTC"},
                )
            ]
        ),
        Reply(text="ok"),
    )
    turn = wait_turn(start(conversation, user, "time").pk)
    [params] = [
        t["function"]["parameters"]
        for t in llm.requests[0]["tools"]
        if t["function"]["name"] == "current_time"
    ]
    assert "_reasoningForCall" in params["properties"] and "_reasoningForCall" in params["required"]
    call = ToolCall.objects.get(turn=turn)
    assert call.status == "succeeded" and call.reasoning == "The user asked the time."
    assert "_reasoningForCall" not in call.arguments


class Forecast(BaseModel):
    city: str
    celsius: float = Field(ge=-90, le=60)


@pytest.fixture
def latent_tool():
    # Defined inside the fixture so it is registered only for this test.
    class WeatherGuess(BaseTool, group="time", output=Forecast):
        """Guess the weather in a city (no implementation: latent)."""

        city: str

    yield WeatherGuess
    unregister_tool("weather_guess")


def test_a_tool_without_activity_runs_latently(
    worker, conversation, user, llm, provider, latent_tool
):
    llm.script(
        Reply(calls=[Call("weather_guess", {"city": "Oslo"})]),
        Reply(text='{"city": "Oslo", "celsius": 4.5}'),  # the structured-output request
        Reply(text="About 4 degrees."),
    )
    turn = wait_turn(start(conversation, user, "weather?").pk)
    call = ToolCall.objects.get(turn=turn)
    assert call.latent is True and call.status == "succeeded"
    assert call.result["output"] == {"city": "Oslo", "celsius": 4.5}
    structured = llm.requests[1]
    assert structured.get("response_format", {}).get("type") == "json_schema"
