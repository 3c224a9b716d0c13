"""Odd input never breaks binding: arguments a check trips over, or that no database can store,
become a stored, audited failed (or refused) call with words that reveal nothing of the
server — never a raw exception, and never a call left unrecorded."""

from __future__ import annotations

import json

import pytest

from chat_app.services.turns import turn_start
from tests.conftest import wait_turn
from tools_app.executors.time.tools import CurrentTime
from tools_app.models import AuditRecord, ToolCall

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.modes]


def slash(conversation, user, text: str) -> ToolCall:
    turn = wait_turn(turn_start(conversation=conversation, user_id=user.pk, text=text).pk)
    call = ToolCall.objects.get(turn=turn)
    assert AuditRecord.objects.filter(tool_call=call).exists()
    return call


def test_a_superscript_digit_chat_id_is_refused_by_policy(worker, user, conversation):
    args = {"channel": "conversation", "chat_id": "²", "text": "hi"}
    call = slash(conversation, user, f"/send_message {json.dumps(args)}")
    assert call.status == "denied"
    assert "chat_id must be a conversation id" in call.error


def test_a_300_character_timezone_is_an_invalid_argument(worker, user, conversation):
    call = slash(conversation, user, f'/current_time {{"timezone": "{"A" * 300}"}}')
    assert call.status == "failed" and "unknown timezone" in call.error


def test_a_nul_character_in_arguments_is_refused_and_stored(worker, user, conversation):
    call = slash(conversation, user, '/memory_save {"content": "a\\u0000b"}')
    assert call.status == "failed" and "NUL character" in call.error
    assert "\x00" not in call.raw_arguments and call.arguments == {"content": "a\ufffdb"}


def test_a_call_refused_for_other_reasons_is_stored_without_its_nul(worker, user, conversation):
    call = slash(conversation, user, '/current_time {"timezone": "Europe/\\u0000Berlin"}')
    assert call.status == "failed" and "unknown timezone" in call.error
    assert "\x00" not in json.dumps(call.arguments, ensure_ascii=False)


@pytest.mark.embedded_only  # the crashing check is patched into this process
def test_a_check_that_crashes_fails_the_call_without_revealing_the_server(
    worker, user, conversation, monkeypatch
):
    def broken(self, settings, ctx):
        raise RuntimeError("/opt/controlcenter/.venv/lib/python3.11/secret.py exploded")

    monkeypatch.setattr(CurrentTime, "check_policy", broken)
    call = slash(conversation, user, "/current_time")
    assert call.status == "failed"
    assert "could not check these arguments" in call.error
    assert "/opt/" not in json.dumps(call.result) and "exploded" not in call.error
