"""Reads of the exporters' state: how far behind each one is (the admin page and /metrics)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count
from django.utils import timezone

from platform_app.models import AuditExporter
from tools_app.models import AuditChainHead, AuditRecord


@dataclass
class Lag:
    exporter: AuditExporter
    records: int  # the chain head's seq minus the cursor
    seconds: float  # the age of the oldest record not delivered yet (0: none)
    dead_letters: int
    oldest: datetime | None = None


def head_seq() -> int:
    return int(AuditChainHead.objects.filter(pk=1).values_list("seq", flat=True).first() or 0)


def exporters_lag() -> list[Lag]:
    head = head_seq()
    now = timezone.now()
    exporters = list(AuditExporter.objects.annotate(letters=Count("dead_letters")))
    cursors = {e.cursor for e in exporters if e.cursor < head}
    # The oldest undelivered record of each cursor: the first sealed record after it.
    oldest: dict[int, datetime] = {}
    for cursor in cursors:
        created = (
            AuditRecord.objects.filter(seq__gt=cursor)
            .order_by("seq")
            .values_list("created_at", flat=True)
            .first()
        )
        if created is not None:
            oldest[cursor] = created
    lags = []
    for exporter in exporters:
        since = oldest.get(exporter.cursor)
        lags.append(
            Lag(
                exporter=exporter,
                records=max(head - exporter.cursor, 0),
                seconds=max((now - since).total_seconds(), 0.0) if since else 0.0,
                dead_letters=exporter.letters,  # type: ignore[attr-defined]
                oldest=since,
            )
        )
    return lags
