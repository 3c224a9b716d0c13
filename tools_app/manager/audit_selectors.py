"""Reads of the audit log: filters, full-text search, export rows. Writes are in
services/audit.py; nothing here changes a record."""

from __future__ import annotations

import csv
import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, fields
from datetime import date, datetime, time, timedelta
from typing import Any, NamedTuple

from django.db.models import Q, QuerySet, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from infra import access
from tools_app.models import AuditRecord, ToolCall

EXPORT_FIELDS = (
    "id",
    "kind",
    "created_at",
    "username",
    "user_id",
    "conversation_id",
    "conversation_title",
    "tool_call_id",
    "source",
    "group",
    "tool",
    "arguments",
    "status",
    "policy_verdict",
    "policy_reason",
    "result",
    "error",
    "started_at",
    "finished_at",
    "duration_ms",
    "worker",
    "sandbox_id",
    "detail",
)
JSON_FIELDS = ("arguments", "result", "detail")


def _date(raw: str | None) -> date | None:
    try:
        return date.fromisoformat(raw) if raw else None
    except ValueError:
        return None


def _int(raw: str | None) -> int | None:
    try:
        return int(raw) if raw else None
    except ValueError:
        return None


@dataclass(frozen=True)
class AuditFilters:
    """The list's filters, parsed leniently from a query string (bad values are ignored)."""

    tool: str = ""
    status: str = ""
    user: str = ""
    kind: str = ""
    source: str = ""
    date_from: date | None = None
    date_to: date | None = None
    q: str = ""
    call: int | None = None

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> AuditFilters:
        def text(key: str) -> str:
            return str(query.get(key) or "").strip()[:200]

        return cls(
            tool=text("tool"),
            status=text("status"),
            user=text("user"),
            kind=text("kind") if text("kind") in AuditRecord.Kind.values else "",
            source=text("source"),
            date_from=_date(text("date_from")),
            date_to=_date(text("date_to")),
            q=text("q"),
            call=_int(text("call")),
        )

    def as_query(self) -> dict[str, str]:
        """The non-empty filters, for links that keep them (export, pages)."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value not in ("", None):
                out[f.name] = value.isoformat() if isinstance(value, date) else str(value)
        return out

    @property
    def active(self) -> bool:
        return bool(self.as_query())


def _day_start(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


def _search(qs: QuerySet[AuditRecord], q: str) -> QuerySet[AuditRecord]:
    # JSON columns are compared as text: json on SQLite, jsonb::text on Postgres. A plain
    # ``arguments__icontains`` means key/containment lookups on some backends, not substring.
    qs = qs.annotate(
        arguments_text=Cast("arguments", TextField()),
        result_text=Cast("result", TextField()),
    )
    needles = {q}
    # SQLite keeps JSON ASCII-escaped ("caf\u00e9"); Postgres keeps the characters.
    escaped = json.dumps(q)[1:-1]
    if escaped != q:
        needles.add(escaped)
    condition = Q()
    for needle in needles:
        condition |= (
            Q(arguments_text__icontains=needle)
            | Q(result_text__icontains=needle)
            | Q(error__icontains=needle)
            | Q(tool__icontains=needle)
            | Q(policy_reason__icontains=needle)
        )
    return qs.filter(condition)


def audit_records(filters: AuditFilters) -> QuerySet[AuditRecord]:
    qs: QuerySet[AuditRecord] = AuditRecord.objects.all()
    if filters.tool:
        qs = qs.filter(Q(tool=filters.tool) | Q(tool="", group=filters.tool))
    if filters.status:
        qs = qs.filter(status=filters.status)
    if filters.user:
        qs = qs.filter(username=filters.user)
    if filters.kind:
        qs = qs.filter(kind=filters.kind)
    if filters.source:
        qs = qs.filter(source=filters.source)
    if filters.date_from:
        qs = qs.filter(created_at__gte=_day_start(filters.date_from))
    if filters.date_to:  # inclusive: the whole "to" day
        qs = qs.filter(created_at__lt=_day_start(filters.date_to) + timedelta(days=1))
    if filters.call is not None:
        qs = qs.filter(tool_call_id=filters.call)
    if filters.q:
        qs = _search(qs, filters.q)
    return qs.order_by("-created_at", "-id")


def audit_record_for_call(call_id: int) -> AuditRecord | None:
    """The call's own record (not its approval decisions), which the card links to."""
    return (
        AuditRecord.objects.filter(kind=AuditRecord.Kind.CALL, tool_call_id=call_id)
        .order_by("id")
        .first()
    )


class ConversationAccess(NamedTuple):
    exists: bool
    may_open: bool  # its owner, or an auditor
    audited: bool  # opening it would be an audited read of someone else's conversation


def audit_record_conversation_access(record: AuditRecord, *, viewer: Any) -> ConversationAccess:
    """Whether the record's conversation still exists, and whether ``viewer`` may open it:
    its owner, or an auditor (``chat_app.audit_conversations``); staff alone may not."""
    if record.conversation_id is None:
        return ConversationAccess(False, False, False)
    # The conversation model as the call's foreign key names it (it lives in the chat app).
    conversation_model = ToolCall._meta.get_field("conversation").related_model
    assert isinstance(conversation_model, type)
    owner_id = (
        conversation_model._default_manager.filter(pk=record.conversation_id)
        .values_list("owner_id", flat=True)
        .first()
    )
    if owner_id is None:
        return ConversationAccess(False, False, False)
    how = access.conversation_readable(viewer, owner_id=owner_id)
    return ConversationAccess(True, how is not None, how == access.AUDITED_READ)


def audit_filter_choices() -> dict[str, list[str]]:
    """Values present in the log, for the filter selects (tools and users may be gone)."""

    def distinct(name: str, **where: Any) -> list[str]:
        records = AuditRecord.objects.filter(**where).order_by()
        return sorted(v for v in records.values_list(name, flat=True).distinct() if v)

    statuses = set(distinct("status")) | set(ToolCall.Status.values)
    # A group is offered where the filter matches it: on records that name no tool.
    return {
        "tool": sorted(set(distinct("tool")) | set(distinct("group", tool=""))),
        "status": sorted(statuses),
        "user": distinct("username"),
        "source": sorted(set(distinct("source")) | set(ToolCall.Source.values)),
    }


# --- export --------------------------------------------------------------------------------
def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def audit_export_page(
    qs: QuerySet[AuditRecord], *, before_id: int | None, size: int = 500
) -> list[dict[str, Any]]:
    """One page of export rows, newest first, the ones older than ``before_id``.

    Keyset pages (not OFFSET): a long export stays fast and rows appended meanwhile cannot
    shift a page. Values are JSON-ready (datetimes as ISO 8601).
    """
    page = qs.order_by("-id")
    if before_id is not None:
        page = page.filter(id__lt=before_id)
    return [
        {name: _plain(getattr(record, name)) for name in EXPORT_FIELDS} for record in page[:size]
    ]


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def audit_csv_cells(row: dict[str, Any]) -> list[str]:
    """A row as CSV cells: JSON columns serialised, None as empty.

    Free text that a spreadsheet would run as a formula (a tool error or a conversation
    title can say anything) gets a leading apostrophe, as OWASP recommends for CSV exports.
    """
    cells = []
    for name in EXPORT_FIELDS:
        value = row[name]
        if name in JSON_FIELDS:
            cells.append("" if value is None else json.dumps(value, ensure_ascii=False))
            continue
        text = "" if value is None else str(value)
        if isinstance(value, str) and text.startswith(_FORMULA_START):
            text = "'" + text
        cells.append(text)
    return cells


class _Echo:
    """csv.writer wants a file; this one hands each line back for streaming."""

    def write(self, value: str) -> str:
        return value


async def audit_export_lines(qs: QuerySet[AuditRecord], extension: str) -> AsyncIterator[str]:
    """The records of ``qs`` as CSV (a header first) or JSON lines, read page by page in a
    worker thread, for a streamed response (the audit page's export and the REST API's)."""
    from asgiref.sync import sync_to_async

    writer = csv.writer(_Echo())
    read_page = sync_to_async(audit_export_page)

    def encode(row: dict[str, Any]) -> str:
        if extension == "csv":
            return str(writer.writerow(audit_csv_cells(row)))
        return json.dumps(row, ensure_ascii=False) + "\n"

    if extension == "csv":
        yield str(writer.writerow(EXPORT_FIELDS))
    before_id = None
    while rows := await read_page(qs, before_id=before_id):
        yield "".join(encode(row) for row in rows)
        before_id = rows[-1]["id"]
