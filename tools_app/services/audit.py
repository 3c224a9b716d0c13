"""Writing the audit trail. Reads (filters, search, export): tools_app.manager.audit_selectors."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone

from infra.db import rows
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


def audit_call(call: ToolCall, *, new: bool = False, changes: dict[str, Any] | None = None) -> None:
    """Open (``new``) or complete the record of ``call`` (one record per call); ``changes``:
    field values the call is being given in the same transaction."""
    if not new and (
        AuditRecord.objects.filter(kind=AuditRecord.Kind.CALL, tool_call=call).update(
            **_call_fields(call, changes)
        )
    ):
        return
    table, values, params = audit_call_insert(call, changes)
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {table} VALUES ({values})", params)  # noqa: S608 - our own names


def audit_call_insert(
    call: ToolCall, changes: dict[str, Any] | None = None
) -> tuple[str, str, list[Any]]:
    """The call's new record as parts of an ``INSERT``: ``table (columns)``, the values (SQL,
    with placeholders) and their parameters (``infra.db.rows``): a finish needs them
    inside its own statement (``toolcall_finish``). The username and the conversation title
    are copied by subselects inside the INSERT, as they are now: the record outlives both, and
    costs no query of its own."""
    shape = rows.insert_shape(AuditRecord, computed=_computed, name="call record")
    record = AuditRecord(
        kind=AuditRecord.Kind.CALL,
        tool_call_id=call.pk,
        user_id=call.user_id,
        **_call_fields(call, changes),
    )
    copied = {"username": call.user_id, "conversation_title": call.conversation_id}
    return shape.target, shape.values, rows.insert_params(shape, record, copied)


def _computed() -> dict[str, str]:
    # The conversation model as the call's foreign key names it (it lives in the chat app).
    conversation = ToolCall._meta.get_field("conversation").related_model
    assert isinstance(conversation, type)
    qn = connection.ops.quote_name
    sql = {}
    for name, model, column in (
        ("username", get_user_model(), "username"),
        ("conversation_title", conversation, "title"),
    ):
        key = qn(str(model._meta.pk.column if model._meta.pk else "id"))
        # Our own table and column names; the only value is a parameter.
        row = f"SELECT {qn(column)} FROM {qn(model._meta.db_table)} WHERE {key} = %s"  # noqa: S608
        sql[name] = f"COALESCE(({row}), '')"
    if connection.vendor == "postgresql":
        # In a finish's ``INSERT … SELECT`` PostgreSQL takes a bare parameter for text, so the
        # others are cast to their column's type (a cast to text would not check a column's
        # length, and SQLite's casts change values: neither gets one).
        for field in AuditRecord._meta.concrete_fields:
            if field.name not in sql and field.get_internal_type() not in (
                "CharField",
                "TextField",
            ):
                sql[field.name] = f"CAST(%s AS {field.cast_db_type(connection)})"
    return sql


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


def audit_people_change(
    *,
    user: Any,
    subject: str,
    action: str,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
) -> AuditRecord:
    """A change to people or groups (platform_app/people): ``subject`` names what changed
    ("user alice", "group support"), ``action`` the change in one word (created, invited,
    deactivated, password_link, members_changed…); before/after show as a diff like a
    settings change."""
    before, after = before or {}, after or {}
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    return AuditRecord.objects.create(
        kind=AuditRecord.Kind.PEOPLE,
        user=user,
        username=getattr(user, "username", ""),
        group="people",
        tool=subject[:64],
        status=action,
        detail={"before": redact(before), "after": redact(after), "changed": changed},
    )


# The permission that lets a person read conversations that are not theirs. It is declared on
# chat_app's Conversation model; named here, where the audit log and the screenshots (below
# the chat app) check it too.
AUDIT_CONVERSATIONS_PERMISSION = "chat_app.audit_conversations"
# Reads of one conversation by one person through one channel within this many seconds are one
# record: a page that loads its screenshots, or a reloaded page, is one look, not twenty.
READ_RECORD_WINDOW_SECONDS = 60


def audit_conversation_read(
    *,
    reader: Any,
    conversation_id: int,
    conversation_title: str,
    owner_id: int | None,
    owner_username: str,
    via: str,
) -> AuditRecord | None:
    """Someone read a conversation that is not theirs (page, live connection, report,
    screenshot, admin): who, whose, when and through what. None when the same read was
    recorded within the window."""
    via = via[:64]
    since = timezone.now() - timedelta(seconds=READ_RECORD_WINDOW_SECONDS)
    recent = AuditRecord.objects.filter(
        kind=AuditRecord.Kind.READ,
        user=reader,
        conversation_id=conversation_id,
        tool=via,
        created_at__gte=since,
    )
    if recent.exists():
        return None
    return AuditRecord.objects.create(
        kind=AuditRecord.Kind.READ,
        user=reader,
        username=getattr(reader, "username", ""),
        conversation_id=conversation_id,
        conversation_title=conversation_title[:200],
        group="conversation",
        tool=via,
        status="read",
        detail={"owner": owner_username, "owner_id": owner_id, "via": via},
    )
