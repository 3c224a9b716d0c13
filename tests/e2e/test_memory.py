"""A person saves a memory with a slash command and finds it again, in real Chromium against
the real server and worker (both modes: SQLite FTS5 embedded, PostgreSQL distributed)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from platform_app.models import MemoryChunk
from tests.e2e.conftest import login, wait_connected

pytestmark = [pytest.mark.e2e, pytest.mark.modes]


def card(page, tool: str):
    return page.locator(".toolcall", has=page.locator(".tool-name", has_text=tool))


def test_a_person_saves_a_memory_and_searches_it(page, user):
    login(page, "alice", "alice-password-1")
    wait_connected(page)
    page.get_by_label("Message").fill(
        '/memory_save {"content": "The spare office key is in the blue drawer.", "source": "e2e"}'
    )
    page.keyboard.press("Enter")
    saved = card(page, "memory_save")
    expect(saved.locator(".status-word")).to_have_text("succeeded")
    expect(saved.locator(".toolcall-args")).to_contain_text("blue drawer")
    assert MemoryChunk.objects.filter(user=user, source="e2e").count() == 1

    page.get_by_label("Message").fill('/memory_search {"query": "where is the office key?"}')
    page.keyboard.press("Enter")
    found = card(page, "memory_search")
    expect(found.locator(".status-word")).to_have_text("succeeded")
    found.locator("summary", has_text="Output").click()
    result = found.locator(".toolcall-result")
    expect(result).to_contain_text("The spare office key is in the blue drawer.")
    expect(result).to_contain_text('"source": "e2e"')
    # Hybrid by default: the local model runs in the worker, offline.
    expect(result).to_contain_text('"mode": "hybrid"')
    expect(found.locator(".toolcall-output")).to_contain_text("1 result(s), hybrid search")
    page.screenshot(path="var/test-memory-e2e.png", full_page=True)


def test_a_missing_core_memory_key_shows_a_failed_card(page, user):
    login(page, "alice", "alice-password-1")
    wait_connected(page)
    page.get_by_label("Message").fill(
        '/memory_core_delete {"section": "user", "key": "favourite_food"}'
    )
    page.keyboard.press("Enter")
    failed = card(page, "memory_core_delete")
    expect(failed.locator(".status-word")).to_have_text("failed")
    expect(failed.locator(".toolcall-error")).to_have_text(
        "there is no key 'favourite_food' in the user section; it is empty"
    )
