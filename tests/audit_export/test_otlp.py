"""OpenTelemetry logs over OTLP/HTTP to a real receiver decoding the protobuf with the
official classes: one log record per audit record, in order, with the chain's place as
attributes and the admin's headers; a 503 waits, a 400 for a single record sets it aside."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from platform_app.audit_export.services import exporter_run
from platform_app.models import AuditExportDeadLetter, AuditExporter
from tests.audit_export.conftest import exporter_new, records_sealed
from tests.otlp_receiver import OTLPReceiver


@pytest.fixture
def receiver() -> Iterator[OTLPReceiver]:
    with OTLPReceiver() as running:
        yield running


@pytest.mark.modes
@pytest.mark.django_db
def test_it_exports_log_records_in_order(receiver: OTLPReceiver, fast_retries: Any) -> None:
    exporter = exporter_new(
        kind=AuditExporter.Kind.OTLP,
        url=receiver.endpoint,
        headers="x-api-key=s3cret%21, x-tenant = audit",
        allow_private=True,
        batch_size=3,
    )
    seqs = records_sealed(4)
    receiver.answers = [503]
    assert exporter_run(exporter.pk) == 0
    exporter.refresh_from_db()
    assert "HTTP 503" in exporter.last_error and exporter.cursor == 0

    assert exporter_run(exporter.pk, force=True) == 4
    assert [log["attributes"]["cc.audit.seq"] for log in receiver.logs] == seqs
    first = receiver.logs[0]
    assert first["headers"]["x-api-key"] == "s3cret!" and first["headers"]["x-tenant"] == "audit"
    assert first["headers"]["content-type"] == "application/x-protobuf"
    assert first["scope"] == "controlcenter.audit"
    assert first["resource"]["service.name"] == "controlcenter"
    assert first["attributes"]["event.name"] == "controlcenter.audit.settings"
    assert first["attributes"]["user.name"] == "admin"
    assert first["severity_text"] == "INFO2" and first["severity_number"] == 10
    body = json.loads(first["body"])
    assert body["seq"] == seqs[0] and body["hash"] == first["attributes"]["cc.audit.hash"]
    assert first["time"] > 0


@pytest.mark.django_db
def test_a_single_record_refused_with_400_is_set_aside(
    receiver: OTLPReceiver, fast_retries: Any, settings: Any
) -> None:
    settings.AUDIT_EXPORT_REJECT_TRIES = 1
    exporter = exporter_new(
        kind=AuditExporter.Kind.OTLP, url=receiver.endpoint, allow_private=True, batch_size=1
    )
    seqs = records_sealed(2)
    receiver.answers = [400]
    assert exporter_run(exporter.pk) == 1
    assert AuditExportDeadLetter.objects.get().seq == seqs[0]
    assert [log["attributes"]["cc.audit.seq"] for log in receiver.logs] == [seqs[1]]
