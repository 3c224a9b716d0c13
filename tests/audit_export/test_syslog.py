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


@pytest.mark.modes
def test_tool_calls_reach_syslog_in_order_also_those_made_while_it_was_down(
    rsyslog: Rsyslog, fast_retries: Any, user: Any
) -> None:
    """Real calls through binding and the worker's execution: their records are sealed by the
    app's own sealer and stream out in chain order, those made while rsyslog was stopped
    included, once it is back."""
    from tests.tools.calls import ok, run_tool
    from tools_app.models import AuditRecord
    from tools_app.services.audit_chain import seal

    exporter = _syslog(rsyslog)
    first = [run_tool("current_time", user=user, timezone="UTC") for _ in range(3)]
    for call in first:
        ok(call)
    seal()
    exporter_run(exporter.pk)
    got = _wait_lines(rsyslog, 3)
    assert [m["msgid"] for m in got] == ["call"] * 3

    rsyslog.stop()
    later = [run_tool("current_time", user=user, timezone="Asia/Tokyo") for _ in range(4)]
    seal()
    assert exporter_run(exporter.pk) == 0  # the daemon is down: kept, not lost
    rsyslog.start()
    assert exporter_run(exporter.pk, force=True) == 4
    got = _wait_lines(rsyslog, 7)
    events = [json.loads(m["msg"]) for m in got]
    sealed = list(
        AuditRecord.objects.filter(tool_call__in=[c.pk for c in first + later])
        .order_by("seq")
        .values_list("seq", "call_ref")
    )
    assert [(e["seq"], e["record"]["call"]) for e in events] == sealed
    assert [e["record"]["tool"] for e in events] == ["current_time"] * 7
    assert [e["record"]["arguments"]["timezone"] for e in events[3:]] == ["Asia/Tokyo"] * 4
