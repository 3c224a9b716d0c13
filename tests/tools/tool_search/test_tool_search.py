"""Tool search end to end through the real loop and the scripted model (issue 38): the first
request carries tool_search and the always-on tools; what it finds is loaded into the next
round; the found tool runs through binding like any other; native and text fallback, both
provider protocols; the card and the audit show the search."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chat_app.models import Agent, Message, Provider, Turn
from chat_app.services.agents import agent_for_conversation
from chat_app.services.turns import turn_start
from tests.conftest import wait_turn
from tests.helpers import tool_json
from tests.llm_server import Call, Reply
from tools_app.events import render_toolcall_card
from tools_app.models import AuditRecord, ToolCall

pytestmark = [pytest.mark.modes, pytest.mark.tool_search]

ALWAYS_ON = {"tool_search", "skill_load", "memory_search"}


def run(conversation: Any, user: Any, text: str) -> Turn:
    return wait_turn(turn_start(conversation=conversation, user_id=user.pk, text=text).pk)


def names(request: dict[str, Any]) -> set[str]:
    """The tools a request carries, in either protocol."""
    return {t["function"]["name"] if "function" in t else t["name"] for t in request["tools"]}


def search_then_time(*, load: list[str] | None = None) -> list[Reply]:
    return [
        Reply(calls=[Call("tool_search", {"query": "what time is it now", "load": load})]),
        Reply(calls=[Call("current_time", {"timezone": "UTC"})]),
        Reply(text="It is morning in UTC."),
    ]


def test_it_finds_loads_and_calls_a_tool_the_first_request_did_not_carry(
    worker, conversation, user, llm, provider
):
    llm.script(*search_then_time())
    turn = run(conversation, user, "what time is it?")
    assert turn.status == Turn.Status.SUCCEEDED
    first, second, third = llm.requests
    assert names(first) == ALWAYS_ON  # the rest is found, not sent
    assert "current_time" in names(second) and names(second) >= ALWAYS_ON
    assert "current_time" in names(third)  # loaded for the rest of the turn
    search, clock = ToolCall.objects.filter(turn=turn).order_by("pk")
    assert (search.tool, search.status) == ("tool_search", "succeeded")
    assert search.result is not None and search.result["loaded"] == ["current_time"]
    assert {"name": "current_time"}.items() <= search.result["found"][0].items()
    assert clock.status == "succeeded"
    # What the model read: names and one-line descriptions, as data.
    result = tool_json(second["messages"][-1]["content"])
    assert result["found"][0]["name"] == "current_time"
    # The search is a call like any other: audited, shown as a card.
    assert AuditRecord.objects.filter(tool="tool_search", tool_call_id=search.pk).exists()
    card = render_toolcall_card(search)
    assert "tool_search" in card and "succeeded" in card and "current_time" in card
    # The next turn starts lean again.
    llm.script(Reply(text="Hi."))
    run(conversation, user, "hello")
    assert names(llm.requests[-1]) == ALWAYS_ON


def test_the_model_may_name_what_to_load(worker, conversation, user, llm, provider):
    llm.script(
        Reply(calls=[Call("tool_search", {"query": "files", "load": ["file_read", "nope"]})]),
        Reply(text="Loaded."),
    )
    turn = run(conversation, user, "read a file")
    search = ToolCall.objects.get(turn=turn)
    assert search.result is not None
    assert search.result["loaded"] == ["file_read"]
    assert search.result["not_available"] == ["nope"]
    assert names(llm.requests[1]) == ALWAYS_ON | {"file_read"}


def test_a_granted_tool_not_loaded_yet_still_binds(worker, conversation, user, llm, provider):
    """Binding is the authority: the list the model saw is not."""
    llm.script(Reply(calls=[Call("current_time", {"timezone": "UTC"})]), Reply(text="Done."))
    turn = run(conversation, user, "time")
    assert "current_time" not in names(llm.requests[0])
    assert ToolCall.objects.get(turn=turn).status == "succeeded"


def test_anthropic_protocol(worker, conversation, user, llm, provider):
    provider.kind = Provider.Kind.ANTHROPIC
    provider.base_url = llm.anthropic_base_url
    provider.save()
    llm.script(*search_then_time(load=["current_time"]))
    turn = run(conversation, user, "what time is it?")
    assert turn.status == Turn.Status.SUCCEEDED
    first, second, _third = llm.requests
    assert first["_path"].endswith("/v1/messages")
    assert names(first) == ALWAYS_ON
    assert "current_time" in names(second)
    assert [c.status for c in ToolCall.objects.filter(turn=turn).order_by("pk")] == [
        "succeeded",
        "succeeded",
    ]


def test_text_fallback(worker, conversation, user, llm, provider):
    provider.native_tools = Provider.NativeTools.FALSE
    provider.save()

    def block(tool: str, arguments: dict[str, Any]) -> str:
        return "```json\n" + json.dumps({"tool": tool, "arguments": arguments}) + "\n```"

    llm.script(
        Reply(text="Let me look.\n" + block("tool_search", {"query": "current time"})),
        Reply(text=block("current_time", {"timezone": "UTC"})),
        Reply(text="It is morning."),
    )
    turn = run(conversation, user, "what time is it?")
    assert turn.status == Turn.Status.SUCCEEDED
    first, second, _third = llm.requests
    assert "tools" not in first
    system = first["messages"][0]["content"]
    assert "tool_search" in system and "current_time" not in system
    assert "current_time" in second["messages"][0]["content"]  # loaded: now in the block
    calls = list(ToolCall.objects.filter(turn=turn).order_by("pk"))
    assert [(c.tool, c.status) for c in calls] == [
        ("tool_search", "succeeded"),
        ("current_time", "succeeded"),
    ]


def test_tools_within_the_budget_are_all_sent_without_tool_search(
    worker, conversation, user, llm, provider
):
    agent = agent_for_conversation(conversation)
    Agent.objects.filter(pk=agent.pk).update(tool_schema_budget=100_000)
    llm.script(Reply(text="Hi."))
    run(conversation, user, "hello")
    sent = names(llm.requests[0])
    assert "tool_search" not in sent and {"current_time", "shell_exec", "file_read"} <= sent


def test_a_profiles_always_on_tools_and_its_narrowed_list(
    worker, conversation, user, llm, provider
):
    """The profile pins what is always sent; the search finds only within its tools."""
    agent = Agent.objects.create(
        name="Narrow",
        all_tools=False,
        tools=[
            "tool_search",
            "current_time",
            "file_read",
            "file_list",
            "shell_exec",
            "http_request",
        ],
        always_on_tools=["file_read"],
        tool_schema_budget=50,
    )
    conversation.agent = agent
    conversation.save()
    llm.script(
        Reply(calls=[Call("tool_search", {"query": "memory docker container time"})]),
        Reply(text="Done."),
    )
    turn = run(conversation, user, "find")
    assert names(llm.requests[0]) == {"tool_search", "file_read"}
    result = ToolCall.objects.get(turn=turn).result
    assert result is not None
    assert [f["name"] for f in result["found"]] == ["current_time"]  # not memory, not docker
    assert Message.objects.filter(turn=turn, role=Message.Role.ASSISTANT).count() == 2
