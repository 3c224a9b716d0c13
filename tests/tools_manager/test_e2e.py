"""An admin using the Tools Manager and the audit log in real Chromium, against the real
server and worker (both modes). The page fixture fails a test on any JavaScript error."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import expect

from tests.e2e.conftest import login
from tests.helpers import wait_for
from tools_app import selectors
from tools_app.models import AuditRecord, ToolCall, ToolFunctionConfig, ToolGroupConfig

pytestmark = [pytest.mark.e2e, pytest.mark.modes]

SHOTS = Path(settings.VAR_DIR) / "screenshots"


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"tools-{name}.png"), full_page=True)


def as_admin(page) -> None:
    login(page, "root", "root-password-1")
    page.goto("/tools/")


def group_switch(page):
    return page.locator("#group-time .group-row").get_by_role("switch", name="Enabled")


def test_an_admin_switches_a_tool_group_off_and_on_without_a_reload(page, staff_user):
    as_admin(page)
    page.evaluate("window.notReloaded = true")
    expect(group_switch(page)).to_be_checked()
    shot(page, "manager")
    group_switch(page).click()
    expect(page.locator("#group-time")).to_have_class(re.compile(r"\bis-disabled\b"))
    expect(group_switch(page)).not_to_be_checked()
    assert ToolGroupConfig.objects.get(name="time").enabled is False
    group_switch(page).click()
    expect(page.locator("#group-time")).not_to_have_class(re.compile(r"\bis-disabled\b"))
    expect(group_switch(page)).to_be_checked()
    assert selectors.group_enabled("time") is True
    assert page.evaluate("window.notReloaded") is True
    changes = AuditRecord.objects.filter(kind="settings", group="time").order_by("id")
    assert [r.detail["after"] for r in changes] == [{"enabled": False}, {"enabled": True}]


def test_an_admin_edits_a_setting_sees_a_rejection_inline_then_saves(page, staff_user):
    as_admin(page)
    page.get_by_role("link", name="Edit Time settings").click()
    timeout = page.get_by_label("Timeout", exact=True)
    expect(timeout).to_have_value("5")
    timeout.fill("999")
    page.get_by_role("button", name="Save").click()
    error = page.locator(".field.has-error .field-error")
    expect(error).to_have_text(re.compile("less than or equal to 60"))
    expect(page.get_by_label("Timeout", exact=True)).to_have_value("999")
    shot(page, "edit-error")
    assert selectors.group_settings("time").timeout_seconds == 5
    page.get_by_label("Timeout", exact=True).fill("12")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#settings-saved")).to_contain_text("timeout_seconds changed")
    expect(page.locator(".field-error")).to_have_count(0)
    assert selectors.group_settings("time").timeout_seconds == 12
    page.get_by_role("link", name="See it in the audit log").click()
    row = page.locator(".audit-row.kind-settings").first
    expect(row).to_contain_text("timeout_seconds")
    expect(row).to_contain_text("root")
    row.get_by_role("link").first.click()
    expect(page.locator(".diff-table")).to_contain_text("timeout_seconds")
    expect(page.locator(".diff-table .before")).to_have_text("5")
    expect(page.locator(".diff-table .after")).to_have_text("12")
    shot(page, "audit-settings-detail")


def run_card(page):
    return page.locator(".test-run .toolcall").first


def test_an_admin_presses_test_and_watches_the_call_succeed(page, staff_user):
    as_admin(page)
    page.get_by_role("link", name="Test current_time").click()
    expect(page.get_by_label("Timezone")).to_have_value("Europe/Berlin")  # the example
    page.get_by_label("Timezone").fill("Asia/Tokyo")
    page.get_by_role("button", name="Run test").click()
    card = run_card(page)
    expect(card.locator(".status-word")).to_have_text("succeeded")
    expect(card.locator(".toolcall-result")).to_contain_text('"timezone": "Asia/Tokyo"')
    expect(page.locator(".test-run")).to_have_attribute("data-status", "succeeded")
    card.get_by_text("Output and result").click()
    shot(page, "test-succeeded")
    call = ToolCall.objects.get(source="test")
    assert call.status == "succeeded" and call.worker
    record = AuditRecord.objects.get(kind="call", tool_call=call)
    assert (record.source, record.username, record.status) == ("test", "root", "succeeded")
    # The card's audit link leads to that record, which links back to the Test card.
    card.get_by_role("link", name="audit").click()
    expect(page).to_have_url(re.compile(rf"/tools/audit/{record.pk}/$"))
    shot(page, "audit-call-detail")
    page.get_by_role("link", name="open its Test card").click()
    expect(run_card(page).locator(".status-word")).to_have_text("succeeded")
    # The manager's "last test" column now shows it.
    page.goto("/tools/")
    expect(page.locator("#group-time .last-test")).to_have_text("succeeded")


def test_a_test_that_requires_approval_is_approved_in_the_page(page, staff_user):
    as_admin(page)
    page.locator("#function-current_time").get_by_label("Approval").select_option("requester")
    expect(page.locator("#function-current_time .tag-warn")).to_have_text("approval")
    assert ToolFunctionConfig.objects.get(name="current_time").approval_mode == "requester"
    page.get_by_role("link", name="Test current_time").click()
    page.get_by_role("button", name="Run test").click()
    card = run_card(page)
    expect(card.locator(".status-word")).to_have_text("awaiting approval")
    expect(page.locator(".test-run")).to_have_attribute("data-connected", "true")
    shot(page, "test-awaiting-approval")
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(card.locator(".status-word")).to_have_text("succeeded")
    decision = wait_for(lambda: AuditRecord.objects.filter(kind="approval").first())
    assert (decision.status, decision.username) == ("approved", "root")


def test_an_admin_exports_the_audit_log(page, staff_user):
    AuditRecord.objects.create(
        kind="call",
        tool="current_time",
        group="time",
        status="succeeded",
        source="api",
        username="root",
        arguments={"timezone": "Europe/Paris"},
        result={"time": "12:00:00"},
    )
    AuditRecord.objects.create(
        kind="call",
        tool="current_time",
        group="time",
        status="failed",
        source="chat",
        username="root",
        arguments={"timezone": "Mars/Olympus"},
        error="unknown timezone",
    )
    as_admin(page)
    page.goto("/tools/audit/")
    page.get_by_label("Search").fill("paris")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator(".result-count")).to_have_text("1 record matches")
    shot(page, "audit-list")
    with page.expect_download() as download:
        page.get_by_role("link", name="Export CSV").click()
    text = Path(download.value.path()).read_text(encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 1 and json.loads(rows[0]["arguments"]) == {"timezone": "Europe/Paris"}
    assert download.value.suggested_filename.endswith(".csv")
    page.get_by_role("link", name="Clear").click()
    with page.expect_download() as download:
        page.get_by_role("link", name="Export JSONL").click()
    lines = Path(download.value.path()).read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert {r["status"] for r in records} == {"succeeded", "failed"}
    assert next(r for r in records if r["status"] == "failed")["error"] == "unknown timezone"


@pytest.mark.expect_http_errors
def test_a_switch_the_server_refuses_flips_back_and_says_so(page, staff_user):
    as_admin(page)
    page.route("**/tools/groups/time/enabled/", lambda route: route.fulfill(status=503))
    group_switch(page).click()
    expect(page.locator("#group-time .group-row .switch-error")).to_have_text("not saved (503)")
    expect(group_switch(page)).to_be_checked()
    assert selectors.group_enabled("time") is True


def test_an_admin_reads_a_groups_limits_and_its_docs_page(page, staff_user):
    from tests.e2e.test_layout import axe_violations

    as_admin(page)
    browser_row = page.locator("#group-browser")
    expect(browser_row.locator(".key-limits")).to_contain_text("Timeout: 30 s")
    expect(browser_row.locator(".key-limits")).to_contain_text("Allowed domains: any public host")
    page.get_by_role("link", name="Docs of Docker").click()
    expect(page.get_by_role("heading", name="Docker tools")).to_be_visible()
    expect(page.locator(".group-docs")).to_contain_text("container_run")
    assert axe_violations(page) == []
    shot(page, "docs-docker")
