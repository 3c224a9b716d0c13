"""Writing the audit trail. Reads (filters, search, export) are in tools_app/selectors_audit.py."""

from __future__ import annotations

import json
import re
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Model
from django.db.models.expressions import RawSQL

from tools_app.models import AuditRecord, ToolCall

RESULT_CAP = 16_000  # characters of JSON kept per result
_SECRET_KEY = re.compile(
    r"pass(word|wd)?|secret|token|api[_-]?key|authori[sz]ation|cookie|credential|private[_-]?key",
    re.IGNORECASE,
)
REDACTED = "***redacted***"


def redact(value: Any) -> Any:
    """Replace values stored under secret-looking keys (also in nested headers)."""
    if isinstance(value, dict):
        return {
            k: (REDACTED if isinstance(k, str) and _SECRET_KEY.search(k) else redact(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


def cap_result(result: Any) -> Any:
    if result is None:
        return None
    text = json.dumps(result, ensure_ascii=False, default=str)
    if len(text) <= RESULT_CAP:
        return result
    return {"truncated": True, "size": len(text), "preview": text[:RESULT_CAP]}


def _call_fields(call: ToolCall) -> dict[str, Any]:
    return {
        "conversation_id": call.conversation_id,
        "source": call.source,
        "group": call.group,
        "tool": call.tool,
        "arguments": redact(call.arguments if call.arguments is not None else call.raw_arguments),
        "status": call.status,
        "policy_verdict": call.policy_verdict,
        "policy_reason": call.policy_reason,
        "result": cap_result(redact(call.result)),
        "error": call.error,
        "started_at": call.started_at,
        "finished_at": call.finished_at,
        "duration_ms": call.duration_ms,
        "worker": call.worker,
        "sandbox_id": call.sandbox_id,
    }


def audit_call(call: ToolCall, *, new: bool = False) -> None:
    """Open (``new``) or complete the record of ``call`` (one record per call)."""
    fields = _call_fields(call)
    if not new and (
        AuditRecord.objects.filter(kind=AuditRecord.Kind.CALL, tool_call=call).update(**fields)
    ):
        return
    AuditRecord.objects.create(
        kind=AuditRecord.Kind.CALL,
        tool_call=call,
        user_id=call.user_id,
        username=_column_of("username", get_user_model(), call.user_id),
        conversation_title=_conversation_title(call.conversation_id),
        **fields,
    )


def _column_of(column: str, model: type[Model], pk: int | None) -> Any:
    """``column`` of the row ``pk`` ('' if there is none), read inside the INSERT itself: the
    record keeps the username and conversation title as they are now (it outlives both), and
    costs no query of its own. Plain SQL: the ORM's subquery takes longer to build than the
    whole INSERT takes to run."""
    if pk is None:
        return ""
    qn = connection.ops.quote_name
    table, key = model._meta.db_table, str(model._meta.pk.column if model._meta.pk else "id")
    # Our own table and column names; the only value is a parameter.
    row = f"SELECT {qn(column)} FROM {qn(table)} WHERE {qn(key)} = %s"  # noqa: S608
    return RawSQL(f"COALESCE(({row}), '')", [pk])  # noqa: S611


def _conversation_title(conversation_id: int | None) -> Any:
    from chat_app.models import Conversation

    return _column_of("title", Conversation, conversation_id)


def audit_approval(
    *, call: ToolCall, user: Any, decision: str, before: Any = None, after: Any = None
) -> AuditRecord:
    return AuditRecord.objects.create(
        kind=AuditRecord.Kind.APPROVAL,
        tool_call=call,
        user=user,
        username=getattr(user, "username", ""),
        conversation_id=call.conversation_id,
        source=call.source,
        group=call.group,
        tool=call.tool,
        arguments=redact(after if after is not None else call.arguments),
        status=decision,
        detail={
            "decision": decision,
            "arguments_before": redact(before),
            "arguments_after": redact(after),
        },
    )


def audit_settings_change(
    *, user: Any, group: str, tool: str = "", before: dict[str, Any], after: dict[str, Any]
) -> AuditRecord:
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    return AuditRecord.objects.create(
        kind=AuditRecord.Kind.SETTINGS,
        user=user,
        username=getattr(user, "username", ""),
        group=group,
        tool=tool,
        status="changed",
        detail={"before": redact(before), "after": redact(after), "changed": changed},
    )
