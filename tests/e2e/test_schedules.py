"""A person adds a schedule with a slash command, sees it in the sidebar, and watches it fire
into the conversation: the scheduled message and the (scripted) model's answer arrive live, in
real Chromium against the real server, worker, runner and beat (in-process embedded, a
``celery beat`` process distributed). The clock is accelerated by moving the due time into
the past, never waited on."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.utils import timezone
from playwright.sync_api import expect

from platform_app.models import Schedule
from tests.conftest import start_beat_process, stop_process
from tests.e2e.conftest import login, run_app_server, wait_connected
from tests.llm_server import Reply

pytestmark = [pytest.mark.e2e, pytest.mark.modes]


@pytest.fixture(scope="module")
def app_server(django_db_setup: Any, worker_process: Any) -> Iterator[str]:
    """This module's own server, the only one with a beat: embedded mode runs beat inside it
    (as `make run` does) and its page must get the events of the turns it fires; distributed
    mode runs a `celery beat` process beside it (events travel through Redis)."""
    if settings.MODE == "embedded":
        with run_app_server(log_name="test-server-beat.log", SCHEDULES_TICK_SECONDS="1") as url:
            yield url
        return
    with run_app_server("--no-beat") as url:
        proc = start_beat_process(log_name="test-e2e-beat.log", tick=1.0)
        try:
            yield url
        finally:
            stop_process(proc)


def card(page, tool: str):
    return page.locator(".toolcall", has=page.locator(".tool-name", has_text=tool))


def test_a_person_adds_a_schedule_and_sees_it_fire(page, user, llm, provider):
    login(page, "alice", "alice-password-1")
    wait_connected(page)
    conversation_id = int(page.locator("#chat").get_attribute("data-conversation-id"))
    arguments = {
        "name": "e2e-briefing",
        "cron": "0 9 * * *",
        "message": "Give me the e2e briefing.",
        "inject_into": conversation_id,
    }
    page.get_by_label("Message").fill(f"/schedule_add {json.dumps(arguments)}")
    page.keyboard.press("Enter")
    added = card(page, "schedule_add")
    expect(added.locator(".status-word")).to_have_text("succeeded")
    sidebar = page.get_by_label("Schedules")
    expect(sidebar.locator(".schedule-name")).to_have_text("e2e-briefing")
    expect(sidebar.locator(".schedule-cron")).to_have_text("0 9 * * *")

    llm.script(Reply(text="Here is your **e2e briefing**: all quiet."))
    Schedule.objects.filter(name="e2e-briefing").update(
        next_run_at=timezone.now() - timedelta(minutes=1)  # accelerated clock: due now
    )
    fired = page.locator(".message.origin-schedule")
    expect(fired).to_contain_text("Give me the e2e briefing.", timeout=30_000)
    expect(fired.locator(".who")).to_have_text("Schedule")
    answer = page.locator(".message.role-assistant", has_text="all quiet")
    expect(answer.locator("strong")).to_have_text("e2e briefing", timeout=30_000)
    expect(sidebar.locator(".schedule-last")).to_have_text("succeeded", timeout=15_000)
    page.screenshot(path="var/test-schedules-e2e.png", full_page=True)
    schedule = Schedule.objects.get(name="e2e-briefing")
    assert schedule.run_count == 1 and schedule.next_run_at > timezone.now()
