""" "Explain why" (seeds 001, 003): the built-in prompt asks for the reason of every tool call,
and a tool group's *explain why* default adds ``_reasoningForCall`` to each of its functions."""

from __future__ import annotations

import pytest

from chat_app.services.loop import DEFAULT_SYSTEM_PROMPT
from chat_app.services.tool_specs import tool_specs
from chat_app.services.turns import turn_start
from tests.conftest import wait_turn
from tests.llm_server import Call, Reply
from tests.tools.conftest import configure
from tools_app import selectors
from tools_app.models import ToolCall, ToolFunctionConfig
from tools_app.registry import GROUPS, get_tool

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_built_in_prompt_asks_the_reason_of_each_call():
    assert "reason for each tool call" in DEFAULT_SYSTEM_PROMPT
    assert "_reasoningForCall" in DEFAULT_SYSTEM_PROMPT


def test_it_is_off_until_a_group_or_a_function_says_so():
    assert selectors.tools_with_reasoning() == set()
    assert GROUPS["time"].settings_model().explain_why is False


def test_a_groups_default_asks_every_function_of_it():
    configure("http", explain_why=True)
    http = {tool.tool_name for tool in GROUPS["http"].tools}
    assert http and selectors.tools_with_reasoning() == http
    [spec] = tool_specs([get_tool("http_request")], strict=True)
    assert "_reasoningForCall" in spec.parameters["properties"]
    assert spec.parameters["required"][0] == "_reasoningForCall"
    [other] = tool_specs([get_tool("current_time")], strict=True)
    assert "_reasoningForCall" not in other.parameters["properties"]


def test_a_functions_own_switch_adds_to_the_groups():
    configure("time", explain_why=False)
    ToolFunctionConfig.objects.create(name="current_time", reasoning_for_call=True)
    assert selectors.tools_with_reasoning() == {"current_time"}


@pytest.mark.modes
def test_the_model_reads_the_prompt_and_the_card_gets_the_reason(
    worker, conversation, user, llm, provider
):
    configure("time", explain_why=True)
    llm.script(
        Reply(
            calls=[
                Call("current_time", {"_reasoningForCall": "Asked the time.", "timezone": "UTC"})
            ]
        ),
        Reply(text="ok"),
    )
    turn = wait_turn(turn_start(conversation=conversation, user_id=user.pk, text="time?").pk)
    system = llm.requests[0]["messages"][0]
    assert system["role"] == "system" and "_reasoningForCall" in system["content"]
    [params] = [
        t["function"]["parameters"]
        for t in llm.requests[0]["tools"]
        if t["function"]["name"] == "current_time"
    ]
    assert "_reasoningForCall" in params["required"]
    call = ToolCall.objects.get(turn=turn)
    assert call.status == "succeeded" and call.reasoning == "Asked the time."
