"""The self-service pages in real Chromium, at a laptop's and a phone's width (issue 23,
part 5): My memory (delete an entry), My schedules (the next runs follow the cron expression
as it is typed; create one), My reports (download one), reached from the account menu.

Screenshots for the docs through ``docs_shot``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from chat_app.models import Conversation
from platform_app.memory.services import memory_core_update, memory_save
from platform_app.models import MemoryChunk, Schedule
from platform_app.reports import report_write
from tests.e2e.conftest import docs_shot, login
from tests.security.test_report_quota import clear, reports_dir
from tools_app.models import ToolCall

pytestmark = [pytest.mark.e2e]

SIZES = {1280: {"width": 1280, "height": 800}, 390: {"width": 390, "height": 844}}


class _Defaults:
    pass


def _shot(page: Any, name: str) -> None:
    docs_shot(page, name, full_page=True)


@pytest.fixture
def belongings(user: Any) -> Any:
    for text in (
        "The spare office key is in the blue drawer.",
        "Quarterly numbers go to finance by the 5th.",
        "The staging database lives on db-staging-7.",
    ):
        memory_save(user_id=user.pk, content=text, source="chat", settings=_Defaults())
    memory_core_update(
        user_id=user.pk, section="user", key="name", value="Alice", settings=_Defaults()
    )
    memory_core_update(
        user_id=user.pk, section="user", key="timezone", value="Europe/Berlin", settings=_Defaults()
    )
    conversation = Conversation.objects.create(owner=user, title="Market study: e-bikes")
    clear(reports_dir(conversation))
    # Written as create_report writes it (run_tool would publish from this thread, where
    # the module's browser keeps an event loop).
    report_write(
        workspace=reports_dir(conversation).parent,
        folder="reports",
        title="E-bikes",
        content="# E-bikes\n\nSales grew 12% [1].\n\n[1] https://a.example/\n",
        max_bytes=1_000_000,
    )
    ToolCall.objects.create(
        tool="create_report", status=ToolCall.Status.SUCCEEDED, conversation=conversation, user=user
    )
    yield conversation
    clear(reports_dir(conversation))


def test_the_self_service_pages_at_both_sizes(
    browser: Any, app_server: str, user: Any, belongings: Conversation
) -> None:
    for width, viewport in SIZES.items():
        context = browser.new_context(base_url=app_server, viewport=viewport, accept_downloads=True)
        page = context.new_page()
        page.set_default_timeout(15_000)
        errors: list[str] = []
        page.on("pageerror", lambda exc, errors=errors: errors.append(str(exc)))
        try:
            login(page, "alice", "alice-password-1")

            # My memory, from the account menu (inside Menu on a phone): delete one entry
            if width == 390:
                page.locator("#menu-button").click()
            else:
                page.get_by_label("Account menu of alice").click()
            page.get_by_role("link", name="My memory").click()
            expect(page.get_by_role("heading", name="My memory")).to_be_visible()
            expect(page.get_by_text("Europe/Berlin")).to_be_visible()
            _shot(page, f"my-memory-{width}")
            entry = page.locator(".self-list li", has_text="Quarterly numbers")
            if entry.count():
                entry.get_by_role("button", name="Delete").click()
                expect(page.get_by_text("Memory entry deleted.")).to_be_visible()
            expect(page.locator(".self-list li", has_text="Quarterly numbers")).to_have_count(0)
            page.get_by_label("Search", exact=True).fill("staging")
            page.get_by_role("button", name="Search").click()
            expect(page.locator(".self-list li")).to_have_count(1)

            # My schedules: the preview follows the expression; create one
            page.locator(".self-nav").get_by_role("link", name="My schedules").click()
            expect(page.get_by_role("heading", name="My schedules")).to_be_visible()
            name = f"digest-{width}"
            page.get_by_label("Name").fill(name)
            page.get_by_label("When (cron)").fill("30 7 * * 1")
            expect(page.locator("#cron-preview li")).to_have_count(5)
            expect(page.locator("#cron-preview li").first).to_contain_text("Mon")
            expect(page.locator("#cron-preview li").first).to_contain_text("07:30")
            page.get_by_label("Message to the agent").fill("Summarise last week's tickets.")
            page.get_by_role("button", name="Create schedule").click()
            expect(page.get_by_text(f"Schedule “{name}” created.")).to_be_visible()
            expect(page.locator(".self-list li", has_text=name)).to_be_visible()
            _shot(page, f"my-schedules-{width}")
            assert Schedule.objects.filter(user=user, name=name, cron="30 7 * * 1").exists()

            # My reports: download one
            page.locator(".self-nav").get_by_role("link", name="My reports").click()
            expect(page.get_by_text("Market study: e-bikes")).to_be_visible()
            _shot(page, f"my-reports-{width}")
            with page.expect_download() as download:
                page.get_by_role("link", name="Download").first.click()
            assert "Sales grew 12%" in Path(download.value.path()).read_text()

            # nothing overflows the phone's width
            for path in ("/memory/", "/schedules/", "/reports/"):
                page.goto(path)
                wide = page.evaluate("document.documentElement.scrollWidth")
                assert wide <= viewport["width"], (path, wide)
        finally:
            context.close()
        assert not errors, errors
    assert not MemoryChunk.objects.filter(user=user, content__contains="Quarterly").exists()
