"""A call is claimed by one worker and ends once; its end and its audit record are stored in
one transaction (tools_app.services.execution). A call never ends without its record, and a
record never says a call ended that did not."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection

from tests.tools.calls import ok, run_tool
from tools_app.models import AuditRecord, ToolCall
from tools_app.runtime import BindContext
from tools_app.services import audit, execution
from tools_app.services.binding import CallRequest, toolcall_bind

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
    # Copied as they are when the call runs: the record outlives both.
    assert record.username == conversation.owner.username
    assert record.conversation_title == conversation.title
    assert record.user_id == conversation.owner.pk
    assert record.conversation_id == conversation.pk
    assert (record.group, record.tool, record.source) == ("time", "current_time", "chat")


def test_a_call_without_a_user_or_conversation_is_recorded_with_blanks(user: Any) -> None:
    # Nobody to check grants for: refused (nothing is granted to no one), and recorded.
    call = run_tool("current_time", user=None, timezone="UTC")
    assert (call.status, call.policy_verdict) == ("denied", "not_granted")
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


def queued_call(conversation: Any) -> ToolCall:
    call = toolcall_bind(
        request=CallRequest(tool="current_time", arguments={"timezone": "UTC"}),
        ctx=BindContext(
            user_id=conversation.owner_id, conversation_id=conversation.pk, source="chat"
        ),
    )
    assert call.status == ToolCall.Status.QUEUED
    return call


def test_a_call_is_claimed_once_by_two_workers(conversation: Any) -> None:
    call = queued_call(conversation)
    together = threading.Barrier(2)
    claims: list[Any] = []

    def worker() -> None:  # the same message delivered twice (a redelivery)
        try:
            together.wait(5)
            claims.append(execution._claim(call.pk))
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    won = [claimed for claimed in claims if claimed is not None]
    assert len(claims) == 2 and len(won) == 1
    claimed, audit_open = won[0]
    assert claimed.status == ToolCall.Status.RUNNING and claimed.started_at is not None
    assert claimed.version == call.version + 1 and not audit_open
    assert execution._claim(call.pk) is None  # and never again


def test_a_claimed_call_that_ended_meanwhile_is_not_finished_again(conversation: Any) -> None:
    """The reaper failed the call (its worker looked lost); the worker's own finish, late,
    changes nothing: the call and its one record say what the reaper stored."""
    call = queued_call(conversation)
    claimed = execution._claim(call.pk)
    assert claimed is not None
    running, audit_open = claimed
    reaped = ToolCall.objects.get(pk=call.pk)
    assert execution.toolcall_finish(
        reaped,
        status=ToolCall.Status.FAILED,
        result={"success": False, "error": "worker lost"},
        error="worker lost",
        only_if=ToolCall.Status.RUNNING,
    )
    assert not execution.toolcall_finish(
        running,
        status=ToolCall.Status.SUCCEEDED,
        result={"success": True},
        only_if=ToolCall.Status.RUNNING,
        current=True,
        audit_open=audit_open,
    )
    call.refresh_from_db()
    assert (call.status, call.error) == (ToolCall.Status.FAILED, "worker lost")
    record = AuditRecord.objects.get(tool_call=call, kind=AuditRecord.Kind.CALL)
    assert (record.status, record.error) == (ToolCall.Status.FAILED, "worker lost")
