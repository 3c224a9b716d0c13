"""A call whose database connection was lost while its activity ran (a database restart or
failover terminates every connection) is finished on a new connection, with its own result
(tools_app.services.execution). The end-to-end case, with real processes and every
PostgreSQL connection terminated, is tests/integration/test_db_failover.py."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import OperationalError

from tests.tools.calls import ok, run_tool
from tools_app.models import AuditRecord, ToolCall
from tools_app.services import execution

pytestmark = pytest.mark.modes


def lose_the_connection(monkeypatch: pytest.MonkeyPatch, times: int) -> list[int]:
    """The first ``times`` ends of a call fail as on a terminated connection."""
    real = execution.call_end
    failed: list[int] = []

    def call_end(call: ToolCall, fields: dict[str, Any], **kwargs: Any) -> bool:
        if len(failed) < times:
            failed.append(call.pk)
            raise OperationalError("terminating connection due to administrator command")
        return real(call, fields, **kwargs)

    monkeypatch.setattr(execution, "call_end", call_end)
    monkeypatch.setattr(execution, "FINISH_RETRY_SECONDS", (0.0, 0.0))
    return failed


def test_it_finishes_the_call_on_a_new_connection(
    conversation: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    failed = lose_the_connection(monkeypatch, times=1)
    call = run_tool(
        "current_time", user=conversation.owner, conversation_id=conversation.pk, timezone="UTC"
    )
    assert failed == [call.pk]
    ok(call)
    record = AuditRecord.objects.get(tool_call=call, kind=AuditRecord.Kind.CALL)
    assert record.status == "succeeded"


def test_it_leaves_the_call_to_the_reaper_when_the_database_stays_away(
    conversation: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    lose_the_connection(monkeypatch, times=3)
    with pytest.raises(OperationalError):
        run_tool(
            "current_time",
            user=conversation.owner,
            conversation_id=conversation.pk,
            timezone="UTC",
        )
    call = ToolCall.objects.get(conversation=conversation)
    assert call.status == ToolCall.Status.RUNNING  # toolcall_reap_lost ends it
    assert not AuditRecord.objects.filter(tool_call=call).exists()
