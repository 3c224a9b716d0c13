"""A turn end to end through the real worker (in-process thread or separate process)."""

from __future__ import annotations

import pytest

from chat_app.models import Message, Turn
from chat_app.services.turns import turn_start, turn_stop
from tests.conftest import wait_turn
from tests.helpers import tool_json, wait_for
from tests.llm_server import Call, Reply
from tools_app.models import ToolCall

pytestmark = [pytest.mark.modes]


def test_it_runs_a_slash_command_without_a_provider(worker, conversation, user):
    turn = turn_start(
        conversation=conversation,
        user_id=user.pk,
        text='/current_time {"timezone": "Europe/Berlin"}',
    )
    turn = wait_turn(turn.pk)
    assert turn.status == Turn.Status.SUCCEEDED
    call = ToolCall.objects.get(turn=turn)
    assert call.status == ToolCall.Status.SUCCEEDED
    assert call.source == ToolCall.Source.SLASH
    assert call.result["success"] is True
    assert call.result["timezone"] == "Europe/Berlin"


def test_it_runs_a_turn_with_two_parallel_tool_calls(worker, conversation, user, llm, provider):
    llm.script(
        Reply(
            text="Let me check.",
            calls=[
                Call("current_time", {"timezone": "UTC"}),
                Call("current_time", {"timezone": "Asia/Tokyo"}),
            ],
        ),
        Reply(text="It is late in Tokyo."),
    )
    turn = turn_start(conversation=conversation, user_id=user.pk, text="What time is it?")
    turn = wait_turn(turn.pk)
    assert turn.status == Turn.Status.SUCCEEDED, turn.error
    calls = list(ToolCall.objects.filter(turn=turn).order_by("index"))
    assert [c.status for c in calls] == ["succeeded", "succeeded"]
    assert [c.arguments["timezone"] for c in calls] == ["UTC", "Asia/Tokyo"]
    assistant = list(Message.objects.filter(turn=turn, role="assistant"))
    assert [m.content for m in assistant] == ["Let me check.", "It is late in Tokyo."]
    # The second request carried both results back with their call ids.
    second = llm.requests[1]
    tool_msgs = [m for m in second["messages"] if m["role"] == "tool"]
    assert {m["tool_call_id"] for m in tool_msgs} == {c.call_id for c in calls}
    assert all(tool_json(m["content"])["success"] for m in tool_msgs)


def test_it_reports_invalid_arguments_to_the_model(worker, conversation, user, llm, provider):
    llm.script(
        Reply(calls=[Call("current_time", {"timezone": "Mars/Olympus"}), Call("nope", {})]),
        Reply(text="Sorry."),
    )
    turn = wait_turn(turn_start(conversation=conversation, user_id=user.pk, text="time?").pk)
    assert turn.status == Turn.Status.SUCCEEDED
    calls = list(ToolCall.objects.filter(turn=turn).order_by("index"))
    assert calls[0].status == "failed"
    assert "unknown timezone 'Mars/Olympus'" in calls[0].error
    assert "timezone" in calls[0].error
    assert calls[1].status == "failed"
    assert "unknown tool 'nope'" in calls[1].error
    results = [tool_json(m["content"]) for m in llm.requests[1]["messages"] if m["role"] == "tool"]
    assert results[0]["success"] is False and "Mars/Olympus" in results[0]["error"]


def test_stop_mid_stream_leaves_nothing_running(worker, conversation, user, llm, provider):
    llm.script(Reply(text="word " * 400, chunk_delay=0.02, chunk_size=5))
    turn = turn_start(conversation=conversation, user_id=user.pk, text="talk a lot")
    wait_for(
        lambda: (
            Message.objects.filter(turn=turn, role="assistant").exclude(content="").exists()
            or llm.requests
        ),
        message="stream to start",
    )
    turn_stop(turn=turn)
    turn = wait_turn(turn.pk, timeout=5)
    assert turn.status == Turn.Status.CANCELLED
    msg = Message.objects.get(turn=turn, role="assistant")
    assert msg.state == Message.State.CANCELLED
    assert not ToolCall.objects.filter(status="running").exists()


def test_a_message_while_a_turn_runs_is_refused_and_a_turn_reads_the_tree_once(conversation, user):
    """One read of the conversation's turns tells sending a message both whether one runs
    and where the new turn goes (its parent); a second message, chat or command, is refused
    while the first runs."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from chat_app.services.turns import TurnError

    # Running its tools: no runner or worker of the session takes it meanwhile.
    first = Turn.objects.create(conversation=conversation, user=user, phase=Turn.Phase.TOOLS)
    with CaptureQueriesContext(connection) as seen:
        for text in ("second", '/current_time {"timezone": "UTC"}'):
            with pytest.raises(TurnError, match="still working on the previous message"):
                turn_start(conversation=conversation, user_id=user.pk, text=text)
    turn_reads = [q["sql"] for q in seen.captured_queries if '"chat_app_turn"' in q["sql"]]
    assert len(turn_reads) == 2, turn_reads  # one per message, nothing written
    Turn.objects.filter(pk=first.pk).update(status=Turn.Status.SUCCEEDED)
    with CaptureQueriesContext(connection) as seen:
        second = turn_start(conversation=conversation, user_id=user.pk, text="second")
    reads = [
        q["sql"]
        for q in seen.captured_queries
        if q["sql"].startswith("SELECT") and '"chat_app_turn"' in q["sql"]
    ]
    assert len(reads) == 1, reads
    assert second.parent_id == first.pk
