"""/metrics tells, per exporter, how far behind it is: records (chain head − cursor), the age
of the oldest record not delivered, and its dead letters."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from platform_app.models import AuditExportDeadLetter, AuditExporter
from tests.audit_export.conftest import exporter_new, records_sealed
from tools_app.models import AuditRecord


def _samples(text: str) -> dict[tuple[str, str], float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.startswith("cc_audit_export"):
                found[(sample.name, sample.labels["exporter"])] = sample.value
    return found


@pytest.mark.modes
@pytest.mark.django_db
def test_metrics_show_each_exporters_lag(client: Client) -> None:
    seqs = records_sealed(5)
    # The third record was written ten minutes ago.
    AuditRecord.objects.filter(seq=seqs[2]).update(
        created_at=timezone.now() - timedelta(minutes=10)
    )
    behind = exporter_new(name="siem", kind=AuditExporter.Kind.HEC, cursor=seqs[1])
    exporter_new(name="files", kind=AuditExporter.Kind.FILE, cursor=seqs[-1], enabled=False)
    AuditExportDeadLetter.objects.create(exporter=behind, seq=seqs[0], error="HTTP 400")

    text = client.get("/metrics").content.decode()
    samples = _samples(text)
    assert samples[("cc_audit_export_lag_records", "siem")] == 3
    assert 590 < samples[("cc_audit_export_lag_seconds", "siem")] < 700
    assert samples[("cc_audit_export_dead_letters", "siem")] == 1
    assert samples[("cc_audit_export_lag_records", "files")] == 0
    assert samples[("cc_audit_export_lag_seconds", "files")] == 0
    assert samples[("cc_audit_export_enabled", "files")] == 0
    assert 'kind="hec"' in text


def test_beat_sends_the_tick_on_the_tools_queue(settings: Any) -> None:
    entry = settings.CELERY_BEAT_SCHEDULE["audit-export"]
    assert entry["task"] == "platform_app.tasks.audit_export_tick"
    assert entry["options"]["queue"] == "tools"
    assert entry["schedule"] == settings.AUDIT_EXPORT_SECONDS
