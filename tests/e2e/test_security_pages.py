"""The security team's pages of issue 37 in real Chromium, as an admin uses them.

* The Audit log shows the hash chain (how many records are linked, through which record it is
  signed, the key) and offers the verifiable export and the public key; both download, and
  the downloaded export verifies with the downloaded key.
* Audit export: the admin adds a syslog exporter to a loopback listener (the private-host box
  ticked), sees it listed with how far behind it is, opens it and sends a test record.

Each page is photographed at 1280 and 390 px wide, light and dark, into var/e2e-shots/.
"""

from __future__ import annotations

import socket
import threading

import pytest
from playwright.sync_api import expect

from infra import audit_chain as chain
from tests.e2e.conftest import login
from tests.e2e.test_approval_pages import shots
from tools_app.services import audit_chain
from tools_app.services.audit import audit_settings_change

pytestmark = [pytest.mark.e2e]


def _listener() -> tuple[socket.socket, list[bytes]]:
    """A TCP listener on loopback that keeps what it is sent (a syslog receiver's stand-in
    for the page; the real rsyslog is in tests/audit_export)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    received: list[bytes] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                while data := conn.recv(65536):
                    received.append(data)

    threading.Thread(target=serve, daemon=True).start()
    return server, received


def test_an_admin_checks_the_chain_and_streams_it_to_syslog(page, staff_user, tmp_path):
    for i in range(3):
        audit_settings_change(user=staff_user, group=f"shell{i}", before={}, after={"n": i})
    audit_chain.seal()
    login(page, "root", "root-password-1")

    page.goto("/tools/audit/")
    line = page.locator("#audit-chain")
    expect(line).to_contain_text("Hash chain: 3 records linked")
    expect(line).to_contain_text("signed through record 3")
    with page.expect_download() as got:
        line.get_by_role("link", name="Public key").click()
    key = tmp_path / "audit.pub"
    got.value.save_as(key)
    with page.expect_download() as got:
        line.get_by_role("link", name="Verifiable export").click()
    export = tmp_path / "chain.jsonl"
    got.value.save_as(export)
    report = chain.verify_lines(
        iter(export.read_text().splitlines()), chain.load_public_keys([key.read_bytes()])
    )
    assert report.ok and report.records == 3
    shots(page, "audit-chain")

    server, received = _listener()
    try:
        page.goto("/audit-export/")
        form = page.get_by_role("form", name="New exporter")
        form.get_by_label("Name").fill("siem-syslog")
        form.get_by_label("Kind").select_option("syslog")
        form.get_by_label("Syslog host").fill("127.0.0.1")
        form.get_by_label("Syslog port").fill(str(server.getsockname()[1]))
        form.get_by_label("Syslog transport").select_option("tcp")
        form.get_by_label("Allow a private or loopback host").check()
        form.get_by_role("button", name="Add exporter").click()
        expect(page.get_by_text("Exporter “siem-syslog” added.")).to_be_visible()
        page.get_by_role("link", name="Audit export").first.click()
        row = page.get_by_role("row", name="siem-syslog")
        expect(row).to_contain_text("3 records")
        shots(page, "audit-exporters")

        row.get_by_role("link", name="siem-syslog").click()
        page.get_by_role("button", name="Send test").click()
        expect(page.get_by_text("The test event was delivered.")).to_be_visible()
        assert received, "the listener got nothing"
        shots(page, "audit-exporter")
    finally:
        server.close()
