"""The maintenance pass moves on a turn whose last call finished but whose finishing process
died — and only then: while that process is alive, it moves the turn on itself."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.utils import timezone

from chat_app.models import Conversation, Turn
from chat_app.services import reaper
from tests.conftest import _SHARED, shared_processes_paused
from tests.e2e.conftest import _SERVERS
from tools_app.models import ToolCall


@pytest.fixture
def advanced(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    moved: list[int] = []
    monkeypatch.setattr(reaper, "turn_advance", moved.append)
    return moved


def turn_with_a_finished_call(user: Any, *, finished_ago: float) -> Turn:
    conversation = Conversation.objects.create(owner=user, title="Reaped")
    turn = Turn.objects.create(conversation=conversation, user=user, phase=Turn.Phase.TOOLS)
    ToolCall.objects.create(
        conversation=conversation,
        turn=turn,
        user=user,
        tool="current_time",
        group="time",
        status=ToolCall.Status.SUCCEEDED,
        finished_at=timezone.now() - timedelta(seconds=finished_ago),
    )
    return turn


def test_a_turn_whose_last_call_just_finished_is_left_to_the_finishing_process(
    user: Any, advanced: list[int]
) -> None:
    turn_with_a_finished_call(user, finished_ago=0.1)

    reaper.turns_reap_lost()

    assert advanced == []


def test_a_turn_whose_last_call_finished_a_heartbeat_timeout_ago_moves_on(
    user: Any, advanced: list[int]
) -> None:
    # The session's app servers (the e2e tests' and the shared ones) run the same maintenance
    # pass on this database: a turn this old is theirs to move on too, so they wait.
    with shared_processes_paused(only=[*_SHARED, *_SERVERS.values()]):
        turn = turn_with_a_finished_call(user, finished_ago=settings.AGENT_HEARTBEAT_TIMEOUT + 1)
        running = turn_with_a_finished_call(user, finished_ago=settings.AGENT_HEARTBEAT_TIMEOUT + 1)
        ToolCall.objects.create(
            conversation=running.conversation,
            turn=running,
            user=user,
            tool="current_time",
            group="time",
            status=ToolCall.Status.RUNNING,
        )
        reaper.turns_reap_lost()

    assert advanced == [turn.pk]


def test_a_reply_that_ends_after_the_reaper_ended_its_turn_is_dropped_but_its_cost_kept(
    user: Any, provider: Any
) -> None:
    """The runner looked dead (a long pause) and the reaper ended the turn while the reply
    streamed: when the reply does end, what the reaper told the person stands — the reply is
    not stored over it and the turn is not ended twice — and the round's usage is recorded."""
    from chat_app.models import Message, UsageRecord
    from chat_app.providers import ModelReply
    from chat_app.services.loop import round_complete, round_prepare

    conversation = Conversation.objects.create(owner=user, title="Reaped mid-reply")
    turn = Turn.objects.create(conversation=conversation, user=user, phase=Turn.Phase.MODEL)
    Message.objects.create(conversation=conversation, turn=turn, role="user", content="hi")
    plan = round_prepare(turn.pk, runner="runner-a")
    assert plan is not None
    Turn.objects.filter(pk=turn.pk).update(
        heartbeat_at=timezone.now() - timedelta(seconds=settings.AGENT_HEARTBEAT_TIMEOUT + 1)
    )
    assert reaper._end_streaming(Turn.objects.select_related("conversation").get(pk=turn.pk))

    round_complete(
        plan, "late", ModelReply(text="late", tool_calls=[], stop_reason="stop", usage={})
    )

    turn.refresh_from_db()
    assert turn.status == Turn.Status.FAILED and turn.error.startswith("agent runner lost")
    reply = Message.objects.get(pk=plan.message_id)
    assert reply.state == Message.State.ERROR and reply.content == ""
    assert Message.objects.filter(turn=turn, role=Message.Role.NOTICE).count() == 1
    assert UsageRecord.objects.filter(turn=turn).count() == 1
