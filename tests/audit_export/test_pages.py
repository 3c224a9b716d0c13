"""The audit export pages: admins only (a member gets the 403 page, anyone else the login
page), an exporter added through the form with its token never shown back, each change in
the audit log with the secret as set/changed, Send test, and the dead letters: a member can
neither see nor retry them, and a dead letter is found only under its own exporter."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from platform_app.models import AuditExportDeadLetter, AuditExporter
from tests.audit_export.conftest import exporter_new, records_sealed
from tools_app.models import AuditRecord

TOKEN = "hec-very-secret-token-9f8e7d"  # noqa: S105


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _form(**fields: Any) -> dict[str, Any]:
    data = {
        "name": "splunk",
        "kind": "hec",
        "format": "json",
        "enabled": "on",
        "url": "https://hec.example.com:8088",
        "transport": "tls",
        "verify_tls": "on",
        "batch_size": "100",
        "interval_seconds": "0",
        "token": TOKEN,
    }
    data.update(fields)
    return {k: v for k, v in data.items() if v is not None}


@pytest.mark.modes
def test_an_admin_adds_an_exporter_and_its_token_is_never_shown(staff_user: Any) -> None:
    admin = _client(staff_user)
    assert admin.get("/audit-export/").status_code == 200
    added = admin.post("/audit-export/", _form(), follow=True)
    assert added.status_code == 200
    exporter = AuditExporter.objects.get()
    assert exporter.token == TOKEN and exporter.kind == "hec"
    page = added.content.decode()
    assert TOKEN not in page and "A token is stored" in page
    # Encrypted at rest: the column does not hold it.
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT token FROM platform_auditexporter WHERE id = %s", [exporter.pk])
        assert TOKEN not in cursor.fetchone()[0]

    # Saved again with the token left blank: kept.
    admin.post(f"/audit-export/{exporter.pk}/", _form(token="", batch_size="50"))
    exporter.refresh_from_db()
    assert exporter.token == TOKEN and exporter.batch_size == 50
    admin.post(f"/audit-export/{exporter.pk}/", _form(token="a-new-token"))
    changes = list(AuditRecord.objects.filter(kind="settings", group="audit_export").order_by("id"))
    assert [c.detail["after"].get("token") for c in changes] == ["set", "set", "changed"]
    assert all(TOKEN not in str(c.detail) for c in changes)
    assert changes[1].detail["changed"] == ["batch_size"]

    listing = admin.get("/audit-export/").content.decode()
    assert "splunk" in listing and TOKEN not in listing and "a-new-token" not in listing


def test_the_form_refuses_what_cannot_work(staff_user: Any) -> None:
    admin = _client(staff_user)
    refused = admin.post("/audit-export/", _form(token=""))
    assert refused.status_code == 400 and "needs its token" in refused.content.decode()
    refused = admin.post("/audit-export/", _form(url="ftp://x.example/"))
    assert refused.status_code == 400 and "must be http" in refused.content.decode()
    refused = admin.post("/audit-export/", _form(kind="file", directory="../../etc"))
    assert refused.status_code == 400 and "relative directory" in refused.content.decode()
    assert not AuditExporter.objects.exists()
    AuditExporter.objects.create(name="daily", kind="file", directory="siem/daily")
    for taken in ("siem/daily", "siem", "siem/daily/more"):
        refused = admin.post("/audit-export/", _form(name="x", kind="file", directory=taken))
        assert refused.status_code == 400 and "one of its own" in refused.content.decode()
    AuditExporter.objects.all().delete()
    refused = admin.post("/audit-export/", _form(kind="syslog", host=""))
    assert refused.status_code == 400
    refused = admin.post("/audit-export/", _form(kind="s3", bucket="Not_A_Bucket"))
    assert refused.status_code == 400 and "S3 bucket name" in refused.content.decode()
    refused = admin.post("/audit-export/", _form(kind="s3", bucket="logs", access_key_id="AKID"))
    assert refused.status_code == 400 and "or neither" in refused.content.decode()
    refused = admin.post("/audit-export/", _form(ca_pem="not a certificate"))
    assert refused.status_code == 400 and "not a PEM certificate" in refused.content.decode()
    assert not AuditExporter.objects.exists()


def test_send_test_reports_the_receivers_error(staff_user: Any) -> None:
    exporter = exporter_new(
        kind=AuditExporter.Kind.SYSLOG, host="127.0.0.1", port=9, transport="tcp"
    )
    page = _client(staff_user).post(f"/audit-export/{exporter.pk}/test/", follow=True)
    text = page.content.decode()
    assert "not delivered" in text and "SSRF guard" in text  # loopback, not allowed here


def test_members_cannot_see_or_change_exporters(user: Any, staff_user: Any) -> None:
    exporter = exporter_new(kind=AuditExporter.Kind.HEC, url="https://h.example", token=TOKEN)
    records_sealed(1)
    letter = AuditExportDeadLetter.objects.create(exporter=exporter, seq=1, error="HTTP 400")
    member = _client(user)
    assert member.get("/audit-export/").status_code == 403
    assert member.get(f"/audit-export/{exporter.pk}/").status_code == 403
    assert member.post("/audit-export/", _form(name="mine")).status_code == 403
    edit = member.post(f"/audit-export/{exporter.pk}/", _form(url="https://evil.example"))
    assert edit.status_code == 403
    assert member.post(f"/audit-export/{exporter.pk}/delete/").status_code == 403
    retry = f"/audit-export/{exporter.pk}/dead-letters/{letter.pk}/retry/"
    assert member.post(retry).status_code == 403
    assert member.post(retry.replace("retry", "discard")).status_code == 403
    anonymous = Client().get("/audit-export/")
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    exporter.refresh_from_db()
    assert exporter.url == "https://h.example" and AuditExporter.objects.count() == 1
    assert AuditExportDeadLetter.objects.filter(pk=letter.pk).exists()


def test_a_dead_letter_is_found_only_under_its_exporter(staff_user: Any) -> None:
    mine = exporter_new(kind=AuditExporter.Kind.HEC, url="https://a.example", token="t")
    other = exporter_new(kind=AuditExporter.Kind.HEC, url="https://b.example", token="t")
    letter = AuditExportDeadLetter.objects.create(exporter=other, seq=1, error="HTTP 400")
    admin = _client(staff_user)
    wrong = admin.post(f"/audit-export/{mine.pk}/dead-letters/{letter.pk}/discard/")
    assert wrong.status_code == 404
    assert AuditExportDeadLetter.objects.filter(pk=letter.pk).exists()
    page = admin.get(f"/audit-export/{other.pk}/").content.decode()
    assert "seq 1" in page and "HTTP 400" in page
    admin.post(f"/audit-export/{other.pk}/dead-letters/{letter.pk}/discard/")
    assert not AuditExportDeadLetter.objects.exists()
    discarded = AuditRecord.objects.get(kind="settings", group="audit_export")
    assert discarded.detail["before"]["dead_letter"] == 1 and discarded.tool == other.name


def test_an_s3_secret_key_is_kept_and_never_shown(staff_user: Any) -> None:
    admin = _client(staff_user)
    secret = "s3-secret-access-key-123"  # noqa: S105
    form = _form(
        name="archive",
        kind="s3",
        url="",
        bucket="audit-archive",
        directory="cc/prod",
        access_key_id="AKIDEXAMPLE",
        secret_access_key=secret,
    )
    page = admin.post("/audit-export/", form, follow=True).content.decode()
    exporter = AuditExporter.objects.get()
    assert exporter.secret_access_key == secret and secret not in page
    assert "A secret key is stored" in page
    admin.post(f"/audit-export/{exporter.pk}/", form | {"secret_access_key": ""})
    exporter.refresh_from_db()
    assert exporter.secret_access_key == secret
    change = AuditRecord.objects.filter(group="audit_export").order_by("id").first()
    assert change is not None and change.detail["after"]["secret_access_key"] == "set"
