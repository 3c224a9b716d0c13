"""Writing the audit trail. Reads (filters, search, export) are in tools_app/selectors_audit.py."""

from __future__ import annotations

import json
import re
from typing import Any

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
    existing = AuditRecord.objects.filter(kind=AuditRecord.Kind.CALL, tool_call=call)
    if not new and existing.update(**fields):
        return
    title, username = "", ""
    if call.conversation_id is not None:
        from chat_app.models import Conversation

        row = (
            Conversation.objects.filter(pk=call.conversation_id)
            .values_list("title", "owner_id", "owner__username")
            .first()
        )
        if row is not None:
            title = row[0]
            if row[1] == call.user_id:
                username = row[2]
    if call.user_id is not None and not username:
        from django.contrib.auth import get_user_model

        username = (
            get_user_model().objects.filter(pk=call.user_id).values_list("username", flat=True)
        ).first() or ""
    AuditRecord.objects.create(
        kind=AuditRecord.Kind.CALL,
        tool_call=call,
        user_id=call.user_id,
        username=username,
        conversation_title=title,
        **fields,
    )


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
