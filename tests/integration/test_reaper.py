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
