"""The Usage page in real Chromium, with the figures of a few dozen real turns (three people,
two groups, two models, tool calls that succeed and fail): the admin's charts and tables at
1280 and 390 px, light and dark, axe-clean; a member sees only their own; the CSV downloads."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.utils import timezone
from playwright.sync_api import expect

from chat_app.models import Conversation, ModelPrice, UsageRecord, UsageRecordGroup
from chat_app.services.turns import turn_start
from platform_app.models import Quota
from tests.conftest import wait_turn
from tests.e2e.conftest import docs_shot, login
from tests.e2e.test_layout import axe_violations
from tests.llm_server import Call, Reply, Usage
from tools_app.models import ToolCall

pytestmark = [pytest.mark.e2e]

SHOTS = Path(settings.VAR_DIR) / "screenshots"
DARK = {"light": "", "dark": "-dark"}  # the gallery's names: usage-1280, usage-dark-1280


def shoot(page: Any, name: str) -> None:
    """The whole page (docs/screenshots under ``make screenshots``), and in parts a person can
    look at (var/.../screenshots)."""
    docs_shot(page, name, full_page=True)
    SHOTS.mkdir(parents=True, exist_ok=True)
    width = page.viewport_size["width"]
    height = page.evaluate("document.documentElement.scrollHeight")
    step = 1400 if width > 600 else 1000
    for part, top in enumerate(range(0, height, step), start=1):
        clip = {"x": 0, "y": top, "width": width, "height": min(step, height - top)}
        page.screenshot(path=str(SHOTS / f"{name}-part{part}.png"), full_page=True, clip=clip)


@pytest.fixture
def team(worker: str, llm: Any, provider: Any) -> dict[str, Any]:
    """Thirty turns of three people over the last days, through the real loop."""
    users = get_user_model().objects
    ada = users.create_user("ada", password="ada-password-1", is_staff=True)
    ivy = users.create_user("ivy", password="ivy-password-1")
    bob = users.create_user("bob", password="bob-password-1")
    support, dev = Group.objects.create(name="support"), Group.objects.create(name="dev")
    ivy.groups.add(support)
    bob.groups.add(dev)
    provider.allowed_models = ["gpt-4o-mini"]
    provider.save()
    ModelPrice.objects.create(
        model="scripted-model", input_per_million=3, output_per_million=15, cached_per_million=0.3
    )
    ModelPrice.objects.create(model="gpt-4o-mini", input_per_million=0.15, output_per_million=0.6)
    Quota.objects.create(group=support, metric="cost", period="day", limit=5)

    def reply(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        size = 4000 + 300 * len(body["messages"])
        if last.get("role") == "tool":
            return Reply(text="Done.", usage=Usage(size, 120, cached=size // 2))
        if "fail" in str(last.get("content")):
            return Reply(
                calls=[Call("current_time", {"timezone": "Mars/Olympus"})], usage=Usage(size, 40)
            )
        return Reply(calls=[Call("current_time", {"timezone": "UTC"})], usage=Usage(size, 40))

    llm.set_default(reply)

    def work() -> None:  # in a thread: Playwright's loop owns this one (turns publish events)
        from django.db import connection

        turns = []
        for i in range(30):
            person = (ada, ivy, ivy, bob, bob)[i % 5]
            conversation = Conversation.objects.create(owner=person, title=f"work {i}")
            text = "please fail" if i % 7 == 3 else f"what time is it? #{i}"
            model = "gpt-4o-mini" if i % 3 == 0 else ""
            turns.append(
                turn_start(conversation=conversation, user_id=person.pk, text=text, model=model)
            )
        for turn in turns:
            wait_turn(turn.pk, timeout=60)
        connection.close()

    with ThreadPoolExecutor(1) as pool:
        pool.submit(work).result()
    # Spread them over the last week, as a week of work would be.
    for i, record in enumerate(UsageRecord.objects.order_by("id")):
        at = timezone.now() - timedelta(days=i % 7, hours=i % 5)
        UsageRecord.objects.filter(pk=record.pk).update(created_at=at)
        UsageRecordGroup.objects.filter(record=record).update(created_at=at)
        ToolCall.objects.filter(turn_id=record.turn_id).update(created_at=at)
    return {"ada": ada, "ivy": ivy, "bob": bob}


def test_the_usage_page_shows_a_teams_week_at_both_widths_in_both_themes(
    browser: Any, app_server: str, team: dict[str, Any]
) -> None:
    assert UsageRecord.objects.count() == 60  # two rounds per turn
    assert ToolCall.objects.filter(status="failed").count() >= 4
    for size, viewport in {
        "1280": {"width": 1280, "height": 900},
        "390": {"width": 390, "height": 844},
    }.items():
        for scheme in ("light", "dark"):
            context = browser.new_context(
                base_url=app_server, viewport=viewport, color_scheme=scheme
            )
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc, errors=errors: errors.append(str(exc)))
            login(page, "ada", "ada-password-1")
            page.goto("/usage/?range=7")
            expect(page.locator("body")).to_have_attribute("data-charts-ready", "true")
            expect(page.get_by_role("heading", name="Usage", exact=True)).to_be_visible()
            for heading in ("By day", "By person", "By group", "By model", "By agent", "By tool"):
                expect(page.get_by_role("heading", name=heading)).to_be_visible()
            expect(page.locator(".quota-list")).to_contain_text("support group")
            table = page.locator("#by-people-heading + .chart-box + .table-wrap")
            expect(table).to_contain_text("bob")
            expect(page.locator("#by-tool-heading ~ .table-wrap")).to_contain_text("current_time")
            # Charts drew something: every canvas has pixels that are not the background.
            drawn = page.evaluate(
                """() => [...document.querySelectorAll('canvas')].map((c) => {
                     const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
                     let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++;
                     return n > 200; })"""
            )
            assert drawn and all(drawn), drawn
            # Nothing wider than the screen.
            assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
            assert not axe_violations(page)
            shoot(page, f"usage{DARK[scheme]}-{size}")
            page.goto("/usage/limits/")
            expect(page.get_by_role("heading", name="Quotas and prices")).to_be_visible()
            expect(page.locator("#quotas-heading ~ .table-wrap")).to_contain_text("support")
            assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
            assert not axe_violations(page)
            shoot(page, f"usage-limits{DARK[scheme]}-{size}")
            assert not errors, errors
            context.close()


def test_a_member_sees_their_own_usage_and_downloads_it(
    browser: Any, app_server: str, team: dict[str, Any]
) -> None:
    context = browser.new_context(base_url=app_server, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    login(page, "ivy", "ivy-password-1")
    page.get_by_role("link", name="Usage").click()
    expect(page.locator("body")).to_have_attribute("data-charts-ready", "true")
    expect(page.get_by_role("heading", name="By person")).to_have_count(0)
    expect(page.get_by_text("Your model rounds and tool calls")).to_be_visible()
    with page.expect_download() as download:
        page.get_by_role("link", name="Rounds CSV").click()
    text = Path(download.value.path()).read_text()
    people = {line.split(",")[1] for line in text.splitlines()[1:]}
    assert people == {"ivy"}
    shoot(page, "usage-member-1280")
    context.close()
