"""People → Policy in Chromium: an admin pastes a candidate, reads the replay of the last
days' calls before anything changes, runs it as a shadow (its counts grow as calls are made),
stops it, applies it; a broken candidate is a clear error. At 1280x800 and 390x844, with
screenshots."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from playwright.sync_api import expect

from tests.e2e.conftest import docs_shot, login, wait_connected
from tests.e2e.test_approval_pages import off_the_loop
from tests.policy.history import CANDIDATE, org_make, seed
from tools_app.models import AuditRecord, ShadowPolicy

# The broken candidate answers 400, which the browser logs as a failed load.
pytestmark = [pytest.mark.e2e, pytest.mark.grants, pytest.mark.expect_http_errors]

WIDE = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


def no_sideways_scroll(page: Any) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], f"the page is {width}px wide"


def both_sizes(page: Any, name: str) -> None:
    docs_shot(page, f"{name}-1280", full_page=True)
    page.set_viewport_size(PHONE)
    no_sideways_scroll(page)
    docs_shot(page, f"{name}-390", full_page=True)
    page.set_viewport_size(WIDE)


@pytest.fixture
def org(transactional_db: None) -> dict[str, Any]:
    people = org_make()
    get_user_model().objects.create_user("ada", password="ada-password-1", is_staff=True)
    return people


def test_an_admin_previews_shadows_and_applies_a_candidate(page, org):
    off_the_loop(lambda: seed(org))
    page.set_viewport_size(WIDE)
    login(page, "ada", "ada-password-1")
    wait_connected(page)
    page.get_by_role("link", name="People").click()
    page.get_by_role("navigation", name="People").get_by_role("link", name="Policy").click()
    expect(page.get_by_role("heading", name="Policy", exact=True)).to_be_visible()
    box = page.get_by_label("Candidate policy (YAML)")
    expect(box).to_contain_text("name: support")  # the live policy, to edit

    box.fill("groups: [")
    page.get_by_role("button", name="Preview replay").click()
    expect(page.locator("#policy-error")).to_contain_text("not valid YAML")
    expect(page.locator("#policy-error")).to_contain_text("Nothing was changed.")

    page.get_by_label("Candidate policy (YAML)").fill(CANDIDATE)
    page.get_by_role("button", name="Preview replay").click()
    expect(page.locator("#replay-changed")).to_have_text("8 would change.")
    changes = page.get_by_role("table", name="Changes by verdict")
    expect(changes).to_contain_text("approval")
    expect(
        page.get_by_role("table", name="Calls that would change").locator("tbody tr")
    ).to_have_count(8)
    both_sizes(page, "policy-replay")

    page.get_by_label("Shadow name").fill("no eve in support")
    page.get_by_role("button", name="Run as shadow").click()
    expect(page.get_by_text("“no eve in support” runs as the shadow policy")).to_be_visible()
    off_the_loop(lambda: seed(org))  # calls made while it runs: decided beside the live policy
    page.reload()
    expect(page.get_by_role("table", name="Shadow verdicts so far")).to_contain_text("denied")
    expect(page.locator(".policy-shadow")).to_contain_text(
        "10 calls decided beside the live policy, 8 differently"
    )
    both_sizes(page, "policy-shadow")
    page.get_by_role("button", name="Stop shadow").click()
    expect(page.get_by_text("No shadow policy runs.")).to_be_visible()
    assert ShadowPolicy.objects.get().stopped_at is not None

    page.get_by_label("Candidate policy (YAML)").fill(CANDIDATE)
    page.get_by_role("button", name="Preview replay").click()
    page.get_by_role("button", name="Apply").click()
    expect(page.get_by_text("Applied: 2 group(s) and 2 approval rule(s).")).to_be_visible()
    assert list(Group.objects.get(name="support").user_set.values_list("username", flat=True)) == [
        "alice"
    ]
    assert AuditRecord.objects.filter(kind="settings", group="policy", tool="access").exists()
