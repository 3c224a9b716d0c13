"""The approval pages of issue 36 in real Chromium, as the people who use them do.

* bob, an approver, opens the Approvals page, remembers his approval of alice's call "for this
  conversation" and approves; Approvals → Standing lists the grant (for whom, which function,
  where, which arguments, by whom); a later matching call runs without asking until bob
  revokes the grant there, after which such a call waits again.
* A function that needs two approvals: bob approves and alice's card says "1 of 2"; the call
  still waits; carol sees bob's approval on her queue and approves; the call runs.
* An admin opens the HTTP group's settings in the Tools Manager, reads its guards (secrets,
  personal data, filter webhook), changes what personal data in the arguments does and saves;
  a filter webhook that is not an http(s) URL is refused next to its input.
* A schedule's pre-approvals: alice, whose calls bob approves, is refused in words when she
  tries to pre-approve her own schedule's call; bob pre-approves it on Approvals → Schedules
  and both see it — alice on her schedule's page, bob on Approvals → Standing (by its name).
  A function alice confirms herself she pre-approves on her schedule's page, and editing the
  schedule's message voids it.

Each page is photographed at 1280 and 390 px wide, light and dark, into var/e2e-shots/.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection
from django.utils import timezone
from playwright.sync_api import expect

from platform_app.models import Schedule
from tests.approvals.conftest import approver_mode, requester_mode, waiting_call
from tests.conftest import ROOT
from tests.e2e.conftest import login, wait_connected
from tests.e2e.test_layout import axe_violations
from tests.llm_server import Call, Reply
from tools_app.models import StandingApproval, ToolCall, ToolGroupConfig
from tools_app.runtime import BindContext
from tools_app.services.binding import CallRequest, toolcall_bind

pytestmark = [pytest.mark.e2e]

SHOTS = ROOT / "var" / "e2e-shots"
SIZES = ((1280, 800), (390, 844))
UTC_NOW = {"tool": "current_time", "arguments": {"timezone": "UTC"}}


def shots(page: Any, name: str) -> None:
    """The page as it is, full length, at both widths in both colour schemes; nothing on it
    may push the page sideways, and axe-core finds nothing serious. Leaves it at 1280 px,
    light."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme, reduced_motion="reduce")
        for width, height in SIZES:
            page.set_viewport_size({"width": width, "height": height})
            page.screenshot(path=str(SHOTS / f"{name}-{width}-{scheme}.png"), full_page=True)
            sideways = page.evaluate(
                "document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert sideways <= 0, f"{name} scrolls sideways by {sideways}px at {width}"
            problems += [f"{width} {scheme}: {found}" for found in axe_violations(page)]
    page.emulate_media(color_scheme="light")
    page.set_viewport_size({"width": 1280, "height": 800})
    assert not problems, "\n".join(problems)


@contextlib.contextmanager
def signed_in(browser: Any, app_server: str, username: str, password: str) -> Iterator[Any]:
    """Another person's browser (their own context), signed in; no script errors allowed."""
    context = browser.new_context(base_url=app_server, viewport={"width": 1280, "height": 800})
    person = context.new_page()
    person.set_default_timeout(15_000)
    errors: list[str] = []
    person.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
    person.on(
        "console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None
    )
    try:
        login(person, username, password)
        yield person
    finally:
        context.close()
    assert not errors, f"JavaScript errors in {username}'s page: {errors}"


def leads_of(*people: Any) -> Group:
    group = Group.objects.create(name="leads")
    group.user_set.add(*people)
    return group


def off_the_loop(work: Callable[[], Any]) -> Any:
    """``work`` in a thread of its own: binding tells approvers through async_to_sync, which
    refuses the thread where Playwright's sync API keeps its event loop running."""

    def run() -> Any:
        try:
            return work()
        finally:
            connection.close()

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(run).result()


def waiting(user: Any, conversation: Any) -> ToolCall:
    """A call of current_time (UTC) by ``user`` in ``conversation``, left waiting."""
    return off_the_loop(
        lambda: waiting_call(
            "current_time", {"timezone": "UTC"}, user=user, conversation=conversation
        )
    )


def bound(arguments: dict[str, Any], *, user: Any, conversation: Any) -> ToolCall:
    """A new call of current_time by ``user``, bound as the chat binds the model's."""
    return off_the_loop(
        lambda: toolcall_bind(
            request=CallRequest(tool="current_time", arguments=arguments),
            ctx=BindContext(user_id=user.pk, conversation_id=conversation.pk, source="chat"),
        )
    )


def test_an_approver_remembers_an_approval_for_the_conversation_and_revokes_it(
    page, user, other_user, conversation
):
    approver_mode("current_time", leads_of(other_user))
    call = waiting(user, conversation)
    page.set_viewport_size({"width": 1280, "height": 800})
    login(page, "bob", "bob-password-1")
    page.get_by_role("link", name="Approvals").click()
    item = page.locator(f"#approval-{call.pk}")
    expect(item.locator(".requester")).to_have_text("alice")
    expect(item.locator(".conversation-title")).to_have_text("Test conversation")
    remember = item.get_by_role("group", name="Remember this approval")
    expect(remember.get_by_label("this call only")).to_be_checked()
    match = remember.get_by_role("combobox", name="timezone")
    expect(match).to_have_value("equals")
    # A path to be inside shows only while "inside this path" is chosen ("UTC" could be one).
    expect(remember.locator(".widen-prefix")).to_be_hidden()
    match.select_option("prefix")
    expect(remember.get_by_label("timezone: the path it must be inside")).to_have_value("UTC")
    match.select_option("equals")
    expect(remember.locator(".widen-prefix")).to_be_hidden()
    remember.get_by_label("for this conversation").check()
    shots(page, "approvals-queue-widen")

    item.get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator(".banner.success")).to_have_text(f"Call #{call.pk} approved.")
    expect(page.get_by_text("Nothing waits for you.")).to_be_visible()
    grant = StandingApproval.objects.get()
    assert (grant.scope, grant.user_id, grant.conversation_id, grant.granted_by_id) == (
        "conversation",
        user.pk,
        conversation.pk,
        other_user.pk,
    )
    assert grant.arguments == {"timezone": "UTC"} and grant.source_call_id == call.pk
    assert ToolCall.objects.get(pk=call.pk).status != ToolCall.Status.AWAITING_APPROVAL

    # A later matching call in that conversation runs without asking, as approved by it.
    again = bound({"timezone": "UTC"}, user=user, conversation=conversation)
    assert again.status == ToolCall.Status.QUEUED
    assert again.decision_note == f"approved by standing approval #{grant.pk} of bob"

    page.get_by_role("link", name="Standing").click()
    expect(page.get_by_role("link", name="Standing")).to_have_attribute("aria-current", "page")
    expect(page.locator("#approvals-link")).to_have_attribute("aria-current", "page")
    row = page.locator(f"#standing-{grant.pk}")
    expect(row.locator("td")).to_have_text(
        [
            str(grant.pk),
            "current_time",
            "alice",
            "conversation “Test conversation”",
            "timezone = UTC",
            "bob",
            "—",
            "1",
            "Revoke",
        ]
    )
    shots(page, "approvals-standing")

    row.get_by_role("button", name="Revoke").click()
    expect(page.locator(".banner.success")).to_have_text(f"Standing approval #{grant.pk} revoked.")
    # Kept for the record, marked revoked, with nothing left to click.
    expect(row.locator("td").last).to_have_text("revoked")
    expect(row.get_by_role("button", name="Revoke")).to_have_count(0)
    shots(page, "approvals-standing-revoked")
    grant.refresh_from_db()
    assert grant.revoked_at is not None and grant.revoked_by_id == other_user.pk
    # The same call now waits for an approver again.
    waits = waiting(user, conversation)
    assert waits.decided_by_id is None


def test_a_call_that_needs_two_approvals_runs_after_the_second(
    page, browser, app_server, user, other_user, llm, provider
):
    carol = get_user_model().objects.create_user("carol", password="carol-password-1")
    approver_mode("current_time", leads_of(other_user, carol), needed=2)
    llm.script(
        Reply(calls=[Call("current_time", {"timezone": "UTC"})]),
        Reply(text="It is noon in UTC."),
    )
    page.set_viewport_size({"width": 1280, "height": 800})
    login(page, "alice", "alice-password-1")
    wait_connected(page)
    page.get_by_label("Message").fill("What time is it in UTC?")
    page.get_by_role("button", name="Send").click()
    card = page.locator(".toolcall", has=page.locator(".tool-name", has_text="current_time"))
    expect(card.locator(".approval-waiting")).to_have_text("Waiting for approval by: leads")
    expect(card.locator(".approval-progress strong")).to_have_text("0 of 2 approvals")
    call = ToolCall.objects.get(tool="current_time")

    with signed_in(browser, app_server, "bob", "bob-password-1") as bob:
        bob.get_by_role("link", name="Approvals").click()
        item = bob.locator(f"#approval-{call.pk}")
        expect(item.locator(".approval-progress strong")).to_have_text("0 of 2 approvals")
        # Two approvers are two people: nothing of it may be remembered beyond this call.
        expect(item.locator(".widen-refused")).to_have_text(
            "this function needs more than one approval: an approval of it is for one call only"
        )
        item.get_by_label("Note (optional, shown to the requester)").fill("Fine by me.")
        item.get_by_role("button", name="Approve", exact=True).click()
        expect(bob.locator(".banner.success")).to_have_text(f"Call #{call.pk} approved.")
        # His part is done: the call left his queue.
        expect(bob.get_by_text("Nothing waits for you.")).to_be_visible()
        shots(bob, "approvals-queue-empty")
        # Nothing of it is remembered: bob's Standing list is empty.
        bob.get_by_role("link", name="Standing").click()
        expect(bob.locator(".standing-table td.empty-state")).to_have_text("No standing approvals.")
        shots(bob, "approvals-standing-empty")

    # alice's card follows live: one of two, by bob; the call still waits.
    expect(card.locator(".approval-progress strong")).to_have_text("1 of 2 approvals")
    expect(card.locator(".approved-by")).to_have_text(["bob"])
    expect(card.locator(".approval-waiting")).to_be_visible()
    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.AWAITING_APPROVAL
    card.scroll_into_view_if_needed()
    shots(page, "two-person-card")

    with signed_in(browser, app_server, "carol", "carol-password-1") as second:
        second.get_by_role("link", name="Approvals").click()
        item = second.locator(f"#approval-{call.pk}")
        expect(item.locator(".approval-progress strong")).to_have_text("1 of 2 approvals")
        expect(item.locator(".approved-by")).to_have_text(["bob"])
        expect(second.locator("#approvals-badge")).to_have_text("1")
        shots(second, "two-person-queue")
        item.get_by_role("button", name="Approve", exact=True).click()
        expect(second.get_by_text("Nothing waits for you.")).to_be_visible()

    expect(card.locator(".status-word")).to_have_text("succeeded")
    expect(card.locator(".approval-waiting")).to_have_count(0)
    expect(page.get_by_text("It is noon in UTC.")).to_be_visible()
    call.refresh_from_db()
    assert call.status == ToolCall.Status.SUCCEEDED and call.decided_by == carol
    assert [a.username for a in call.approvals.order_by("pk")] == ["bob", "carol"]


def test_an_admin_sets_what_the_http_groups_guards_do(page, staff_user):
    page.set_viewport_size({"width": 1280, "height": 800})
    login(page, "root", "root-password-1")
    page.goto("/tools/")
    page.get_by_role("link", name="Edit HTTP settings").click()
    form = page.get_by_role("form", name="HTTP settings")
    defaults = {
        "Guard secrets arguments": "approval",
        "Guard secrets result": "redact",
        "Guard pii arguments": "allow",
        "Guard pii result": "allow",
        "Filter url": "",
        "Filter timeout": "5",
        "Filter on failure": "closed",
    }
    for label, value in defaults.items():
        expect(form.get_by_label(label, exact=True)).to_have_value(value)
    expect(form.get_by_label("Filter secret", exact=True)).to_be_visible()
    expect(form.get_by_label("Filter private hosts", exact=True)).to_be_visible()
    expect(form.get_by_label("Guard pii arguments", exact=True).locator("option")).to_have_text(
        ["allow", "redact", "approval", "block"]
    )
    shots(page, "group-guards")

    # Personal data in the arguments: a person decides.
    form.get_by_label("Guard pii arguments", exact=True).select_option("approval")
    form.get_by_role("button", name="Save").click()
    expect(form.locator("#settings-saved")).to_contain_text("Saved: guard_pii_arguments changed.")
    assert ToolGroupConfig.objects.get(name="http").settings["guard_pii_arguments"] == "approval"
    expect(form.get_by_label("Guard pii arguments", exact=True)).to_have_value("approval")

    # A filter webhook that is no http(s) URL: refused next to its input, nothing saved.
    form.get_by_label("Filter url", exact=True).fill("ftp://filters.example.com/check")
    form.get_by_label("Filter on failure", exact=True).select_option("open")
    form.get_by_role("button", name="Save").click()
    expect(form.locator("#settings-errors")).to_contain_text("Not saved: 1 field needs attention.")
    field = form.locator(".field.has-error")
    expect(field.locator("label")).to_have_text("Filter url")
    expect(field.locator(".field-error")).to_have_text(
        "the filter webhook must be an https:// URL with a host"
    )
    expect(form.get_by_label("Filter url", exact=True)).to_have_value(
        "ftp://filters.example.com/check"
    )
    field.scroll_into_view_if_needed()
    shots(page, "group-guards-error")
    stored = ToolGroupConfig.objects.get(name="http").settings
    assert stored.get("filter_url", "") == "" and stored.get("filter_on_failure") == "closed"


def _schedule_of(user: Any) -> Schedule:
    return Schedule.objects.create(
        user=user,
        name="nightly",
        cron="0 3 * * *",
        message='/current_time {"timezone": "UTC"}',
        next_run_at=timezone.now() + timedelta(hours=1),
    )


def test_an_approvers_preapproval_of_a_schedule_shows_to_its_owner_and_approver(
    page, browser, app_server, user, other_user
):
    approver_mode("current_time", leads_of(other_user))
    schedule = _schedule_of(user)
    page.set_viewport_size({"width": 1280, "height": 800})
    login(page, "alice", "alice-password-1")
    page.goto("/schedules/")
    page.get_by_role("link", name="Edit nightly").click()
    expect(page.locator("#preapprovals")).to_have_text(
        "None: calls that need approval wait for it, as in a chat."
    )
    # bob decides alice's current_time calls: she may not pre-approve them herself.
    form = page.get_by_role("form", name="Pre-approve a call")
    form.get_by_label("Function").fill("current_time")
    form.get_by_label("Arguments (JSON)", exact=True).fill('{"timezone": "UTC"}')
    form.get_by_role("button", name="Pre-approve").click()
    expect(page.locator(".banner.danger")).to_contain_text("you asked for this call")
    assert not StandingApproval.objects.exists()
    shots(page, "schedule-preapprove-refused")

    # bob pre-approves it for the schedule's runs, from Approvals → Schedules.
    with signed_in(browser, app_server, "bob", "bob-password-1") as bob:
        bob.get_by_role("link", name="Approvals").click()
        bob.get_by_role("link", name="Schedules").click()
        card = bob.locator(f"#schedule-{schedule.pk}")
        expect(card.get_by_role("heading")).to_contain_text("nightly of alice")
        expect(card.locator("pre")).to_have_text('/current_time {"timezone": "UTC"}')
        form = card.get_by_role("form", name="Pre-approve a call")
        form.get_by_label("Function").fill("current_time")
        form.get_by_label("Arguments (JSON)", exact=True).fill('{"timezone": "UTC"}')
        form.get_by_role("button", name="Pre-approve").click()
        expect(bob.locator(".banner").first).to_contain_text(
            "Pre-approved current_time for schedule “nightly”"
        )
        grant = StandingApproval.objects.get()
        expect(bob.locator(f"#preapproval-{grant.pk}")).to_contain_text("by bob")
        shots(bob, "approvals-schedules")
    assert (grant.scope, grant.schedule_id, grant.user_id, grant.granted_by_id) == (
        "schedule",
        schedule.pk,
        user.pk,
        other_user.pk,
    )
    page.reload()
    shown = page.locator(f"#preapproval-{grant.pk}")
    expect(shown).to_contain_text("current_time")
    expect(shown).to_contain_text("timezone=UTC")
    expect(shown).to_contain_text(f"by bob (#{grant.pk})")
    expect(shown.locator(".tag")).to_have_text("active")
    shots(page, "schedule-preapproved")

    with signed_in(browser, app_server, "bob", "bob-password-1") as bob:
        bob.get_by_role("link", name="Approvals").click()
        bob.get_by_role("link", name="Standing").click()
        row = bob.locator(f"#standing-{grant.pk}")
        expect(row.locator("td")).to_have_text(
            [
                str(grant.pk),
                "current_time",
                "alice",
                "schedule “nightly”",
                "timezone = UTC",
                "bob",
                "—",
                "0",
                "Revoke",
            ]
        )
        shots(bob, "approvals-standing-schedule")


def test_an_owner_preapproves_a_call_she_confirms_herself_until_she_edits_the_schedule(page, user):
    requester_mode("current_time")
    schedule = _schedule_of(user)
    page.set_viewport_size({"width": 1280, "height": 800})
    login(page, "alice", "alice-password-1")
    page.goto(f"/schedules/{schedule.pk}/")
    form = page.get_by_role("form", name="Pre-approve a call")
    form.get_by_label("Function").fill("current_time")
    form.get_by_label("Arguments (JSON)", exact=True).fill('{"timezone": "UTC"}')
    form.get_by_role("button", name="Pre-approve").click()
    grant = StandingApproval.objects.get()
    expect(page.locator(".banner.success")).to_have_text(
        f"Pre-approved current_time for schedule “nightly” (standing approval #{grant.pk})."
    )
    shown = page.locator(f"#preapproval-{grant.pk}")
    expect(shown).to_contain_text(f"by alice (#{grant.pk})")
    expect(shown.locator(".tag")).to_have_text("active")
    assert (grant.scope, grant.schedule_id, grant.granted_by_id) == (
        "schedule",
        schedule.pk,
        user.pk,
    )

    # What the schedule asks changes: the pre-approval no longer stands for it.
    edit = page.get_by_role("form", name="Edit schedule")
    edit.get_by_label("Message to the agent").fill('/current_time {"timezone": "UTC"} please')
    edit.get_by_role("button", name="Save").click()
    expect(page.locator(".banner.success")).to_have_text("Schedule “nightly” saved.")
    page.get_by_role("link", name="Edit nightly").click()
    expect(page.locator(f"#preapproval-{grant.pk} .tag")).to_have_text(
        "void: the schedule changed since"
    )
    shots(page, "schedule-preapproval-void")
