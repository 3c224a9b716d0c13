"""Seed 002: a helper spawned again under the same name in the same conversation starts with
the last 5 messages of its own history (never the parent's); it reads the user's core memory
but cannot change it."""

from __future__ import annotations

from typing import Any

import pytest

from chat_app.models import Conversation, Message
from platform_app import subagents
from platform_app.executors.memory.tools import HELPER_READ_ONLY
from platform_app.models import Subagent
from tests.helpers import wait_for
from tests.llm_server import Reply
from tests.tools.calls import ok, run_tool

pytestmark = [pytest.mark.django_db(transaction=True)]


def helper_model(seen: list[list[dict[str, Any]]]):
    def model(body: dict[str, Any]) -> Reply:
        seen.append([m for m in body["messages"] if m["role"] in ("user", "assistant")])
        task = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user").split(
            "\n\n"
        )[0]
        return Reply(text=f"done: {task}")

    return model


def spawn(user: Any, conversation: Conversation, name: str, task: str) -> Subagent:
    call = ok(
        run_tool(
            "subagent_spawn",
            user=user,
            conversation_id=conversation.pk,
            name=name,
            message=task,
        )
    )
    subagent = Subagent.objects.get(conversation_id=call["conversation_id"])
    return wait_for(
        lambda: Subagent.objects.exclude(status="running").filter(pk=subagent.pk).first(),
        timeout=20,
        message=f"subagent {name} to finish",
    )


def texts(subagent: Subagent) -> list[str]:
    found = Message.objects.filter(conversation_id=subagent.conversation_id)
    return [m.content.split("\n\n")[0] for m in found.order_by("created_at", "id")]


def test_a_helper_spawned_again_by_name_gets_its_last_5_messages(
    worker, user, conversation, llm, provider
):
    seen: list[list[dict[str, Any]]] = []
    llm.set_default(helper_model(seen))
    first = spawn(user, conversation, "researcher", "task 1")
    assert first.status == "succeeded" and texts(first) == ["task 1", "done: task 1"]
    for n in (2, 3):
        spawn(user, conversation, "researcher", f"task {n}")
    fourth = spawn(user, conversation, "researcher", "task 4")
    # Its own history's last 5 (the oldest, "task 1", dropped), then its new task.
    assert texts(fourth) == [
        "done: task 1",
        "task 2",
        "done: task 2",
        "task 3",
        "done: task 3",
        "task 4",
        "done: task 4",
    ]
    # The model read them, in order, before the task.
    read = [m["content"].split("\n\n")[0] for m in seen[-1]]
    assert read == texts(fourth)[:-1]
    assert len({s.conversation_id for s in Subagent.objects.all()}) == 4  # each its own


def test_another_name_or_another_conversation_starts_from_nothing(
    worker, user, conversation, llm, provider
):
    llm.set_default(helper_model([]))
    spawn(user, conversation, "researcher", "task 1")
    assert texts(spawn(user, conversation, "writer", "task 2")) == ["task 2", "done: task 2"]
    elsewhere = Conversation.objects.create(owner=user, title="other")
    again = spawn(user, elsewhere, "researcher", "task 3")
    assert texts(again) == ["task 3", "done: task 3"]


def test_another_users_helper_of_that_name_is_never_carried(
    worker, user, other_user, conversation, llm, provider
):
    llm.set_default(helper_model([]))
    spawn(user, conversation, "researcher", "secret task")
    theirs = Conversation.objects.create(owner=other_user, title="theirs")
    mine = spawn(other_user, theirs, "researcher", "task 2")
    assert texts(mine) == ["task 2", "done: task 2"]
    assert subagents.CONTEXT_MESSAGES == 5


def test_a_helper_reads_core_memory_but_cannot_change_it(worker, user, conversation, llm, provider):
    ok(run_tool("memory_core_update", user=user, section="user", key="name", value="Alice"))
    llm.set_default(helper_model([]))
    helper = spawn(user, conversation, "researcher", "task 1")
    inside = helper.conversation_id
    assert ok(run_tool("memory_core_get", user=user, conversation_id=inside))["user"] == {
        "name": "Alice"
    }
    for tool, args in (
        ("memory_core_update", {"section": "user", "key": "name", "value": "Mallory"}),
        ("memory_core_update", {"section": "agent", "key": "rule", "value": "obey me"}),
        ("memory_core_delete", {"section": "user", "key": "name"}),
    ):
        call = run_tool(tool, user=user, conversation_id=inside, **args)
        assert call.status == "denied", (tool, call.status, call.error)
        assert call.error == f"policy: {HELPER_READ_ONLY}"
    assert ok(run_tool("memory_core_get", user=user))["user"] == {"name": "Alice"}
    # The main conversation still may.
    ok(
        run_tool(
            "memory_core_update",
            user=user,
            conversation_id=conversation.pk,
            section="user",
            key="name",
            value="Alice B.",
        )
    )
