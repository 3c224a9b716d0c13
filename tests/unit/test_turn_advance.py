"""``turn_advance``'s one-statement fast path (a chat turn whose calls have all finished goes
back to the model) decides as the state machine does, on SQLite and PostgreSQL, and moves a
turn on once however many of its calls finish at the same moment.

The e2e servers, runner and worker of the session share the test database, and their
maintenance passes move on a turn left in "tools" whose calls all ended long ago (the reaper).
So a turn here is made with its calls in one transaction, and an ended call ended just now, as
the product's are: no other process's pass takes the turn before the test does."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection, transaction
from django.utils import timezone

from chat_app.agent_kinds import FINAL_ANSWER
from chat_app.models import Turn
from chat_app.services import turns
from tools_app.models import ToolCall

pytestmark = pytest.mark.modes


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    rounds: list[int] = []
    monkeypatch.setattr(turns, "_queue_round", rounds.append)
    return rounds


def tools_turn(conversation: Any, *calls: str | tuple[str, str], **fields: Any) -> Turn:
    """A turn in "tools" with these calls (a status, or a (status, tool) pair)."""
    with transaction.atomic():
        turn = Turn.objects.create(
            conversation=conversation,
            user_id=conversation.owner_id,
            phase=Turn.Phase.TOOLS,
            heartbeat_at=timezone.now() - timezone.timedelta(minutes=5),
            requeued=2,
            **fields,
        )
        for status in calls:
            call(turn, *((status,) if isinstance(status, str) else status))
    return turn


def call(turn: Turn, status: str, tool: str = "current_time") -> ToolCall:
    ended = status in ToolCall.TERMINAL
    return ToolCall.objects.create(
        conversation_id=turn.conversation_id,
        user_id=turn.user_id,
        turn=turn,
        tool=tool,
        arguments={},
        status=status,
        finished_at=timezone.now() if ended else None,
    )


def test_a_turn_whose_calls_all_ended_goes_back_to_the_model(
    conversation: Any, queued: list[int]
) -> None:
    turn = tools_turn(
        conversation, ToolCall.Status.SUCCEEDED, ToolCall.Status.FAILED, ToolCall.Status.DENIED
    )
    before = timezone.now()
    turns.turn_advance(turn.pk)
    turn.refresh_from_db()
    assert queued == [turn.pk]
    assert (turn.phase, turn.status, turn.requeued) == ("model", "running", 0)
    assert turn.heartbeat_at is not None and turn.heartbeat_at >= before.replace(microsecond=0)


@pytest.mark.parametrize(
    ("fields", "status", "tool"),
    [
        ({}, ToolCall.Status.RUNNING, "current_time"),  # a call is still running
        ({}, ToolCall.Status.QUEUED, "current_time"),
        ({"status": Turn.Status.SUCCEEDED}, ToolCall.Status.SUCCEEDED, "current_time"),
        ({"kind": Turn.Kind.SLASH}, ToolCall.Status.SUCCEEDED, "current_time"),
        ({"cancel_requested": True}, ToolCall.Status.SUCCEEDED, "current_time"),
    ],
)
def test_a_turn_that_must_not_go_back_stays(
    conversation: Any, queued: list[int], fields: dict[str, Any], status: str, tool: str
) -> None:
    turn = tools_turn(conversation, (status, tool), **fields)
    assert not turns._back_to_model(turn.pk)
    turn.refresh_from_db()
    assert turn.phase == "tools" and turn.requeued == 2


def test_a_successful_final_answer_ends_the_turn_instead(
    conversation: Any, queued: list[int]
) -> None:
    turn = tools_turn(conversation, (ToolCall.Status.SUCCEEDED, FINAL_ANSWER))
    assert not turns._back_to_model(turn.pk)
    # A failed one does not count.
    failed = tools_turn(conversation, (ToolCall.Status.FAILED, FINAL_ANSWER))
    assert turns._back_to_model(failed.pk)


def test_another_turns_running_call_does_not_hold_this_one(
    conversation: Any, queued: list[int]
) -> None:
    turn = tools_turn(conversation, ToolCall.Status.SUCCEEDED)
    other = tools_turn(conversation, ToolCall.Status.RUNNING)
    assert turns._back_to_model(turn.pk)
    assert not turns._back_to_model(other.pk)


def test_a_turn_advances_once_when_its_calls_finish_together(
    conversation: Any, queued: list[int]
) -> None:
    turn = tools_turn(conversation, *[ToolCall.Status.SUCCEEDED] * 4)
    together = threading.Barrier(4)
    errors: list[BaseException] = []

    def finisher() -> None:  # what each call's finish does last
        try:
            together.wait(5)
            turns.turn_advance(turn.pk)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=finisher) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert errors == []
    assert queued == [turn.pk]
    turn.refresh_from_db()
    assert (turn.phase, turn.requeued) == ("model", 0)
