"""A tool result that cannot be stored ends the call ``failed``, with the reason, instead of
raising out of the finish and leaving the call ``running`` until the reaper (issue 20,
finding 1: the charset bomb's bytes failed on "Object of type bytes is not JSON
serializable"). The activity is a double run in this process; the database is the mode's."""

from __future__ import annotations

from typing import Any

import pytest

from tests.tools.calls import run_tool
from tools_app.models import AuditRecord, ToolCall
from tools_app.registry import override_activity
from tools_app.runtime import ActivityContext

pytestmark = pytest.mark.modes


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b"\x00raw bytes", "Object of type bytes is not JSON serializable"),
        ({1, 2}, "Object of type set is not JSON serializable"),
        (float("nan"), "Out of range float values are not JSON compliant"),
    ],
    ids=["bytes", "set", "nan"],
)
def test_it_fails_a_call_whose_result_cannot_be_stored(
    conversation: Any, value: object, reason: str
) -> None:
    def unstorable(args: Any, ctx: ActivityContext) -> dict[str, Any]:
        return {"body": value}

    with override_activity("current_time", unstorable):
        call = run_tool(
            "current_time",
            user=conversation.owner,
            conversation_id=conversation.pk,
            timezone="UTC",
        )

    assert call.status == ToolCall.Status.FAILED, (call.status, call.result)
    assert call.error == f"the tool returned a result that cannot be stored: {reason}"
    assert call.result["success"] is False and call.result["error"] == call.error
    record = AuditRecord.objects.get(tool_call=call, kind=AuditRecord.Kind.CALL)
    assert record.status == "failed" and record.error == call.error


def test_it_keeps_a_result_with_nul_characters(conversation: Any) -> None:
    """Text with NUL characters is JSON, but PostgreSQL's jsonb refuses it: it is stored with
    each NUL replaced, in both modes alike."""

    def with_nul(args: Any, ctx: ActivityContext) -> dict[str, Any]:
        return {"text": "a\x00b", "nested": [{"k\x00": "\x00"}]}

    with override_activity("current_time", with_nul):
        call = run_tool(
            "current_time",
            user=conversation.owner,
            conversation_id=conversation.pk,
            timezone="UTC",
        )

    assert call.status == ToolCall.Status.SUCCEEDED, (call.status, call.error)
    assert call.result["text"] == "a\ufffdb"
    assert call.result["nested"] == [{"k\ufffd": "\ufffd"}]
