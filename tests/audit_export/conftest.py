"""Audit records made and sealed as the sealer does (``audit_chain.seal``), and exporters
saved as the admin page saves them."""

from __future__ import annotations

import re
from typing import Any

import pytest

from platform_app.models import AuditExporter
from tools_app.models import AuditRecord
from tools_app.services.audit_chain import seal

SYSLOG_LINE = re.compile(
    r"^<(?P<pri>\d+)>1 (?P<time>\S+) (?P<host>\S+) controlcenter - (?P<msgid>\S+) "
    r'\[audit@32473 seq="(?P<seq>\d+)" hash="(?P<hash>[0-9a-f]{64})" '
    r'prev="(?P<prev>[0-9a-f]{64})"\] (?P<msg>.*)$'
)


def records_sealed(count: int, *, start: int = 0, **fields: Any) -> list[int]:
    """``count`` settings-change records, sealed; their seqs."""
    for number in range(start, start + count):
        AuditRecord.objects.create(
            kind=AuditRecord.Kind.SETTINGS,
            username="admin",
            group="test",
            tool=f"setting-{number}",
            status="changed",
            detail={"before": {"n": number}, "after": {"n": number + 1}},
            **fields,
        )
    seal()
    return list(
        AuditRecord.objects.filter(seq__isnull=False).order_by("-seq").values_list("seq", flat=True)
    )[:count][::-1]


def exporter_new(**fields: Any) -> AuditExporter:
    values: dict[str, Any] = {"name": f"exporter {AuditExporter.objects.count() + 1}"}
    values.update(fields)
    return AuditExporter.objects.create(**values)


@pytest.fixture
def fast_retries(settings: Any) -> Any:
    settings.AUDIT_EXPORT_RETRY_BASE_SECONDS = 1.0
    settings.AUDIT_EXPORT_TIMEOUT_SECONDS = 5.0
    settings.AUDIT_EXPORT_REJECT_TRIES = 3
    return settings
