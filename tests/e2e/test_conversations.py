"""Conversations in the browser (issue 23, part 1): the sidebar grouped by date, pin, search
as you type with highlighted snippets, export download, and a share link opened by a
second person — at 1280×800 and 390×844, with screenshots for the docs."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from playwright.sync_api import expect

from chat_app.models import Conversation, Message
from tests.e2e.conftest import docs_shot, login, wait_connected
from tools_app.models import ToolCall

pytestmark = [pytest.mark.e2e]


def conversations(owner: Any) -> Conversation:
    now = timezone.now()
    for title, days in [
        ("Offsite venues in Lisbon", 1),
        ("Release checklist", 3),
        ("Quarterly numbers", 12),
        ("Printer drivers", 70),
    ]:
        c = Conversation.objects.create(owner=owner, title=title)
        Conversation.objects.filter(pk=c.pk).update(updated_at=now - timedelta(days=days))
    main = Conversation.objects.create(owner=owner, title="Kangaroo census plan")
    Message.objects.create(
        conversation=main, role="user", content="Count the **kangaroos** in the park notes"
    )
    answer = Message.objects.create(
        conversation=main,
        role="assistant",
        content="The notes list 42 kangaroos near the river; the wombats were not counted.",
    )
    ToolCall.objects.create(
        conversation=main,
        message=answer,
        tool="shell_exec",
        arguments={"command": "grep -c kangaroo park-notes.txt"},
        status="succeeded",
        result={"success": True, "stdout": "42"},
        duration_ms=35,
    )
    return main


def no_overflow(page: Any) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], width


def test_sidebar_groups_pin_search_export_and_a_shared_link(page, browser, transactional_db):
    users = get_user_model().objects
    alice = users.create_user("alice", password="alice-password-1")
    users.create_user("bob", password="bob-password-1")
    main = conversations(alice)
    page.set_viewport_size({"width": 1280, "height": 800})
    login(page, "alice", "alice-password-1")
    wait_connected(page)
    sidebar = page.locator("#conversation-list")
    for label in ("Today", "Yesterday", "Previous 7 days", "Previous 30 days"):
        expect(sidebar.get_by_role("heading", name=label)).to_be_visible()

    # Pin the current conversation: it heads the list under "Pinned".
    page.locator(f"#conversation-link-{main.pk}").click()
    wait_connected(page)
    page.get_by_label("Conversation actions").click()
    page.locator("#pin-button").click()
    expect(sidebar.locator(".conversation-group").first).to_contain_text("Pinned")
    expect(sidebar.locator(".conversation-group").first).to_contain_text("Kangaroo census plan")
    docs_shot(page.locator(".sidebar"), "conversations-sidebar-1280")

    # Search as you type: snippets with the words marked; the list comes back on Escape.
    page.locator("#conversation-search").fill("kangaroo riv")
    hit = page.locator("#search-results .search-hit").first
    expect(hit).to_contain_text("Kangaroo census plan")
    expect(hit.locator("mark").first).to_be_visible()
    expect(sidebar).to_be_hidden()
    docs_shot(page.locator(".sidebar"), "conversations-search-1280")
    page.locator("#conversation-search").press("Escape")
    expect(sidebar).to_be_visible()
    page.locator("#conversation-search").fill("wombats")
    page.locator("#conversation-search").press("Enter")
    expect(page.get_by_role("heading", name="Search conversations")).to_be_visible()
    expect(page.locator(".search-page-results mark").first).to_have_text("wombats")

    # Export: a JSON file with the messages and the tool call.
    page.goto(f"/c/{main.pk}/")
    wait_connected(page)
    page.get_by_label("Conversation actions").click()
    with page.expect_download() as download:
        page.locator("#export-json").click()
    data = json.loads(Path(download.value.path()).read_text())
    assert data["title"] == "Kangaroo census plan"
    assert data["messages"][1]["tool_calls"][0]["result"]["stdout"] == "42"

    # Share without the tool calls; Bob opens the link.
    page.locator("#share-link").click()
    page.locator("#share-include-tools").uncheck()
    page.locator("#share-create").click()
    link = page.locator("#share-url").input_value()
    assert "/s/" in link
    for width, height in ((1280, 800), (390, 844)):
        context = browser.new_context(
            base_url=link.split("/s/")[0], viewport={"width": width, "height": height}
        )
        try:
            bob = context.new_page()
            login(bob, "bob", "bob-password-1")
            bob.goto(link)
            expect(bob.get_by_role("heading", name="Kangaroo census plan")).to_be_visible()
            expect(bob.get_by_text("42 kangaroos near the river")).to_be_visible()
            expect(bob.locator(".toolcall")).to_have_count(0)  # hidden by the owner's choice
            no_overflow(bob)
            docs_shot(bob, f"conversations-shared-{width}", full_page=True)
        finally:
            context.close()
    # Revoked: the link is dead.
    page.locator("#share-revoke").click()
    expect(page.locator("#share-none")).to_be_visible()
    context = browser.new_context(base_url=link.split("/s/")[0])
    try:
        bob = context.new_page()
        login(bob, "bob", "bob-password-1")
        assert bob.goto(link).status == 404
    finally:
        context.close()

    # The search page at phone size.
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/search/?q=kangaroo")
    expect(page.locator(".search-page-results .search-hit").first).to_be_visible()
    no_overflow(page)
    docs_shot(page, "conversations-search-390", full_page=True)
    page.set_viewport_size({"width": 1280, "height": 800})
    docs_shot(page, "conversations-search-page-1280", full_page=True)


def test_a_phone_pins_searches_exports_archives_and_imports_in_the_drawer(page, transactional_db):
    """The same actions at 390×844, where the conversations live in a drawer: pin, search as
    you type, export Markdown and JSON, archive and bring back, and import the exported file
    as a new conversation."""
    users = get_user_model().objects
    alice = users.create_user("alice", password="alice-password-1")
    main = conversations(alice)
    page.set_viewport_size({"width": 390, "height": 844})
    login(page, "alice", "alice-password-1")
    page.goto(f"/c/{main.pk}/")
    wait_connected(page)
    drawer = page.get_by_role("complementary", name="Conversations")
    expect(drawer).to_be_hidden()

    def actions() -> None:
        """Open the drawer and the open conversation's actions (a link followed closes the
        drawer, as on any phone page)."""
        if not drawer.is_visible():
            page.get_by_role("button", name="Conversations").click()
            expect(drawer).to_be_visible()
        menu = drawer.locator("details.conversation-actions")
        if menu.get_attribute("open") is None:
            drawer.get_by_label("Conversation actions").click()

    actions()
    no_overflow(page)

    # Pin the open conversation: it heads the drawer's list under "Pinned".
    page.locator("#pin-button").click()
    expect(drawer.locator(".conversation-group").first).to_contain_text("Pinned")
    expect(drawer.locator(".conversation-group").first).to_contain_text("Kangaroo census plan")

    # Export both ways from the drawer.
    actions()
    with page.expect_download() as markdown:
        page.locator("#export-md").click()
    text = Path(markdown.value.path()).read_text()
    assert "Kangaroo census plan" in text and "42 kangaroos near the river" in text
    actions()
    with page.expect_download() as exported:
        page.locator("#export-json").click()
    exported_path = exported.value.path()

    # Search as you type inside the drawer; Escape brings the list back.
    actions()
    page.locator("#conversation-search").fill("wombats")
    hit = page.locator("#search-results .search-hit").first
    expect(hit).to_contain_text("Kangaroo census plan")
    expect(hit.locator("mark").first).to_have_text("wombats")
    page.locator("#conversation-search").press("Escape")
    expect(page.locator("#conversation-list")).to_be_visible()

    # Archive it: out of the list, on the Archived page, and back again from there.
    actions()
    page.locator("#archive-button").click()
    page.wait_for_load_state()
    page.goto("/c/archived/")
    archived = page.locator(f"#archived-{main.pk}")
    expect(archived).to_contain_text("Kangaroo census plan")
    no_overflow(page)
    archived.get_by_role("button", name="Unarchive").click()
    expect(page.locator(f"#archived-{main.pk}")).to_have_count(0)
    main.refresh_from_db()
    assert main.archived_at is None

    # Import the exported file: a new conversation of hers with the same messages.
    page.goto("/c/import/")
    no_overflow(page)
    page.locator("#import-file").set_input_files(exported_path)
    page.get_by_role("button", name="Import").click()
    page.wait_for_url(lambda url: "/c/import/" not in url)
    copies = Conversation.objects.filter(owner=alice, title="Kangaroo census plan")
    assert copies.count() == 2
    imported = copies.exclude(pk=main.pk).get()
    expect(page.get_by_text("42 kangaroos near the river")).to_be_visible()
    assert f"/c/{imported.pk}/" in page.url
    no_overflow(page)
