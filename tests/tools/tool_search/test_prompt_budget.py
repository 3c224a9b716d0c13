"""Issue 38 part 5: a member's plain turn with the default agent sends at most 1,000 prompt
tokens before the person's words (the system prompt and the tool schemas), with the tools a
fresh install grants everyone. A product property, measured on the request the real loop
sends to the scripted model, with the project's estimate (chat_app.services.usage)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chat_app.models import Agent, Turn
from chat_app.services.agents import agent_for_conversation
from chat_app.services.turns import turn_start
from chat_app.services.usage import estimate_tokens
from tests.conftest import wait_turn
from tests.llm_server import Reply
from tools_app.services.grants import (
    EVERYONE_GROUPS_SINCE,
    FRESH_INSTALL_FUNCTIONS,
    FRESH_INSTALL_GROUPS,
    everyone_group,
    grants_set,
)

pytestmark = [pytest.mark.modes, pytest.mark.grants]


def before_words(request: dict[str, Any]) -> int:
    """The request's tokens before the person's words: the system message and the tools,
    as sent (JSON), by the estimate the usage records use when a server reports none."""
    system = request["messages"][0]
    assert system["role"] == "system"
    tools = json.dumps(request.get("tools") or [], ensure_ascii=False)
    return estimate_tokens(len(system["content"]) + len(tools))


def fresh_install_grants() -> None:
    grants_set(
        actor=None,
        group=everyone_group(),
        groups=FRESH_INSTALL_GROUPS + EVERYONE_GROUPS_SINCE,
        functions=FRESH_INSTALL_FUNCTIONS,
        audit=False,
    )


def test_it_keeps_a_members_plain_turn_within_1000_tokens(
    worker, conversation, user, llm, provider
):
    fresh_install_grants()
    agent = agent_for_conversation(conversation)
    llm.script(Reply(text="Hello!"), Reply(text="Hello again!"))
    turn = wait_turn(turn_start(conversation=conversation, user_id=user.pk, text="hello").pk)
    assert turn.status == Turn.Status.SUCCEEDED
    # The same turn with every schema sent (tool search off), for the figure beside it.
    Agent.objects.filter(pk=agent.pk).update(tool_schema_budget=0)
    wait_turn(turn_start(conversation=conversation, user_id=user.pk, text="hello").pk)
    searching, every = llm.requests
    tokens, before = before_words(searching), before_words(every)
    print(
        f"\nprompt tokens before the words: {tokens} ({len(searching['tools'])} tools); "
        f"every schema: {before} ({len(every['tools'])} tools)"
    )
    assert tokens <= 1000
    assert before > tokens
