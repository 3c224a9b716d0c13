"""Issue 39 in real Chromium, at 1280 and 390 px, light and dark, axe-clean: the grants
editor warns next to a grant no member can run (Docker kept for admins); a share link's page
has no Edit, Regenerate, version or approval buttons; conversations a program started
through the API are under their own tab of the sidebar, not in the chat's list; the Usage
page in Russian has its range buttons and chart legends in Russian."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.utils import timezone
from playwright.sync_api import expect

from chat_app.models import Conversation, Message, Turn, UsageRecord
from chat_app.services.sharing import share_create
from tests.e2e.conftest import docs_shot, login
from tests.e2e.test_layout import axe_violations
from tools_app.models import ToolCall, ToolGrant

pytestmark = [pytest.mark.e2e]

SIZES = {"1280": {"width": 1280, "height": 800}, "390": {"width": 390, "height": 844}}
THEMES = ("light", "dark")


def no_sideways_scroll(page: Any) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], f"{page.url} is {width}px wide"


@pytest.fixture
def ada(transactional_db: None) -> Any:
    return get_user_model().objects.create_user("ada", password="ada-password-1", is_staff=True)


@pytest.fixture
def bob(transactional_db: None) -> Any:
    return get_user_model().objects.create_user("bob", password="bob-password-1")


def each_view(browser: Any, app_server: str, **options: Any):
    for size, viewport in SIZES.items():
        for theme in THEMES:
            context = browser.new_context(
                base_url=app_server, viewport=viewport, color_scheme=theme, **options
            )
            try:
                yield size, theme, context.new_page()
            finally:
                context.close()


def test_the_grants_editor_warns_that_docker_is_for_admins_only(browser, app_server, ada):
    ops = Group.objects.create(name="ops")
    ToolGrant.objects.create(group=ops, kind="group", name="docker")
    problems: list[str] = []
    for size, theme, page in each_view(browser, app_server):
        login(page, "ada", "ada-password-1")
        page.goto(f"/people/groups/{ops.pk}/grants/")
        warning = page.locator("#grant-warning-docker")
        expect(warning).to_be_visible()
        expect(warning).to_contain_text("is for admins only in its settings")
        link = warning.get_by_role("link", name="Open Docker to members in the Tools Manager")
        expect(link).to_have_attribute("href", "/tools/groups/docker/edit/")
        warning.scroll_into_view_if_needed()
        no_sideways_scroll(page)
        docs_shot(page, f"grants-docker-warning-{theme}-{size}")
        problems += axe_violations(page)
        if size == "1280" and theme == "light":
            link.click()
            expect(page.get_by_label(re.compile("Staff only|Admins only"))).to_be_visible()
    assert not problems, problems


def test_a_shared_page_has_no_owner_controls(browser, app_server, ada, bob):
    conversation = Conversation.objects.create(owner=ada, title="Release notes draft")
    for n in range(3):
        turn = Turn.objects.create(conversation=conversation, user=ada, status="succeeded")
        Message.objects.create(
            conversation=conversation, turn=turn, role="user", content=f"Question {n}"
        )
        answer = Message.objects.create(
            conversation=conversation, turn=turn, role="assistant", content=f"Answer {n}"
        )
    ToolCall.objects.create(
        conversation=conversation,
        turn=turn,
        message=answer,
        user=ada,
        tool="shell_exec",
        arguments={"command": "ls"},
        status="awaiting_approval",
    )
    link = share_create(conversation, include_tools=True)
    problems: list[str] = []
    for size, theme, page in each_view(browser, app_server):
        login(page, "bob", "bob-password-1")
        page.goto(f"/s/{link.token}/")
        expect(page.get_by_role("heading", name="Release notes draft")).to_be_visible()
        expect(page.get_by_text("Answer 2")).to_be_visible()
        expect(page.locator(".toolcall")).to_have_count(1)
        for name in ("Edit", "Regenerate", "Approve", "Deny", "Previous version"):
            expect(page.get_by_role("button", name=name, exact=True)).to_have_count(0)
        expect(page.locator("[data-msg-action=edit], [data-msg-action=regenerate]")).to_have_count(
            0
        )
        expect(page.get_by_text("Edit arguments")).to_have_count(0)
        expect(page.get_by_role("button", name="Copy text").first).to_be_visible()
        no_sideways_scroll(page)
        docs_shot(page, f"shared-read-only-{theme}-{size}", full_page=True)
        problems += axe_violations(page)
    assert not problems, problems


def drawer(page: Any, size: str) -> None:
    """On a phone the sidebar is a drawer: open it."""
    if size == "390":
        page.locator("#drawer-button").click()
        expect(page.locator("#drawer-button")).to_have_attribute("aria-expanded", "true")


def test_api_conversations_are_under_their_own_tab(browser, app_server, ada):
    mine = Conversation.objects.create(owner=ada, title="Plan the offsite")
    scripted = [
        Conversation.objects.create(owner=ada, title=f"nightly report {n}", source="api")
        for n in range(3)
    ]
    problems: list[str] = []
    for size, theme, page in each_view(browser, app_server):
        login(page, "ada", "ada-password-1")
        page.goto("/")
        sidebar = page.locator("#conversation-list")
        expect(sidebar).to_contain_text("Plan the offsite")
        expect(sidebar).not_to_contain_text("nightly report")
        tabs = page.get_by_role("navigation", name="Conversations shown")
        drawer(page, size)
        expect(tabs.get_by_role("link", name="Chats")).to_have_attribute("aria-current", "page")
        tabs.get_by_role("link", name="API").click()
        expect(page).to_have_url(re.compile(f"/c/{scripted[-1].pk}/"))
        expect(sidebar).to_contain_text("nightly report 0")
        expect(sidebar).not_to_contain_text("Plan the offsite")
        drawer(page, size)
        expect(tabs.get_by_role("link", name="API")).to_have_attribute("aria-current", "page")
        docs_shot(page, f"sidebar-api-tab-{theme}-{size}")
        problems += axe_violations(page)
        tabs.get_by_role("link", name="Chats").click()
        expect(page).to_have_url(re.compile(f"/c/{mine.pk}/"))
    assert not problems, problems


ENGLISH = re.compile(r"\b(Last|days|This month|tokens|cost|succeeded|failed|running)\b")


def test_the_usage_page_in_russian_has_no_english_controls(browser, app_server, ada):
    now = timezone.now()
    conversation = Conversation.objects.create(owner=ada, title="t")
    for day in range(3):
        UsageRecord.objects.create(
            created_at=now - timezone.timedelta(days=day),
            user=ada,
            username="ada",
            model="scripted-model",
            conversation=conversation,
            source="chat",
            input_tokens=1200,
            output_tokens=300,
        )
    ToolCall.objects.create(
        conversation=conversation, user=ada, tool="current_time", status="succeeded"
    )
    ToolCall.objects.create(conversation=conversation, user=ada, tool="shell_exec", status="failed")
    problems: list[str] = []
    for size, theme, page in each_view(browser, app_server, locale="ru-RU"):
        page.goto("/accounts/login/")  # in Russian: its labels are too
        page.locator("#id_username").fill("ada")
        page.locator("#id_password").fill("ada-password-1")
        page.locator("form button[type=submit]").first.click()
        page.wait_for_url(lambda url: "/accounts/login/" not in url)
        page.goto("/usage/?range=30")
        expect(page.locator("html")).to_have_attribute("lang", "ru")
        page.wait_for_function("document.body.dataset.chartsReady === 'true'")
        presets = page.get_by_role("group", name="Готовые диапазоны")
        texts = presets.get_by_role("link").all_inner_texts()
        assert texts == ["Последние 7 дней", "Последние 30 дней", "Последние 90 дней", "Этот месяц"]
        legends = page.evaluate(
            """() => [...document.querySelectorAll("canvas")].flatMap((c) => {
                 const chart = Chart.getChart(c);
                 if (!chart) return [];
                 const y = chart.options.scales?.y?.title?.text || "";
                 return [y, ...chart.data.datasets.map((d) => d.label)];
               })"""
        )
        assert "токены на входе" in legends and "ошибка или отказ" in legends, legends
        english = [t for t in texts + legends if ENGLISH.search(str(t))]
        assert not english, english
        docs_shot(page, f"usage-ru-{theme}-{size}", full_page=True)
        problems += axe_violations(page)
    assert not problems, problems
