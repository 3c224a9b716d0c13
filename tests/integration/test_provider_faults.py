"""A provider that fails mid-turn: the runner retries as the admin set it, the person sees it
happen, and the turn ends clearly — succeeded after a retry, or failed with the words."""

from __future__ import annotations

import time

import pytest

from chat_app.models import Message, Turn
from chat_app.services.turns import turn_start, turn_stop
from tests.conftest import wait_turn
from tests.helpers import wait_for
from tests.llm_server import Call, Reply

pytestmark = [pytest.mark.modes]

BUSY = {"error": {"message": "upstream busy", "type": "server_error"}}
SLOW_DOWN = {"error": {"message": "slow down", "type": "rate_limit_error"}}


def test_a_turn_survives_a_503_and_a_429_then_answers(worker, conversation, user, llm, provider):
    llm.script(
        Reply(error=(503, BUSY)),
        Reply(error=(429, SLOW_DOWN), error_headers={"Retry-After": "0.1"}),
        Reply(text="Checking.", calls=[Call("current_time", {"timezone": "UTC"})]),
        Reply(text="broken off", reset_after_text=True),
        Reply(text="It is noon."),
    )
    turn = turn_start(conversation=conversation, user_id=user.pk, text="time?")
    turn = wait_turn(turn.pk, timeout=30)
    assert turn.status == Turn.Status.SUCCEEDED, turn.error
    assert len(llm.requests) == 5
    replies = list(
        Message.objects.filter(turn=turn, role="assistant").values_list("content", "state", "note")
    )
    # The retried rounds kept only the text of the attempt that succeeded, and no note.
    assert replies == [("Checking.", "complete", ""), ("It is noon.", "complete", "")]
    assert not Message.objects.filter(turn=turn, role="notice").exists()


def test_a_provider_that_keeps_failing_fails_the_turn_with_clear_words(
    worker, conversation, user, llm, provider
):
    provider.max_retries = 2
    provider.save()
    llm.set_default(Reply(error=(503, BUSY)))
    turn = turn_start(conversation=conversation, user_id=user.pk, text="hello?")
    turn = wait_turn(turn.pk, timeout=30)
    assert turn.status == Turn.Status.FAILED
    words = "the LLM server failed (503): upstream busy (gave up after 3 attempts)"
    assert turn.error == words
    notice = Message.objects.get(turn=turn, role="notice")
    assert notice.content == f"⚠ {words}"
    assert Message.objects.get(turn=turn, role="assistant").state == "error"
    assert len(llm.requests) == 3


def test_no_retries_when_the_admin_set_none(worker, conversation, user, llm, provider):
    provider.max_retries = 0
    provider.save()
    llm.set_default(Reply(error=(503, BUSY)))
    turn = wait_turn(turn_start(conversation=conversation, user_id=user.pk, text="hi").pk)
    assert turn.status == Turn.Status.FAILED
    assert turn.error == "the LLM server failed (503): upstream busy"
    assert len(llm.requests) == 1


def test_a_garbled_then_stalled_stream_is_retried(worker, conversation, user, llm, provider):
    provider.timeout_seconds = 1
    provider.save()
    llm.script(
        Reply(text="Hel", garbled_after_text="{oops"),
        Reply(text="Hel", hang_after_text=True),
        Reply(text="Hello."),
    )
    turn = wait_turn(
        turn_start(conversation=conversation, user_id=user.pk, text="hi").pk, timeout=30
    )
    assert turn.status == Turn.Status.SUCCEEDED, turn.error
    assert Message.objects.get(turn=turn, role="assistant").content == "Hello."


def test_stop_ends_a_turn_that_waits_to_retry(worker, conversation, user, llm, provider):
    llm.script(Reply(error=(429, SLOW_DOWN), error_headers={"Retry-After": "60"}))
    turn = turn_start(conversation=conversation, user_id=user.pk, text="hi")
    message = wait_for(
        lambda: Message.objects.filter(turn=turn, role="assistant").exclude(note="").first(),
        timeout=15,
        message="the retry note on the streaming message",
    )
    assert message.state == "streaming"
    assert message.note.startswith("retrying in 60.0 s (attempt 2 of 4): ")
    assert "rate limiting or out of quota (429): slow down" in message.note
    started = time.monotonic()
    turn_stop(turn=turn)
    turn = wait_turn(turn.pk, timeout=10)
    assert turn.status == Turn.Status.CANCELLED
    assert time.monotonic() - started < 3  # the wait is cancelled, not sat out
    message.refresh_from_db()
    assert message.state == "cancelled" and message.note == ""
    assert len(llm.requests) == 1
