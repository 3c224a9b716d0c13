"""A call's end and its audit record are stored together (tools_app.services.execution):
one statement on PostgreSQL, one transaction on SQLite. A call never ends without its record,
and a record never says a call ended that did not."""

from __future__ import annotations

from typing import Any

import pytest

from tests.tools.calls import ok, run_tool
from tools_app.models import AuditRecord, ToolCall
from tools_app.services import audit

pytestmark = pytest.mark.modes


def test_a_finished_call_has_one_complete_audit_record(conversation: Any) -> None:
    call = run_tool(
        "current_time",
        user=conversation.owner,
        conversation_id=conversation.pk,
        call_source="chat",
        timezone="UTC",
    )
    ok(call)
    record = AuditRecord.objects.get(tool_call=call, kind=AuditRecord.Kind.CALL)
    assert record.status == "succeeded" and record.result == call.result
    assert record.arguments == {"timezone": "UTC"} and record.error == ""
    assert record.started_at == call.started_at and record.finished_at == call.finished_at
    assert record.duration_ms == call.duration_ms and record.worker == call.worker
    # Copied inside the INSERT, as they are now: the record outlives both.
    assert record.username == conversation.owner.username
    assert record.conversation_title == conversation.title
    assert record.user_id == conversation.owner.pk
    assert record.conversation_id == conversation.pk
    assert (record.group, record.tool, record.source) == ("time", "current_time", "chat")


def test_a_call_without_a_user_or_conversation_is_recorded_with_blanks(user: Any) -> None:
    call = run_tool("current_time", user=None, timezone="UTC")
    ok(call)
    record = AuditRecord.objects.get(tool_call=call, kind=AuditRecord.Kind.CALL)
    assert (record.username, record.conversation_title) == ("", "")
    assert record.user_id is None and record.conversation_id is None


def test_a_finish_whose_record_cannot_be_stored_does_not_end_the_call(
    conversation: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record's INSERT fails (here: a value its column refuses) → the call's UPDATE is
    undone with it: the call stays running (the reaper ends it, with a record)."""
    real = audit._call_fields

    def refused(call: ToolCall, changes: dict[str, Any] | None = None) -> dict[str, Any]:
        return {**real(call, changes), "duration_ms": -1}  # CHECK (duration_ms >= 0)

    monkeypatch.setattr(audit, "_call_fields", refused)
    with pytest.raises(Exception, match="(?i)check|constraint"):
        run_tool(
            "current_time",
            user=conversation.owner,
            conversation_id=conversation.pk,
            call_source="chat",
            timezone="UTC",
        )
    call = ToolCall.objects.get(conversation=conversation)
    assert call.status == ToolCall.Status.RUNNING and call.finished_at is None
    assert not AuditRecord.objects.filter(tool_call=call).exists()
