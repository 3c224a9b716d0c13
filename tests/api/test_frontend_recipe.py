"""The recipe of docs/API_GUIDE.md for another OpenAI-compatible chat front end, tested with
the one at hand: Control Center itself, whose "openai" provider kind is such a front end's
client (the official SDK, streaming, usage, native tools detected automatically). Alice's
agent profile uses a provider whose base URL is this server's /v1 and whose key is Bob's
token: her question becomes a governed turn of Bob's, and its answer comes back to her."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from chat_app.models import Agent, Message, Provider, Turn
from tests.api.conftest import token_for
from tests.llm_server import Reply
from tests.rest_helpers import follow_turn


@pytest.mark.modes
def test_a_front_end_pointed_at_v1_gets_answers_from_a_governed_turn(
    api_server: str, llm: Any, provider: Any, user: Any, other_user: Any
) -> None:
    front = Provider.objects.create(
        name="Control Center /v1",
        kind="openai",
        base_url=f"{api_server}/v1",  # the recipe: base URL, a token as the key, a profile
        api_key=token_for(other_user, scopes=["chat"]),
        model="General",
        native_tools="auto",
        max_retries=0,
    )
    Agent.objects.create(name="Through the API", provider=front)
    llm.script(Reply(text="Answered by Bob's agent."))
    alice = {"Authorization": f"Bearer {token_for(user)}"}
    conversation = httpx2.post(
        f"{api_server}/api/conversations", json={"agent": "Through the API"}, headers=alice
    ).json()

    sent = httpx2.post(
        f"{api_server}/api/conversations/{conversation['id']}/messages",
        json={"text": "Who answers?"},
        headers=alice,
    ).json()
    end = follow_turn(api_server, alice, sent["turn"]["id"])

    assert end["status"] == "succeeded", end
    answer = Message.objects.filter(conversation_id=conversation["id"], role="assistant").last()
    assert answer.content == "Answered by Bob's agent."
    # The front end sent its tools; /v1 refused them (400), and the provider's automatic
    # detection went on without native tools, as with any endpoint that has none.
    front.refresh_from_db()
    assert front.tools_supported is False
    inner = Turn.objects.get(user=other_user)
    assert inner.source == Turn.Source.API and inner.status == "succeeded"
    assert inner.conversation.owner == other_user
