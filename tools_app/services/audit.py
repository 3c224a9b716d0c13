"""Writing the audit trail. Reads (filters, search, export) are in tools_app/selectors_audit.py."""

from __future__ import annotations

import json
import re
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Model

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


def _call_fields(call: ToolCall, changes: dict[str, Any] | None = None) -> dict[str, Any]:
    """The record's copy of the call; ``changes``: field values the call is about to be given
    (a finish writes its record in the statement that stores them)."""
    changes = changes or {}

    def get(name: str) -> Any:
        return changes[name] if name in changes else getattr(call, name)

    arguments = call.arguments if call.arguments is not None else call.raw_arguments
    return {
        "conversation_id": call.conversation_id,
        "source": call.source,
        "group": call.group,
        "tool": call.tool,
        "arguments": redact(arguments),
        "status": get("status"),
        "policy_verdict": call.policy_verdict,
        "policy_reason": call.policy_reason,
        "result": cap_result(redact(get("result"))),
        "error": get("error"),
        "started_at": call.started_at,
        "finished_at": get("finished_at"),
        "duration_ms": get("duration_ms"),
        "worker": call.worker,
        "sandbox_id": get("sandbox_id"),
    }


def audit_call(call: ToolCall, *, new: bool = False) -> None:
    """Open (``new``) or complete the record of ``call`` (one record per call)."""
    if not new and (
        AuditRecord.objects.filter(kind=AuditRecord.Kind.CALL, tool_call=call).update(
            **_call_fields(call)
        )
    ):
        return
    table, values, params = audit_call_insert(call)
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {table} VALUES ({values})", params)  # noqa: S608 (see above)


# vendor → (the table and its columns, the values as SQL, the fields they are made of)
_INSERT_PARTS: dict[str, tuple[str, str, list[Any]]] = {}
# Copied from other tables inside the INSERT itself: the record keeps the username and the
# conversation title as they are now (it outlives both) and costs no query of its own.
_COPIED = {"username": "username", "conversation_title": "title"}


def audit_call_insert(
    call: ToolCall, changes: dict[str, Any] | None = None
) -> tuple[str, str, list[Any]]:
    """The call's new record as parts of an ``INSERT``: ``table (columns)``, the values (SQL,
    with placeholders) and their parameters. Written out, with the SQL built once per database:
    the ORM's ``create()`` took longer to build the statement than the database took to run it,
    and a finish needs the values inside its own statement (``toolcall_finish``)."""
    parts = _INSERT_PARTS.get(connection.vendor)
    if parts is None:
        parts = _INSERT_PARTS[connection.vendor] = _insert_parts()
    table, values, fields = parts
    record = AuditRecord(
        kind=AuditRecord.Kind.CALL,
        tool_call_id=call.pk,
        user_id=call.user_id,
        **_call_fields(call, changes),
    )
    params = []
    for field in fields:
        if field.name == "username":
            params.append(call.user_id)
        elif field.name == "conversation_title":
            params.append(call.conversation_id)
        else:
            params.append(field.get_db_prep_save(field.pre_save(record, True), connection))
    return table, values, params


def _insert_parts() -> tuple[str, str, list[Any]]:
    from chat_app.models import Conversation

    qn = connection.ops.quote_name
    sources: dict[str, type[Model]] = {
        "username": get_user_model(),
        "conversation_title": Conversation,
    }
    meta = AuditRecord._meta
    columns, values, fields = [], [], []
    for field in meta.concrete_fields:
        if field.primary_key:
            continue
        columns.append(qn(str(field.column)))
        fields.append(field)
        source = sources.get(field.name)
        if source is None:
            values.append(_typed(field))
            continue
        key = qn(str(source._meta.pk.column if source._meta.pk else "id"))
        # Our own table and column names; the only value is a parameter.
        row = f"SELECT {qn(_COPIED[field.name])} FROM {qn(source._meta.db_table)} WHERE {key} = %s"  # noqa: S608
        values.append(f"COALESCE(({row}), '')")
    return f"{qn(meta.db_table)} ({', '.join(columns)})", ", ".join(values), fields


def _typed(field: Any) -> str:
    """A value's placeholder. In a finish's ``INSERT … SELECT`` PostgreSQL takes a bare
    parameter for text, so the others are cast to their column's type (a cast to text would
    not check a column's length, and SQLite's casts change values: neither gets one)."""
    if connection.vendor != "postgresql" or field.get_internal_type() in ("CharField", "TextField"):
        return "%s"
    return f"CAST(%s AS {field.cast_db_type(connection)})"


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
