"""Syslog to a real rsyslog (imtcp with GnuTLS) on loopback: RFC 5424 with octet counting,
in chain order; rsyslog stopped while records are sealed and started again gets every
record, in order, once; a server whose certificate the exporter's CA did not sign is the
exporter's error, not a crash."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from infra.audit_chain import record_hash
from platform_app.audit_export.services import exporter_run
from platform_app.models import AuditExporter
from tests.audit_export.conftest import SYSLOG_LINE, exporter_new, records_sealed
from tests.audit_export.rsyslog import Rsyslog, make_pki


@pytest.fixture
def rsyslog(tmp_path: Path) -> Any:
    server = Rsyslog(tmp_path)
    server.start()
    yield server
    server.stop()


def _received(server: Rsyslog) -> list[dict[str, Any]]:
    found = []
    for line in server.messages():
        match = SYSLOG_LINE.match(line)
        assert match, f"not RFC 5424 as sent: {line!r}"
        found.append(match.groupdict())
    return found


def _syslog(server: Rsyslog, **fields: Any) -> AuditExporter:
    return exporter_new(
        kind=AuditExporter.Kind.SYSLOG,
        host="127.0.0.1",
        port=server.port,
        transport=AuditExporter.Transport.TLS if server.tls else AuditExporter.Transport.TCP,
        ca_pem=server.pki.ca_pem,
        allow_private=True,
        batch_size=3,
        **fields,
    )


def _wait_lines(server: Rsyslog, count: int) -> list[dict[str, Any]]:
    from tests.helpers import wait_for

    wait_for(lambda: len(server.messages()) >= count, timeout=10, message=f"{count} lines")
    return _received(server)


@pytest.mark.modes
@pytest.mark.django_db
def test_it_delivers_in_order_and_survives_the_server_being_down(
    rsyslog: Rsyslog, fast_retries: Any
) -> None:
    exporter = _syslog(rsyslog)
    seqs = records_sealed(5)

    assert exporter_run(exporter.pk) == 5
    got = _wait_lines(rsyslog, 5)
    assert [int(m["seq"]) for m in got] == seqs
    for message in got:
        # facility 13 (log audit), a settings change is a notice (5)
        assert int(message["pri"]) == 13 * 8 + 5 and message["msgid"] == "settings"
        event = json.loads(message["msg"])
        assert event["hash"] == message["hash"]
        assert record_hash(event["seq"], event["prev"], event["record"]) == event["hash"]

    rsyslog.stop()
    more = records_sealed(7, start=5)
    assert exporter_run(exporter.pk) == 0
    exporter.refresh_from_db()
    assert exporter.cursor == seqs[-1] and exporter.failures == 1
    assert "cannot connect" in exporter.last_error and exporter.next_attempt_at is not None
    assert exporter_run(exporter.pk) == 0  # backing off: not even tried
    exporter.refresh_from_db()
    assert exporter.failures == 1

    rsyslog.start()
    assert exporter_run(exporter.pk, force=True) == 7
    got = _wait_lines(rsyslog, 12)
    assert [int(m["seq"]) for m in got] == seqs + more  # all, in order, none twice
    exporter.refresh_from_db()
    assert exporter.cursor == more[-1] and exporter.failures == 0
    assert exporter.next_attempt_at is None


@pytest.mark.django_db
def test_it_reports_a_certificate_its_ca_did_not_sign(rsyslog: Rsyslog, fast_retries: Any) -> None:
    exporter = _syslog(rsyslog)
    exporter.ca_pem = make_pki("another CA").ca_pem
    exporter.save()
    records_sealed(2)

    assert exporter_run(exporter.pk) == 0
    exporter.refresh_from_db()
    assert exporter.cursor == 0 and exporter.failures == 1
    assert "certificate verify failed" in exporter.last_error
    assert rsyslog.messages() == []


@pytest.mark.django_db
def test_it_sends_cef_over_plain_tcp(tmp_path: Path, fast_retries: Any) -> None:
    server = Rsyslog(tmp_path, tls=False)
    server.start()
    try:
        exporter = _syslog(server, format=AuditExporter.Format.CEF)
        seqs = records_sealed(2)
        assert exporter_run(exporter.pk) == 2
        got = _wait_lines(server, 2)
    finally:
        server.stop()
    assert [int(m["seq"]) for m in got] == seqs
    assert got[0]["msg"].startswith("CEF:0|Control Center|controlcenter|1|settings|")
    assert f"externalId={seqs[0]} " in got[0]["msg"]


@pytest.mark.django_db
def test_it_refuses_a_loopback_host_not_allowed(rsyslog: Rsyslog, fast_retries: Any) -> None:
    exporter = _syslog(rsyslog)
    exporter.allow_private = False
    exporter.save()
    records_sealed(1)
    assert exporter_run(exporter.pk) == 0
    exporter.refresh_from_db()
    assert "SSRF guard" in exporter.last_error and "loopback" in exporter.last_error
