"""The page frame in real Chromium: the phone drawer and menu, the theme toggle, the keyboard
shortcuts, and axe-core (vendored in tests/e2e/vendor) on every page in light and dark."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from playwright.sync_api import expect

from chat_app.models import Conversation
from chat_app.services.sharing import share_create
from platform_app.models import UserPreferences
from tests.e2e.conftest import login, wait_connected
from tests.llm_server import Reply

pytestmark = [pytest.mark.e2e]

AXE = Path(__file__).parent / "vendor" / "axe.min.js"
PHONE = {"width": 390, "height": 844}


def axe_violations(page: Any) -> list[str]:
    """Serious and critical axe-core findings on the page as it is now."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    found = page.evaluate(
        """async () => {
          const result = await axe.run(document, {
            resultTypes: ["violations"],
            runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]},
          });
          return result.violations
            .filter((v) => v.impact === "serious" || v.impact === "critical")
            .map((v) => `${v.id} (${v.impact}): ` +
                 v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", "));
        }"""
    )
    return [f"{page.url}: {line}" for line in found]


@pytest.fixture
def ada(transactional_db: None) -> Any:
    return get_user_model().objects.create_superuser("ada", password="ada-password-1")


@pytest.mark.expect_http_errors  # the 404 page's own status
def test_shortcuts_theme_and_accessibility_on_a_desktop(page, browser, ada, llm, provider):
    group = Group.objects.create(name="support")
    page.set_viewport_size({"width": 1280, "height": 800})
    login(page, "ada", "ada-password-1")
    wait_connected(page)

    # ? lists the shortcuts; Esc closes the list.
    page.locator("main").click(position={"x": 5, "y": 5})
    page.keyboard.press("?")
    dialog = page.get_by_role("dialog", name="Keyboard shortcuts")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("New conversation")
    expect(dialog).to_contain_text("Stop the running turn")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()

    # Shift+Esc focuses the message box; Esc there stops a running turn.
    page.keyboard.press("Shift+Escape")
    expect(page.get_by_label("Message")).to_be_focused()
    llm.script(Reply(text="blah " * 400, chunk_delay=0.03, chunk_size=5))
    page.keyboard.type("Talk for a long time")
    page.keyboard.press("Enter")
    expect(page.locator(".stream-text")).to_contain_text("blah")
    page.keyboard.press("Escape")
    expect(page.locator(".message.role-assistant .tag", has_text="stopped")).to_be_visible()

    # Ctrl+K goes to the sidebar's conversation search.
    page.keyboard.press("Control+K")
    expect(page.locator("#conversation-search")).to_be_focused()

    # Ctrl+Shift+O starts a new conversation.
    first = page.url
    page.keyboard.press("Control+Shift+O")
    page.wait_for_url(lambda url: url != first and re.search(r"/c/\d+/$", url) is not None)
    wait_connected(page)
    assert Conversation.objects.filter(owner=ada).count() == 2

    # The theme toggle is kept per person: across a reload and in another browser.
    html = page.locator("html")
    page.locator("#theme-toggle").click()
    expect(html).to_have_attribute("data-theme", "dark")
    expect(page.locator("#theme-toggle")).to_have_attribute("aria-pressed", "true")
    assert page.evaluate("localStorage.getItem('cc-theme')") == "dark"
    page.wait_for_function(
        "fetch('/tokens/').then((r) => r.text()).then((t) => t.includes('data-theme=\"dark\"'))"
    )
    assert UserPreferences.objects.get(user=ada).theme == "dark"
    page.reload()
    wait_connected(page)
    expect(html).to_have_attribute("data-theme", "dark")
    elsewhere = browser.new_context(base_url=page.url.split("/c/")[0])
    try:
        other = elsewhere.new_page()
        login(other, "ada", "ada-password-1")
        expect(other.locator("html")).to_have_attribute("data-theme", "dark")
    finally:
        elsewhere.close()

    # axe-core: no serious or critical violation on any page, in both themes (switched in
    # place, so each page loads once).
    shared = share_create(Conversation.objects.filter(owner=ada).first(), include_tools=True)
    pages = [
        page.url,
        "/tools/",
        "/tools/audit/",
        "/tokens/",
        "/people/",
        f"/people/users/{ada.pk}/",
        "/people/groups/",
        f"/people/groups/{group.pk}/",
        f"/people/groups/{group.pk}/grants/",
        "/approvals/",
        "/search/?q=long",
        "/c/archived/",
        f"/s/{shared.token}/",
        "/memory/",
        "/schedules/",
        "/reports/",
        "/agents/",
        "/agents/new/",
        "/agents/providers/",
        f"/agents/providers/{provider.pk}/",
        "/accounts/password/",
        "/no-such-page/",
    ]
    problems: list[str] = []
    for url in pages:
        page.goto(url)
        for theme in ("dark", "light"):
            page.evaluate(f"document.documentElement.dataset.theme = '{theme}'")
            problems += [f"{theme}: {line}" for line in axe_violations(page)]
    assert not problems, "\n".join(problems)


def test_a_phone_switches_conversation_in_the_drawer_and_logs_out(browser, app_server, ada):
    older = Conversation.objects.create(owner=ada, title="Nightly backup check")
    Conversation.objects.create(owner=ada, title="Draft the release notes")
    context = browser.new_context(base_url=app_server, viewport=PHONE, color_scheme="dark")
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        login(page, "ada", "ada-password-1")
        wait_connected(page)
        sidebar = page.get_by_role("complementary", name="Conversations")
        expect(sidebar).to_be_hidden()
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        # The system is dark and ada never chose: the page follows the system.
        assert page.evaluate("getComputedStyle(document.body).backgroundColor") != (
            "rgb(245, 246, 248)"
        )

        page.get_by_role("button", name="Conversations").click()
        expect(sidebar).to_be_visible()
        expect(page.get_by_role("button", name="Close conversations")).to_be_focused()
        page.keyboard.press("Shift+Tab")  # the page behind is inert: focus stays in the drawer
        assert page.evaluate("document.activeElement.closest('.sidebar') !== null")
        assert not axe_violations(page)
        sidebar.get_by_role("link", name="Nightly backup check").click()
        page.wait_for_url(f"**/c/{older.pk}/")
        wait_connected(page)
        expect(sidebar).to_be_hidden()

        for url in (
            "/tools/",
            "/tools/audit/",
            "/tokens/",
            "/people/",
            "/people/groups/",
            "/approvals/",
            "/search/?q=backup",
            "/c/archived/",
            "/memory/",
            "/schedules/",
            "/reports/",
            "/agents/",
            "/agents/new/",
            "/agents/providers/",
            "/accounts/password/",
        ):
            page.goto(url)
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= PHONE["width"], f"{url} is {width}px wide"

        menu = page.get_by_role("button", name="Menu")
        menu.click()
        expect(page.get_by_role("link", name="Audit log", exact=True)).to_be_visible()
        assert not axe_violations(page)
        page.get_by_role("button", name="Log out").click()
        page.wait_for_url("**/accounts/login/**")
        assert not axe_violations(page)
    finally:
        context.close()
    assert not errors
