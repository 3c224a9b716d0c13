"""Subagents: subagent_spawn returns "started" at once; the helper's turn runs in a child
conversation through the real runner and scripted model; its answer is posted into the parent
conversation when it ends — and a parent turn still running reads it in its next round.
Depth, concurrency and round limits come from the Subagents settings."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from django.template.loader import render_to_string

from chat_app.models import Conversation, Message, Turn
from chat_app.services import turns
from chat_app.services.turns import turn_start, turn_stop
from platform_app import subagents
from platform_app.models import Subagent
from tests.conftest import wait_turn
from tests.helpers import tool_json, wait_for
from tests.llm_server import Call, Reply
from tests.tools.calls import ok, run_tool
from tests.tools.conftest import configure
from tools_app.errors import PolicyDenied
from tools_app.models import ToolCall

pytestmark = [pytest.mark.django_db(transaction=True)]

TASK = "Find the answer to X."


def first_user_text(body: dict[str, Any]) -> str:
    for message in body["messages"]:
        if message["role"] == "user":
            content = message["content"]
            return content if isinstance(content, str) else json.dumps(content)
    return ""


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [tool_json(m["content"]) for m in body["messages"] if m["role"] == "tool"]


@pytest.mark.modes
def test_spawn_returns_at_once_and_the_answer_arrives_later(
    worker, user, conversation, llm, provider
):
    gate = threading.Event()
    models: list[str] = []
    provider.allowed_models = ["helper-model"]  # a model name the helper may ask for
    provider.save(update_fields=["allowed_models"])

    def model(body: dict[str, Any]) -> Reply:
        if first_user_text(body).startswith(
            TASK
        ):  # the subagent: busy until the test lets it answer
            models.append(body["model"])
            assert gate.wait(30), "the test never released the subagent"
            return Reply(text="X is 42.")
        if not tool_results(body):
            spawn = {"name": "researcher", "message": TASK, "model": "helper-model"}
            spawn["inject_into"] = "parent"
            return Reply(calls=[Call("subagent_spawn", spawn)])
        return Reply(text="I started a helper; its answer will follow.")

    llm.set_default(model)
    parent = wait_turn(turn_start(conversation=conversation, user_id=user.pk, text="What is X?").pk)
    # The parent's turn is over while the subagent is still working.
    assert parent.status == "succeeded", parent.error
    call = ToolCall.objects.get(turn=parent, tool="subagent_spawn")
    assert call.status == "succeeded" and call.result["status"] == "started"
    subagent = Subagent.objects.get()
    assert subagent.status == "running" and subagent.depth == 1
    child = subagent.conversation
    assert call.result["conversation_id"] == child.pk
    assert call.result["conversation_url"] == f"/c/{child.pk}/"
    assert child.owner_id == user.pk and child.title == "Subagent: researcher"
    assert Turn.objects.get(conversation=child).is_running
    assert not Message.objects.filter(conversation=conversation, origin="subagent").exists()
    card = render_to_string("tools/_toolcall_card.html", {"call": call})
    assert f'href="/c/{child.pk}/"' in card and "Open the subagent's conversation" in card

    gate.set()
    delivered = wait_for(
        lambda: Message.objects.filter(conversation=conversation, origin="subagent").first(),
        timeout=20,
        message="the subagent's answer in the parent conversation",
    )
    assert delivered.role == "user"
    assert delivered.content.startswith("**Subagent “researcher” finished**")
    assert f"(/c/{child.pk}/)" in delivered.content and delivered.content.endswith("X is 42.")
    subagent.refresh_from_db()
    assert subagent.status == "succeeded" and subagent.result == "X is 42."
    assert models == ["helper-model"]  # the helper's own model, for its turn only
    assert {r["model"] for r in llm.requests if r["model"] != "helper-model"} == {"scripted-model"}
    assert subagent.delivered_to_id == delivered.pk and subagent.parent_turn_id == parent.pk
    task = Message.objects.get(conversation=child, role="user")
    assert task.content == TASK + subagents.SILENT_NOTE and task.origin == "task"


@pytest.mark.modes
def test_a_running_parent_reads_the_answer_in_its_next_round(
    worker, user, conversation, llm, provider
):
    seen: dict[str, Any] = {}

    def model(body: dict[str, Any]) -> Reply:
        if first_user_text(body).startswith(TASK):
            return Reply(text="X is 42.")
        results = tool_results(body)
        if not results:
            spawn = {"name": "researcher", "message": TASK, "inject_into": "parent"}
            return Reply(calls=[Call("subagent_spawn", spawn)])
        if len(results) == 1:
            # Round 2 of the parent: keep the turn running until the subagent has answered.
            wait_for(
                lambda: Subagent.objects.filter(status="succeeded").exists(),
                timeout=20,
                message="the subagent to finish",
            )
            return Reply(calls=[Call("current_time", {"timezone": "UTC"})])
        seen["last"] = body["messages"][-1]
        return Reply(text="The helper says X is 42.")

    llm.set_default(model)
    parent = wait_turn(
        turn_start(conversation=conversation, user_id=user.pk, text="What is X?").pk, timeout=30
    )
    assert parent.status == "succeeded", parent.error
    assert parent.round == 2
    last = seen["last"]
    assert last["role"] == "user"
    assert "Subagent “researcher” finished" in last["content"] and "X is 42." in last["content"]
    final = Message.objects.filter(turn=parent, role="assistant").last()
    assert final.content == "The helper says X is 42."


@pytest.mark.modes
def test_the_depth_limit_is_enforced(worker, user, conversation):
    middle = Conversation.objects.create(owner=user, title="depth 1")
    deepest = Conversation.objects.create(owner=user, title="depth 2")
    Subagent.objects.create(user=user, name="a", message="m", depth=1, conversation=middle,
                            status="succeeded")  # fmt: skip
    Subagent.objects.create(user=user, name="b", message="m", depth=2, conversation=deepest,
                            status="succeeded")  # fmt: skip
    call = run_tool("subagent_spawn", user=user, conversation_id=deepest.pk, name="c", message="m")
    assert call.status == "denied"
    assert call.error == (
        "policy: subagents nest at most 2 deep and this conversation is already at depth 2; "
        "do the task here instead"
    )
    configure("subagents", max_depth=1)
    call = run_tool("subagent_spawn", user=user, conversation_id=middle.pk, name="c", message="m")
    assert call.status == "denied" and "nest at most 1 deep" in call.error
    assert Subagent.objects.count() == 2


def test_the_concurrency_limit_is_per_user(user, other_user, conversation):
    configure("subagents", max_concurrent_per_user=1)
    busy = Conversation.objects.create(owner=user, title="busy")
    Subagent.objects.create(user=user, name="busy", message="m", conversation=busy)
    call = run_tool(
        "subagent_spawn", user=user, conversation_id=conversation.pk, name="two", message="m"
    )
    assert call.status == "denied"
    assert call.error == (
        "policy: 1 subagent(s) of yours are running; the limit is 1 at once — wait for one to "
        "finish"
    )
    theirs = Conversation.objects.create(owner=other_user, title="theirs")
    result = ok(
        run_tool(
            "subagent_spawn", user=other_user, conversation_id=theirs.pk, name="x", message="m"
        )
    )
    assert result["status"] == "started" and result["depth"] == 1


@pytest.mark.modes
def test_spawns_racing_each_other_cannot_pass_the_concurrency_limit_together(
    user, conversation, monkeypatch
):
    # Each spawn dawdles right after counting the running subagents: without one spawn of a
    # user at a time, all of them would count none and start.
    checked = subagents.limits_check

    def slow_check(**kwargs: Any) -> int:
        depth = checked(**kwargs)
        time.sleep(0.3)
        return depth

    monkeypatch.setattr(subagents, "limits_check", slow_check)
    # The helpers stay running: a runner alive in this process (an earlier test's) would end
    # their turns at once (no provider here), and a spawn that found its predecessor ended
    # may rightly start. On SQLite which writer goes next is SQLite's busy handler's choice.
    monkeypatch.setattr(turns, "_queue_round", lambda turn_id: None)
    racers = 4
    barrier = threading.Barrier(racers)
    outcomes: list[str] = []

    def spawn(index: int) -> None:
        from django.db import connection

        try:
            barrier.wait(10)
            subagents.subagent_spawn(
                user_id=user.pk,
                spec=subagents.Spawn(name=f"racer {index}", message="m"),
                parent_conversation_id=conversation.pk,
                parent_call_id=None,
                max_depth=2,
                max_concurrent=1,
                max_rounds=5,
            )
            outcomes.append("started")
        except PolicyDenied as exc:
            outcomes.append(exc.reason)
        finally:
            connection.close()

    threads = [threading.Thread(target=spawn, args=(i,)) for i in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(outcomes) == [
        *["1 subagent(s) of yours are running; the limit is 1 at once — wait for one to finish"]
        * (racers - 1),
        "started",
    ]
    assert Subagent.objects.filter(user=user).count() == 1


@pytest.mark.modes
def test_stop_on_the_parent_stops_the_subagents_it_started(
    worker, user, conversation, llm, provider
):
    release = threading.Event()

    def model(body: dict[str, Any]) -> Reply:
        if first_user_text(body).startswith(TASK):  # the helper: still thinking when Stop comes
            release.wait(30)
            return Reply(text="too late")
        if not tool_results(body):
            spawn = {"name": "researcher", "message": TASK, "inject_into": "parent"}
            return Reply(calls=[Call("subagent_spawn", spawn)])
        release.wait(30)  # the parent's next round: still streaming when Stop comes
        return Reply(text="too late")

    llm.set_default(model)
    try:
        parent = turn_start(conversation=conversation, user_id=user.pk, text="What is X?")
        subagent = wait_for(
            lambda: Subagent.objects.filter(turn__isnull=False).first(),
            timeout=20,
            message="the subagent to start",
        )
        wait_for(
            lambda: len(llm.requests) >= 3,
            timeout=20,
            message="the parent's second round and the helper's first to reach the model",
        )
        turn_stop(turn=parent)
        child = wait_for(
            lambda: Turn.objects.filter(pk=subagent.turn_id).exclude(status="running").first(),
            timeout=10,
            message="the subagent's turn to stop with its parent",
        )
        assert child.status == "cancelled"
        # Each streaming round notices Stop on its own, so either may end first.
        assert wait_turn(parent.pk, timeout=10).status == "cancelled"
        delivered = wait_for(
            lambda: Message.objects.filter(conversation=conversation, origin="subagent").first(),
            timeout=10,
            message="the subagent's report",
        )
        assert delivered.content.startswith("**Subagent “researcher” ended (cancelled)**")
        subagent.refresh_from_db()
        assert subagent.status == "cancelled"
    finally:
        release.set()


def spawn_during(turn: Turn, name: str) -> Subagent:
    """What subagent_spawn's activity does for a call of ``turn`` that is running."""
    call = ToolCall.objects.create(
        conversation_id=turn.conversation_id,
        user_id=turn.user_id,
        turn=turn,
        tool="subagent_spawn",
        arguments={},
        status=ToolCall.Status.RUNNING,
    )
    return subagents.subagent_spawn(
        user_id=turn.user_id,
        spec=subagents.Spawn(name=name, message="m", inject_into=turn.conversation_id),
        parent_conversation_id=turn.conversation_id,
        parent_call_id=call.pk,
        max_depth=2,
        max_concurrent=3,
        max_rounds=5,
    )


def test_a_spawn_still_running_when_stop_came_stops_its_helper(user, conversation, llm, provider):
    # Stop reached the parent turn while subagent_spawn was running: the helper did not exist
    # yet, so the spawn itself stops it once it does.
    release = threading.Event()
    llm.set_default(lambda body: Reply(text="too late") if release.wait(30) else Reply(text=""))
    parent = Turn.objects.create(
        conversation=conversation, user=user, phase=Turn.Phase.TOOLS, cancel_requested=True
    )
    subagent = spawn_during(parent, "late")
    # Ended by the spawn itself, or by its round if a runner took it first (it notices Stop).
    report = wait_for(
        lambda: Message.objects.filter(conversation=conversation, origin="subagent").first(),
        timeout=10,
        message="the helper's report",
    )
    assert report.content.startswith("**Subagent “late” ended (cancelled)**")
    assert Turn.objects.get(pk=subagent.turn_id).status == "cancelled"
    subagent.refresh_from_db()
    assert subagent.status == "cancelled" and subagent.parent_turn_id == parent.pk
    release.set()


def test_stop_leaves_other_turns_subagents_alone(user, conversation):
    stopped = Turn.objects.create(conversation=conversation, user=user, phase=Turn.Phase.MODEL)
    other = Conversation.objects.create(owner=user, title="other")
    other_turn = Turn.objects.create(conversation=other, user=user, phase=Turn.Phase.TOOLS)
    subagent = spawn_during(other_turn, "theirs")
    turn_stop(turn=stopped)
    stopped.refresh_from_db()
    assert stopped.status == "cancelled"
    # (With no provider here, a runner left from an earlier test may fail the helper's turn on
    # its own; what matters is that Stop did not touch it.)
    child = Turn.objects.get(pk=subagent.turn_id)
    assert not child.cancel_requested and child.status != "cancelled"
    subagent.refresh_from_db()
    assert subagent.status != "cancelled"


def test_rounds_and_model_come_from_the_settings_and_arguments(user, conversation):
    configure("subagents", max_rounds=3, allowed_models=["small-model"])
    result = ok(
        run_tool(
            "subagent_spawn",
            user=user,
            conversation_id=conversation.pk,
            name="sized",
            message="m",
            model="small-model",
        )
    )
    turn = Turn.objects.get(conversation_id=result["conversation_id"])
    assert turn.max_rounds == 3 and turn.model == "small-model"
    call = run_tool(
        "subagent_spawn",
        user=user,
        conversation_id=conversation.pk,
        name="big",
        message="m",
        model="huge-model",
    )
    assert call.status == "denied"
    assert call.error == "policy: model 'huge-model' is not allowed (allowed: small-model)"


def test_inject_into_must_be_the_users_own_conversation(user, other_user, conversation):
    theirs = Conversation.objects.create(owner=other_user, title="theirs")
    call = run_tool(
        "subagent_spawn",
        user=user,
        conversation_id=conversation.pk,
        name="x",
        message="m",
        inject_into=theirs.pk,
    )
    assert call.status == "denied"
    assert call.error == f"policy: conversation {theirs.pk} is not one of your conversations"


@pytest.mark.modes
def test_a_failed_subagent_reports_that_it_failed(worker, user, conversation):
    # No provider: the helper's turn fails at once; the parent still hears about it.
    result = ok(
        run_tool(
            "subagent_spawn",
            user=user,
            conversation_id=conversation.pk,
            name="doomed",
            message="Try it.",
            inject_into="parent",
        )
    )
    delivered = wait_for(
        lambda: Message.objects.filter(conversation=conversation, origin="subagent").first(),
        timeout=20,
        message="the failure report",
    )
    assert delivered.content.startswith("**Subagent “doomed” ended (failed)**")
    assert "It ended as failed: no LLM provider." in delivered.content
    assert Subagent.objects.get(conversation_id=result["conversation_id"]).status == "failed"


@pytest.mark.modes
def test_inject_into_null_only_logs_the_answer(worker, user, conversation, llm, provider):
    llm.set_default(Reply(text="X is 42."))
    result = ok(
        run_tool(
            "subagent_spawn", user=user, conversation_id=conversation.pk, name="quiet", message=TASK
        )
    )
    assert result["result_to"] is None
    # Its status is claimed first, its answer stored a moment later.
    helper = wait_for(
        lambda: Subagent.objects.exclude(status="running").exclude(result="").first(),
        timeout=20,
        message="the helper to finish",
    )
    assert helper.status == "succeeded" and helper.result == "X is 42." and not helper.silent
    assert helper.delivered_to_id is None
    assert not Message.objects.filter(origin="subagent").exists()  # posted nowhere
    assert Message.objects.filter(conversation_id=result["conversation_id"], role="assistant")


@pytest.mark.modes
@pytest.mark.parametrize(
    "answer",
    [
        '{"silent": true, "reason": "no new releases"}',
        '```json\n{"silent": true, "reason": "no new releases"}\n```',
    ],
)
def test_a_silent_helper_posts_nothing(worker, user, conversation, llm, provider, answer):
    llm.set_default(Reply(text=answer))
    result = ok(
        run_tool(
            "subagent_spawn",
            user=user,
            conversation_id=conversation.pk,
            name="watcher",
            message="Check for new releases; stay silent if there are none.",
            inject_into="parent",
        )
    )
    assert result["result_to"] == conversation.pk
    helper = wait_for(
        lambda: Subagent.objects.exclude(status="running").exclude(result="").first(),
        timeout=20,
        message="the helper to finish",
    )
    assert helper.silent and helper.result == "no new releases"
    assert not Message.objects.filter(conversation=conversation, origin="subagent").exists()
    # The helper was told how to stay silent.
    task = Message.objects.get(conversation_id=result["conversation_id"], role="user")
    assert '{"silent": true' in task.content


def test_silent_answers_are_recognised_only_when_they_say_so():
    assert subagents.silent_reason('{"silent": true, "reason": "nothing"}') == "nothing"
    assert subagents.silent_reason('{"silent": true}') == "nothing to report"
    assert subagents.silent_reason('{"silent": false, "reason": "x"}') is None
    assert subagents.silent_reason("Nothing new: the silent treatment.") is None
    assert subagents.silent_reason('{"silent": "yes"}') is None


def test_inject_into_parent_needs_a_conversation(user):
    call = run_tool("subagent_spawn", user=user, name="x", message="m", inject_into="parent")
    assert call.status == "denied" and "needs a conversation" in call.error


def test_an_unknown_tool_is_an_error_result(user):
    call = run_tool("subagent_kill", user=user, name="x")
    assert call.status == "failed"
    assert call.error.startswith("unknown tool 'subagent_kill'; available tools: ")
    assert "subagent_spawn" in call.error and "schedule_add" in call.error


def test_the_upgrade_keeps_running_helpers_delivering_to_their_parent(user):
    """platform.0010: a helper spawned when a null ``inject_into`` meant "the parent" and still
    running keeps delivering there; finished ones and explicit targets stay as they were."""
    import importlib

    from django.apps import apps

    migration = importlib.import_module("platform_app.migrations.0010_subagent_silent_and_log_only")
    parent = Conversation.objects.create(owner=user, title="parent")
    other = Conversation.objects.create(owner=user, title="other")

    def helper(status: str, inject_into: Any = None) -> Subagent:
        return Subagent.objects.create(
            user=user,
            name="helper",
            message="look it up",
            parent_conversation=parent,
            inject_into=inject_into,
            conversation=Conversation.objects.create(owner=user, title="helper"),
            status=status,
        )

    running, done, aimed = helper("running"), helper("succeeded"), helper("running", other)
    migration.running_keep_their_parent(apps, None)
    assert Subagent.objects.get(pk=running.pk).inject_into_id == parent.pk
    assert Subagent.objects.get(pk=done.pk).inject_into_id is None
    assert Subagent.objects.get(pk=aimed.pk).inject_into_id == other.pk
