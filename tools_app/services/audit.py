"""Writing the audit trail. Reads (filters, search, export): tools_app.manager.audit_selectors."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

from django.utils import timezone

from infra import access
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
    (a finish writes its record in the transaction that stores them)."""
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
        # What the guards found (kind and place, never the value) and what they did; the
        # shadow policy's verdict (services/policy.py), set when the call was bound.
        "detail": {
            **({"guards": get("guards")} if get("guards") else {}),
            **({"shadow": call.shadow} if call.shadow else {}),
        },
    }


def audit_call(call: ToolCall, *, new: bool = False, changes: dict[str, Any] | None = None) -> None:
    """Open (``new``) or complete the record of ``call`` (one record per call); ``changes``:
    field values the call is being given in the same transaction."""
    fields = _call_fields(call, changes)
    # A sealed record is never changed (the chain would break): a later change of a call
    # whose record is in the chain already (rare: a call finished twice) gets a record of its own.
    if not new and (
        AuditRecord.objects.filter(
            kind=AuditRecord.Kind.CALL, tool_call=call, seq__isnull=True
        ).update(**fields)
    ):
        return
    # The username and the conversation's title (the record outlives both): read with the
    # call when it was claimed (``call_statements.call_claim``), else as they are now.
    if hasattr(call, "cc_username"):
        username, title = call.cc_username, getattr(call, "cc_title", "")
    else:
        username, title = (
            ToolCall.objects.filter(pk=call.pk)
            .values_list("user__username", "conversation__title")
            .get()
        )
    record = AuditRecord(
        kind=AuditRecord.Kind.CALL,
        tool_call_id=call.pk,
        user_id=call.user_id,
        username=username or "",
        conversation_title=title or "",
        **fields,
    )
    record.save(force_insert=True)


def audit_approval(
    *,
    call: ToolCall,
    user: Any,
    decision: str,
    before: Any = None,
    after: Any = None,
    note: str = "",
    reason: str = "",
    approvals: dict[str, Any] | None = None,
) -> AuditRecord:
    """``approvals``: for a call that needs several, {"count", "needed", "by"} after this one."""
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
            **({"note": note} if note else {}),
            **({"reason": reason} if reason else {}),
            **({"approvals": approvals} if approvals else {}),
        },
    )


def audit_grant(*, grant: Any, user: Any, group: str, decision: str) -> AuditRecord:
    """A standing approval granted or revoked without a call (a schedule's pre-approval)."""
    return AuditRecord.objects.create(
        kind=AuditRecord.Kind.APPROVAL,
        user=user,
        username=getattr(user, "username", ""),
        group=group,
        tool=grant.tool,
        arguments=redact(grant.arguments),
        status=decision[:40],
        detail={
            "decision": decision,
            "reason": f"standing:{grant.pk}",
            "schedule": grant.schedule_id,
            "for": grant.user_id,
            **({"match": grant.match} if grant.match else {}),
        },
    )


def audit_settings_change(
    *,
    user: Any,
    group: str,
    tool: str = "",
    before: dict[str, Any],
    after: dict[str, Any],
    states: dict[str, tuple[str | None, str | None]] | None = None,
) -> AuditRecord:
    """``states``: key → (before, after) of things whose values are secret and shown as
    states ("set", "changed", "removed"), written as they are whatever the key's name looks
    like (``env API_KEY``: the variable's name is not its value)."""
    states = states or {}
    changed = sorted(
        {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
        | {k for k, (was, now) in states.items() if was != now}
    )
    shown_before = redact(before) | {k: was for k, (was, _now) in states.items() if was}
    shown_after = redact(after) | {k: now for k, (_was, now) in states.items() if now}
    return AuditRecord.objects.create(
        kind=AuditRecord.Kind.SETTINGS,
        user=user,
        username=getattr(user, "username", ""),
        group=group,
        tool=tool,
        status="changed",
        detail={"before": shown_before, "after": shown_after, "changed": changed},
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
AUDIT_CONVERSATIONS_PERMISSION = access.AUDIT_CONVERSATIONS_PERMISSION
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


def audit_history_import(
    *, actor: Any, owner: Any, via: str, fmt: str, counts: dict[str, Any]
) -> AuditRecord:
    """Conversations brought in from another product's export (chat_app.services.
    history_import): who imported (None: an operator's command), into whose account, from
    which format, and what came in or was skipped."""
    return AuditRecord.objects.create(
        kind=AuditRecord.Kind.IMPORT,
        user=actor,
        username=getattr(actor, "username", "") if actor is not None else "(operator)",
        group="conversation",
        tool=fmt[:64],
        status="imported",
        detail={
            "for": owner.get_username(),
            "for_id": owner.pk,
            "via": via[:64],
            **counts,
        },
    )
