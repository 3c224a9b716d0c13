"""Reads for the review of imported tool definitions: what a source holds for review, each
with its diffs split into lines the page renders (escaped by the template: a server's text is
untrusted input)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tools_app.models import AuditRecord, ToolSource
from tools_app.services.pins import PENDING, REJECTED, definition_diff


@dataclass(frozen=True)
class DiffLine:
    kind: str  # add | del | hunk | same
    text: str


def diff_lines(diff: str) -> list[DiffLine]:
    """A unified diff's lines, without its file header, each with its kind."""
    out: list[DiffLine] = []
    for line in diff.splitlines():
        if line.startswith(("--- ", "+++ ")) and len(out) == 0:
            continue
        if line.startswith("@@"):
            out.append(DiffLine("hunk", line))
        elif line.startswith("+"):
            out.append(DiffLine("add", line[1:]))
        elif line.startswith("-"):
            out.append(DiffLine("del", line[1:]))
        else:
            out.append(DiffLine("same", line[1:] if line.startswith(" ") else line))
    return out


@dataclass
class ReviewItem:
    remote: str
    name: str
    status: str  # new | changed | gone
    shadows: str
    detected_at: str
    offered_pin: str
    pinned_pin: str
    description: list[DiffLine]
    schema: list[DiffLine]


def review_items(source: ToolSource) -> list[ReviewItem]:
    """What waits for review, in the stored order (by remote name)."""
    pinned = {f.get("remote") or f["name"]: f for f in source.functions or []}
    items = []
    for entry in source.review or []:
        if entry.get("status") not in PENDING:
            continue
        old = pinned.get(entry["remote"])
        diff = definition_diff(old, entry.get("offered"), source.kind)
        items.append(
            ReviewItem(
                remote=entry["remote"],
                name=entry.get("name") or entry["remote"],
                status=entry["status"],
                shadows=entry.get("shadows") or "",
                detected_at=entry.get("detected_at") or "",
                offered_pin=entry.get("offered_pin") or "",
                pinned_pin=entry.get("pinned_pin") or "",
                description=diff_lines(diff["description"]),
                schema=diff_lines(diff["schema"]),
            )
        )
    return items


def rejected_items(source: ToolSource) -> list[dict[str, Any]]:
    return [e for e in source.review or [] if e.get("status") == REJECTED]


def review_history(source: ToolSource, limit: int = 20) -> list[AuditRecord]:
    """The source's latest definition records (detections, decisions)."""
    return list(
        AuditRecord.objects.filter(kind=AuditRecord.Kind.DEFINITION, group=source.group_name).only(
            "pk", "created_at", "tool", "status", "username"
        )[:limit]
    )


def record_diff(record: AuditRecord) -> dict[str, list[DiffLine]]:
    """A definition record's diffs as lines (the audit log's detail page)."""
    diff = (record.detail or {}).get("diff") or {}
    return {
        "description": diff_lines(str(diff.get("description") or "")),
        "schema": diff_lines(str(diff.get("schema") or "")),
    }
