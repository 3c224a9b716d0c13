"""An admin governs the platform tools in real Chromium: switches the local embedder on in the
Memory settings form, sees the skills the data directory offers, and runs a Test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import expect

from tests.e2e.conftest import login
from tools_app import selectors

pytestmark = [pytest.mark.e2e, pytest.mark.modes]

SHOTS = Path(settings.VAR_DIR) / "screenshots"


@pytest.fixture
def data_skill():
    folder = settings.SKILLS_DIR / "e2e-skill"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(
        "---\nname: release-notes\ndescription: Write release notes from the git log.\n---\n"
        "Group changes by kind.\n"
    )
    yield
    shutil.rmtree(folder)


def test_an_admin_configures_memory_and_sees_skills(page, staff_user, data_skill):
    login(page, "root", "root-password-1")
    page.goto("/tools/")
    memory = page.locator("#group-memory")
    expect(memory.locator(".sandbox-cell")).to_contain_text("local all-MiniLM-L6-v2")
    listing = page.locator("#group-skills-listing")
    expect(listing).to_contain_text("release-notes — Write release notes from the git log.")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "tools-platform.png"), full_page=True)

    page.get_by_role("link", name="Edit Memory settings").click()
    page.get_by_label("Embedder").select_option("none")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#settings-saved")).to_contain_text("embedder changed")
    page.goto("/tools/")
    expect(page.locator("#group-memory .sandbox-cell")).to_contain_text("full-text only")
    assert selectors.group_settings("memory").embedder == "none"

    page.get_by_role("link", name="Test skill_load").click()
    expect(page.locator("#id_arg-name")).to_have_value("release-notes")
    page.get_by_role("button", name="Run test").click()
    card = page.locator(".test-run .toolcall")
    expect(card.locator(".status-word")).to_have_text("succeeded")
    card.locator("summary", has_text="Output").click()
    expect(card.locator(".toolcall-result")).to_contain_text("Group changes by kind.")
