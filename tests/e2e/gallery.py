"""Screenshots of every page at 1280x800 and 390x844 for docs/GALLERY.md.

Not part of the suite (the name does not match test_*.py); run it on purpose:

    make screenshots    # = pytest tests/e2e/gallery.py -p no:warnings

It fills a fresh test database with a small, realistic team (an admin, a person, a group,
three conversations with tool calls, a report, a schedule, a token) and writes
docs/screenshots/<page>-<width>.png, plus the chat, Tools and People in dark mode.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from playwright.sync_api import expect

from chat_app.models import Conversation
from platform_app.api_tokens import api_token_create
from platform_app.models import Schedule
from platform_app.reports import _reports_place, report_write
from tests.e2e.conftest import login, wait_connected
from tests.llm_server import Call, Reply
from tools_app.models import AuditRecord

# grants: the pages show what a fresh install grants (Everyone: the low-risk tools only).
pytestmark = [pytest.mark.e2e, pytest.mark.grants]

OUT = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
SIZES = {"1280": {"width": 1280, "height": 800}, "390": {"width": 390, "height": 844}}


def shoot(page: Any, name: str, size: str) -> None:
    page.wait_for_load_state("networkidle")
    page.screenshot(path=str(OUT / f"{name}-{size}.png"))


def test_gallery(browser: Any, app_server: str, llm: Any, provider: Any) -> None:
    users = get_user_model()
    ada = users.objects.create_superuser("ada", password="ada-password-1", email="ada@example.com")
    ivy = users.objects.create_user("ivy", password="ivy-password-1", email="ivy@example.com")
    support = Group.objects.create(name="support")
    ivy.groups.add(support)
    for title in ("Nightly backup check", "Draft the release notes"):
        Conversation.objects.create(owner=ada, title=title)
    api_token_create(user=ada, name="laptop — Claude Desktop")
    llm.script(
        Reply(
            text="Let me check the clock in both cities.",
            calls=[
                Call("current_time", {"timezone": "Europe/Paris"}),
                Call("current_time", {"timezone": "America/New_York"}),
            ],
        ),
        Reply(text="It is **evening** in Paris and early afternoon in New York."),
    )

    context = browser.new_context(base_url=app_server, viewport=SIZES["1280"])
    page = context.new_page()
    page.set_default_timeout(15_000)
    login(page, "ada", "ada-password-1")
    wait_connected(page)
    page.get_by_label("Message").fill("What time is it in Paris and in New York?")
    page.keyboard.press("Enter")
    expect(page.get_by_text("early afternoon")).to_be_visible()
    conversation = Conversation.objects.filter(owner=ada).order_by("-updated_at").first()
    assert conversation is not None
    workspace, folder, max_bytes = _reports_place(conversation)
    report_write(
        workspace=workspace,
        folder=folder,
        title="Time zones of the team",
        content="# Time zones\n\nParis and New York.",
        max_bytes=max_bytes,
    )
    Schedule.objects.create(
        user=ada, name="morning-briefing", cron="0 9 * * 1-5", message="Summarise the night."
    )
    chat_url = f"/c/{conversation.pk}/"
    pages = {
        "chat": chat_url,
        "tools": "/tools/",
        "audit": "/tools/audit/",
        "tokens": "/tokens/",
        "people": "/people/",
        "people-user": f"/people/users/{ivy.pk}/",
        "people-groups": "/people/groups/",
        "people-group": f"/people/groups/{support.pk}/",
        "error-404": "/no-such-page/",
        "error-405": f"/c/{conversation.pk}/delete/",
        "archived": "/c/archived/",
        "import": "/c/import/",
        "password": "/accounts/password/",
        "audit-record": f"/tools/audit/{AuditRecord.objects.latest('pk').pk}/",
        "tools-mcp-new": "/tools/sources/mcp/new/",
    }
    for size, viewport in SIZES.items():
        page.set_viewport_size(viewport)
        for name, url in pages.items():
            page.goto(url)
            shoot(page, name, size)
        page.goto(chat_url)
        if size == "1280":
            page.locator("main").click(position={"x": 5, "y": 5})
            page.keyboard.press("?")
            shoot(page, "shortcuts", size)
            page.keyboard.press("Escape")
        if size == "390":
            page.get_by_role("button", name="Conversations").click()
            page.wait_for_timeout(300)  # the drawer's slide
            shoot(page, "chat-drawer", size)
            page.keyboard.press("Escape")
            page.wait_for_timeout(300)
            page.get_by_role("button", name="Menu").click()
            shoot(page, "chat-menu", size)
            page.locator("#theme-toggle").click()
            page.get_by_role("button", name="Menu").click()
        else:
            page.locator("#theme-toggle").click()
        shoot(page, "chat-dark", size)
        for name in ("tools", "people"):
            page.goto(pages[name])
            shoot(page, f"{name}-dark", size)
        page.goto(chat_url)
        if size == "390":
            page.get_by_role("button", name="Menu").click()
        page.locator("#theme-toggle").click()
    context.close()

    anonymous = browser.new_context(base_url=app_server)
    page = anonymous.new_page()
    for size, viewport in SIZES.items():
        page.set_viewport_size(viewport)
        page.goto("/accounts/login/")
        shoot(page, "login", size)
    anonymous.close()
