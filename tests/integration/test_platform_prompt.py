"""The model sees the platform blocks: core memory and the skill index in the system prompt
of every round, and a fact saved in one turn is remembered (and found) in the next."""

from __future__ import annotations

import shutil

import pytest
from django.conf import settings

from chat_app.models import Conversation, Turn
from chat_app.services.turns import turn_start
from tests.conftest import wait_turn
from tests.llm_server import Call, Reply
from tools_app.models import ToolCall

pytestmark = [pytest.mark.modes]


def system_prompt(request: dict) -> str:
    first = request["messages"][0]
    assert first["role"] == "system"
    return first["content"]


@pytest.fixture
def data_skill():
    folder = settings.SKILLS_DIR / "prompt-test-skill"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(
        "---\nname: haiku\ndescription: Answer in a haiku.\n---\nFive, seven, five.\n"
    )
    yield
    shutil.rmtree(folder)


def test_core_memory_and_skills_reach_the_model(worker, user, llm, provider, data_skill):
    conversation = Conversation.objects.create(owner=user)
    llm.script(
        Reply(
            calls=[
                Call("memory_core_update", {"section": "user", "key": "name", "value": "Alice"}),
                Call("memory_save", {"content": "Alice's cat is called Miso."}),
            ]
        ),
        Reply(text="Noted."),
        Reply(calls=[Call("memory_search", {"query": "cat name", "top_k": 3})]),
        lambda body: Reply(text=f"saw: {body['messages'][-1]['content'][:300]}"),
    )
    first = wait_turn(turn_start(conversation=conversation, user_id=user.pk, text="hi").pk)
    assert first.status == Turn.Status.SUCCEEDED
    assert "## Core memory" not in system_prompt(llm.requests[0])
    assert "- haiku: Answer in a haiku." in system_prompt(llm.requests[0])
    assert "Five, seven, five" not in system_prompt(llm.requests[0])
    # The second round of the same turn already sees the updated core memory.
    assert "About the user:\n- name: Alice" in system_prompt(llm.requests[1])

    second = wait_turn(
        turn_start(conversation=conversation, user_id=user.pk, text="what is my cat called?").pk
    )
    assert second.status == Turn.Status.SUCCEEDED
    assert "- name: Alice" in system_prompt(llm.requests[2])
    search = ToolCall.objects.get(tool="memory_search")
    assert search.status == "succeeded"
    assert search.result["results"][0]["content"] == "Alice's cat is called Miso."
    assert "Miso" in llm.requests[3]["messages"][-1]["content"]
