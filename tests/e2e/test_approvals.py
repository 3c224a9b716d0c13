"""Approvals in real Chromium: a member's call waits for an approver; the approver, in a
second browser, sees it appear live on the Approvals page (and the top bar's badge), approves
it with a note, and the member's card updates live."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group
from playwright.sync_api import expect

from tests.approvals.conftest import approver_mode
from tests.e2e.conftest import docs_shot, login, other_app_servers_paused, wait_connected
from tests.e2e.test_approval_pages import leads_of, signed_in
from tests.llm_server import Call, Reply
from tools_app.models import AuditRecord, ToolCall, ToolFunctionConfig

pytestmark = [pytest.mark.e2e, pytest.mark.modes]


def asks_and_waits(page: Any, text: str) -> Any:
    """alice's question on her chat page; its ``current_time`` card waits for the leads."""
    page.get_by_label("Message").fill(text)
    page.get_by_role("button", name="Send").click()
    card = page.locator(".toolcall", has=page.locator(".tool-name", has_text="current_time"))
    expect(card.locator(".approval-waiting")).to_have_text("Waiting for approval by: leads")
    return card


def test_an_approver_approves_a_members_call_from_the_approvals_page(
    page, browser, user, other_user, llm, provider
):
    leads = Group.objects.create(name="leads")
    leads.user_set.add(other_user)
    config = ToolFunctionConfig.objects.create(name="current_time", approval_mode="approver")
    config.approver_groups.set([leads])
    llm.script(
        Reply(calls=[Call("current_time", {"timezone": "Europe/Paris"})]),
        Reply(text="It is evening in Paris."),
    )
    # bob, an approver, has the Approvals page open in his own browser.
    approver_context = browser.new_context(viewport={"width": 1280, "height": 860})
    approver = approver_context.new_page()
    approver.set_default_timeout(15_000)
    errors: list[str] = []
    approver.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        login(page, "alice", "alice-password-1")
        wait_connected(page)
        base = "/".join(page.url.split("/")[:3])
        approver.goto(f"{base}/accounts/login/")
        approver.get_by_label("Username").fill("bob")
        approver.get_by_label("Password").fill("bob-password-1")
        approver.get_by_role("button", name="Log in").click()
        approver.wait_for_url(lambda url: "/accounts/login/" not in url)
        approver.get_by_role("link", name="Approvals").click()
        approver.wait_for_function("document.body.dataset.approvalsConnected === 'true'")
        expect(approver.get_by_text("Nothing waits for you.")).to_be_visible()
        # alice asks; her card says who must decide, with no buttons for her.
        card = asks_and_waits(page, "What time is it in Paris?")
        expect(card.get_by_role("button", name="Approve")).to_have_count(0)
        # It appears on bob's page without a reload, and his badge counts it.
        item = approver.locator(".approval-item")
        expect(item).to_have_count(1)
        expect(item.locator(".requester")).to_have_text("alice")
        expect(approver.locator("#approvals-badge")).to_have_text("1")
        expect(
            item.get_by_label("Arguments (JSON) — edit before approving if needed")
        ).to_have_value('{\n  "timezone": "Europe/Paris"\n}')
        item.get_by_label("Note (optional, shown to the requester)").fill("Fine, it is harmless.")
        docs_shot(approver, "approvals-1280", full_page=True)
        approver.set_viewport_size({"width": 390, "height": 844})
        docs_shot(approver, "approvals-390", full_page=True)
        approver.set_viewport_size({"width": 1280, "height": 860})
        item.get_by_role("button", name="Approve").click()
        expect(approver.get_by_text("Nothing waits for you.")).to_be_visible()
        expect(approver.locator("#approvals-badge")).to_be_hidden()
        # alice's card follows live: run, with bob's note; the turn goes on.
        expect(card.locator(".status-word")).to_have_text("succeeded")
        expect(card.locator(".decision-note")).to_contain_text("Fine, it is harmless.")
        expect(page.get_by_text("It is evening in Paris.")).to_be_visible()
    finally:
        approver_context.close()
    assert not errors, errors
    call = ToolCall.objects.get(tool="current_time")
    assert call.decided_by == other_user
    assert AuditRecord.objects.filter(kind="approval", tool_call=call, username="bob").exists()


def test_an_approver_typing_a_note_keeps_it_and_the_focus_while_another_call_arrives(
    page, browser, app_server, user, other_user, llm, provider
):
    """The Approvals page follows the queue live without touching the item someone is typing
    in: a new call appears below it, and the note goes on where the approver left it."""
    approver_mode("current_time", leads_of(other_user))
    llm.script(
        Reply(calls=[Call("current_time", {"timezone": "Europe/Paris"})]),
        Reply(calls=[Call("current_time", {"timezone": "Asia/Tokyo"})]),
    )
    login(page, "alice", "alice-password-1")
    wait_connected(page)
    asks_and_waits(page, "What time is it in Paris?")
    first = ToolCall.objects.get(tool="current_time")
    with signed_in(browser, app_server, "bob", "bob-password-1") as approver:
        approver.goto("/approvals/")
        approver.wait_for_function("document.body.dataset.approvalsConnected === 'true'")
        note = approver.locator(f"#approval-note-{first.pk}")
        note.click()
        approver.keyboard.type("Fine")
        # alice asks again in a new conversation: bob's list grows while he types.
        url = page.url
        page.get_by_role("button", name="+ New conversation").click()
        page.wait_for_url(lambda now: now != url)
        wait_connected(page)
        asks_and_waits(page, "And in Tokyo?")
        expect(approver.locator(".approval-item")).to_have_count(2)
        expect(note).to_be_focused()
        approver.keyboard.type(", it is harmless.")
        expect(note).to_have_value("Fine, it is harmless.")


def test_a_call_nobody_decides_expires_and_the_members_card_says_so(
    page, app_server, user, llm, provider
):
    """Left alone, a waiting call is denied by the server's own maintenance loop once it is
    older than APPROVAL_TIMEOUT_MINUTES; the member's card and the model see why."""
    leads = Group.objects.create(name="leads")
    config = ToolFunctionConfig.objects.create(name="current_time", approval_mode="approver")
    config.approver_groups.set([leads])
    llm.script(
        Reply(calls=[Call("current_time", {"timezone": "Europe/Paris"})]),
        Reply(text="Nobody approved the clock, sorry."),
    )
    login(page, "alice", "alice-password-1")
    wait_connected(page)
    card = asks_and_waits(page, "What time is it in Paris?")
    # Nobody decides: make the call 31 minutes old instead of waiting half an hour. The next
    # maintenance pass of this page's server denies it (one every ~7 s; on a loaded CI machine
    # a pass that talks to the Docker engine and the browser pool can take longer). The
    # session's other test servers are paused meanwhile: each runs the same pass on the same
    # database, and in embedded mode the one that denies tells only its own pages.
    call = ToolCall.objects.get(tool="current_time")
    with other_app_servers_paused(app_server):
        ToolCall.objects.filter(pk=call.pk).update(
            created_at=call.created_at - timedelta(minutes=31)
        )
        expect(card.locator(".status-word")).to_have_text("denied", timeout=60_000)
    expect(card.locator(".toolcall-error")).to_have_text("approval expired after 30 min")
    expect(card.locator(".approval-waiting")).to_have_count(0)
    expect(page.get_by_text("Nobody approved the clock, sorry.")).to_be_visible()
    call.refresh_from_db()
    assert call.status == "denied" and call.decided_by is None
    assert AuditRecord.objects.filter(tool_call=call, kind="approval").exists()
