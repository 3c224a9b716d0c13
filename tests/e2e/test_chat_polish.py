"""The chat's finish (issue 39 item 7) in real Chromium, at 1280 and 390 px, light and dark: the
conversation "⋯" menu is a popover over the list (Escape, a click outside, the keyboard), an
assistant reply shows the agent's mark and the model that wrote it, and the login page's
languages are readable buttons. axe-core on each; screenshots for the gallery."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from chat_app.models import Conversation, Message
from tests.e2e.conftest import docs_shot, login, wait_connected
from tests.e2e.test_layout import axe_violations
from tests.helpers import wait_for
from tools_app.models import ToolCall

pytestmark = [pytest.mark.e2e]

SIZES = ((1280, 800), (390, 844))
THEMES = ("light", "dark")


@pytest.fixture
def alice(transactional_db: None) -> Any:
    return get_user_model().objects.create_user("alice", password="alice-password-1")


def theme(page: Any, name: str) -> None:
    page.evaluate(f"document.documentElement.dataset.theme = '{name}'")


def a_conversation(owner: Any) -> Conversation:
    for title in ("Printer drivers", "Quarterly numbers", "Release checklist"):
        other = Conversation.objects.create(owner=owner, title=title)
        Message.objects.create(conversation=other, role="user", content=title)
    main = Conversation.objects.create(owner=owner, title="Kangaroo census plan")
    Message.objects.create(conversation=main, role="user", content="How many kangaroos?")
    Message.objects.create(
        conversation=main,
        role="assistant",
        content="The notes list **42** kangaroos near the river.",
        usage={"model": "gpt-4o-mini", "input_tokens": 120, "output_tokens": 14},
    )
    return main


def open_sidebar(page: Any) -> Any:
    sidebar = page.get_by_role("complementary", name="Conversations")
    if not sidebar.is_visible():
        page.get_by_role("button", name="Conversations").click()
        expect(sidebar).to_be_visible()
    # The drawer slides in: measure where things are once it stands still.
    page.wait_for_function(
        "getComputedStyle(document.querySelector('.sidebar')).transform === 'none'"
    )
    return sidebar


def test_the_conversation_menu_is_a_popover_over_the_list(page, alice) -> None:
    main = a_conversation(alice)
    login(page, "alice", "alice-password-1")
    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"/c/{main.pk}/")
        wait_connected(page)
        sidebar = open_sidebar(page)
        menu = sidebar.locator("details.conversation-actions")
        panel = menu.locator(".conversation-actions-panel")
        below = sidebar.locator("#conversation-list li").nth(1)
        before = below.bounding_box()

        # Opened with the keyboard: the panel floats over the list, which does not move.
        menu.locator("summary").focus()
        page.keyboard.press("Enter")
        expect(panel).to_be_visible()
        expect(panel.get_by_label("Title")).to_be_focused()
        after = below.bounding_box()
        assert before is not None and after is not None and after["y"] == before["y"]
        box = panel.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width
        assert box["y"] + box["height"] <= height
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        for name in THEMES:
            theme(page, name)
            assert axe_violations(page) == [], (width, name)
            docs_shot(page, f"chat-conversation-menu-{width}-{name}")

        # Escape closes it and gives the focus back to its button.
        page.keyboard.press("Escape")
        expect(panel).to_be_hidden()
        expect(menu.locator("summary")).to_be_focused()
        # A click outside closes it too.
        menu.locator("summary").click()
        expect(panel).to_be_visible()
        sidebar.locator(".conversation-group-label").first.click()
        expect(panel).to_be_hidden()
        # Its actions still work from the popover: pin, then the list is redrawn.
        menu.locator("summary").click()
        panel.locator("#pin-button").click()
        expect(sidebar.locator(".conversation-group").first).to_contain_text("Kangaroo")
        expect(sidebar.locator("#pin-button")).to_have_text("Unpin")
        open_sidebar(page)
        menu = sidebar.locator("details.conversation-actions")
        menu.locator("summary").click()
        expect(menu.locator(".conversation-actions-panel")).to_be_visible()
        menu.locator("#pin-button").click()  # unpinned again for the next size
        expect(sidebar.locator(".conversation-group").first).not_to_contain_text("Pinned")
        theme(page, "light")


def test_an_assistant_reply_shows_the_agents_mark_and_its_model(page, alice) -> None:
    main = a_conversation(alice)
    login(page, "alice", "alice-password-1")
    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        page.goto(f"/c/{main.pk}/")
        wait_connected(page)
        reply = page.locator(".message.role-assistant").first
        expect(reply.locator(".assistant-avatar")).to_be_visible()
        expect(reply.locator(".model-badge")).to_have_text("gpt-4o-mini")
        expect(page.locator(".message.role-user .model-badge")).to_have_count(0)
        if width == 1280:
            expect(page.locator("#agent-bar .assistant-avatar")).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        for name in THEMES:
            theme(page, name)
            assert axe_violations(page) == [], (width, name)
            docs_shot(page, f"chat-model-badge-{width}-{name}")
        theme(page, "light")


def test_the_login_pages_languages_are_readable_buttons(page, transactional_db) -> None:
    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        page.goto("/accounts/login/")
        choices = page.locator(".login-card .language-choice")
        expect(choices.first).to_be_visible()
        boxes = [choices.nth(i).bounding_box() for i in range(choices.count())]
        assert len({round(box["y"]) for box in boxes if box}) == 1  # side by side, one row
        for i, box in enumerate(boxes):
            assert box is not None and box["height"] >= 32 and box["width"] < 160, box
            size = choices.nth(i).evaluate("e => parseFloat(getComputedStyle(e).fontSize)")
            assert size >= 14
        for name in THEMES:
            theme(page, name)
            assert axe_violations(page) == [], (width, name)
            docs_shot(page.locator(".login-card"), f"login-languages-{width}-{name}")
        theme(page, "light")
    page.get_by_role("button", name="Русский").click()
    expect(page.get_by_role("heading", name="Войти")).to_be_visible()


def test_help_is_short_and_a_one_argument_tool_takes_plain_text(page, alice) -> None:
    main = a_conversation(alice)
    login(page, "alice", "alice-password-1")
    page.goto(f"/c/{main.pk}/")
    wait_connected(page)
    box = page.get_by_label("Message")
    box.fill("/help")
    box.press("Enter")
    notice = page.locator(".message.role-notice").last
    expect(notice).to_contain_text("/file_read <path>")
    expect(notice).to_contain_text("/tool text")
    for width, height in SIZES:
        page.set_viewport_size({"width": width, "height": height})
        notice.scroll_into_view_if_needed()
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        for name in THEMES:
            theme(page, name)
            assert axe_violations(page) == [], (width, name)
            docs_shot(page, f"chat-help-{width}-{name}")
        theme(page, "light")

    box.fill("/file_read upload.csv")
    box.press("Enter")
    expect(page.locator(".toolcall").last).to_contain_text("file_read")
    call = wait_for(
        lambda: ToolCall.objects.filter(tool="file_read").first(),
        message="the file_read call",
    )
    assert call.arguments == {"path": "upload.csv"}
    assert "takes JSON arguments" not in (call.error or "")
