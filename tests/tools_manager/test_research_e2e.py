"""An admin sets up web search in real Chromium: picks the Tavily-compatible backend, stores its
key (never shown again), sees the backend in the Tools Manager and runs web_search with Test
against a local server that speaks the Tavily API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from playwright.sync_api import expect

from tests.e2e.conftest import login
from tests.tools.research.conftest import TAVILY_KEY
from tests.tools.research.servers import Server
from tools_app import selectors
from tools_app.executors.research.settings import ResearchSettings

pytestmark = [pytest.mark.e2e, pytest.mark.modes]

SHOTS = Path(settings.VAR_DIR) / "screenshots"


def test_an_admin_configures_a_search_backend_and_tests_it(
    page: Any, staff_user: Any, tavily: Server
) -> None:
    tavily.results = [("Hedgehog - Wikipedia", "https://en.wikipedia.org/wiki/Hedgehog", "Spiny.")]
    login(page, "root", "root-password-1")
    page.goto("/tools/")
    expect(page.locator("#group-research .sandbox-cell")).to_contain_text("no search backend")

    page.get_by_role("link", name="Edit Research settings").click()
    page.get_by_label("Search backend").select_option("tavily")
    page.get_by_label("Search url").fill(tavily.url(""))
    page.get_by_label("Search api key", exact=True).fill(TAVILY_KEY)
    page.get_by_label("Search private allowed").fill(tavily.host)
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#settings-saved")).to_contain_text("search_api_key")
    expect(page.get_by_label("Search api key", exact=True)).to_have_value("")
    expect(
        page.get_by_text("A value is stored (encrypted); leave blank to keep it.")
    ).to_be_visible()
    assert TAVILY_KEY not in page.content()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "tools-research-settings.png"), full_page=True)
    stored = selectors.group_settings("research", ResearchSettings)
    assert stored.search_api_key.get_secret_value() == TAVILY_KEY

    page.goto("/tools/")
    expect(page.locator("#group-research .sandbox-cell")).to_contain_text(
        f"Tavily-compatible: {tavily.host}"
    )
    page.get_by_role("link", name="Test web_search").click()
    page.get_by_role("button", name="Run test").click()
    card = page.locator(".test-run .toolcall")
    expect(card.locator(".status-word")).to_have_text("succeeded")
    card.locator("summary", has_text="Output").click()
    expect(card.locator(".toolcall-result")).to_contain_text(
        "https://en.wikipedia.org/wiki/Hedgehog"
    )
    assert TAVILY_KEY not in page.content()
    page.screenshot(path=str(SHOTS / "tools-research-test.png"), full_page=True)
    [hit] = tavily.hits
    assert hit.headers["authorization"] == f"Bearer {TAVILY_KEY}"
