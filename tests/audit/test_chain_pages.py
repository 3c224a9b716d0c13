"""The audit page's chain line, the verifiable export and the public key: staff only."""

from __future__ import annotations

import pytest
from django.urls import reverse

from infra import audit_chain as chain
from tests.helpers import logged_in
from tools_app.services import audit_chain
from tools_app.services.audit import audit_settings_change

pytestmark = [pytest.mark.modes]


def test_staff_download_a_chain_that_verifies_with_the_downloaded_key(staff_user):
    for i in range(3):
        audit_settings_change(user=staff_user, group=f"g{i}", before={}, after={"n": i})
    audit_chain.seal()
    client = logged_in(staff_user)
    page = client.get(reverse("tools:audit"))
    assert page.status_code == 200
    text = page.content.decode()
    assert "Hash chain: 3 records linked" in text and "signed through record 3" in text
    key = client.get(reverse("tools:audit_public_key")).content
    assert key.startswith(b"-----BEGIN PUBLIC KEY-----")
    export = client.get(reverse("tools:audit_chain_export"))
    assert export.status_code == 200 and "attachment" in export["Content-Disposition"]
    lines = b"".join(export.streaming_content).decode().splitlines()
    report = chain.verify_lines(iter(lines), chain.load_public_keys([key]))
    assert report.ok and report.records == 3
    assert client.get(reverse("tools:audit_chain_export") + "?since=x").status_code == 400
    assert client.get(reverse("tools:audit_chain_export") + "?since=7d").status_code == 200


def test_members_reach_neither_the_export_nor_the_key(user):
    client = logged_in(user)
    for name in ("tools:audit_chain_export", "tools:audit_public_key"):
        response = client.get(reverse(name))
        assert response.status_code in (302, 403), name
        assert b"BEGIN PUBLIC KEY" not in response.content


def test_metrics_show_the_chain_head_and_what_waits(db, client):
    from tools_app.models import AuditRecord

    for i in range(2):
        audit_settings_change(user=None, group=f"g{i}", before={}, after={"n": i})
    audit_chain.seal()
    AuditRecord.objects.create(kind="call", tool="shell_exec", status="awaiting_approval")
    text = client.get("/metrics").content.decode()
    assert "cc_audit_chain_head 2.0" in text
    (age,) = [
        float(line.split()[1])
        for line in text.splitlines()
        if line.startswith("cc_audit_unsealed_age_seconds ")
    ]
    assert 0 <= age < 60
    assert "cc_audit_checkpoint_age_seconds " in text
