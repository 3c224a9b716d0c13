"""Scenario 1 in the chat page: "Open <local test site> and save its README text to a file".

A person types the request in real Chromium; the scripted model drives the real server, the
worker's browser pool (its own warm Chromium) and the file tool: ``browser_open`` →
``browser_screenshot`` → ``browser_click`` on the README link → ``browser_extract`` →
``file_write``. The person sees the screenshot in its card and the file lands in the
conversation's workspace. A second conversation meets a hostile page whose subresources,
popups and service worker try to reach a victim server, which must see nothing at all.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from playwright.sync_api import expect

from tests.e2e.conftest import login, wait_connected
from tests.llm_server import Call, Reply
from tests.scenarios.agent import READERS, Seen
from tests.tools.browser.pages import README_TEXT, pages_for
from tests.tools.browser.site import Site, serving
from tools_app.models import ToolGroupConfig

pytestmark = [pytest.mark.e2e, pytest.mark.modes]

SITE_HOST, VICTIM_HOST, OTHER_HOST = "127.0.0.5", "127.0.0.2", "127.0.0.3"
TASK = "Open the test site and save its README text to README.txt"
SCREENSHOT = "var/scenario-browser.png"


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Site, Site, Site]]:
    with contextlib.ExitStack() as stack:
        victim = stack.enter_context(serving(VICTIM_HOST))
        other = stack.enter_context(serving(OTHER_HOST))
        site = stack.enter_context(serving(SITE_HOST, pages_for(victim, other)))
        yield site, victim, other


@pytest.fixture
def allow_site(transactional_db: None, servers: tuple[Site, Site, Site]) -> Site:
    """The admin allows the local test site, and only it, explicitly."""
    site, victim, other = servers
    for server in servers:
        server.reset()
    ToolGroupConfig.objects.update_or_create(
        name="browser",
        defaults={
            "settings": {
                "allowed_domains": [SITE_HOST],
                "private_allowed": [SITE_HOST],
                "timeout_seconds": 20,
            }
        },
    )
    return site


def _results(body: dict[str, Any]) -> list[Seen]:
    return READERS["openai"](body)


def _expect_ok(body: dict[str, Any], tool: str) -> dict[str, Any]:
    [seen] = _results(body)
    assert seen.tool == tool and seen.ok, f"{tool} did not succeed: {seen.result}"
    return seen.result


def cards(page: Any, tool: str) -> Any:
    return page.locator(".toolcall", has=page.locator(".tool-name", has_text=tool))


def screenshot_whole_conversation(page: Any, path: str = SCREENSHOT) -> None:
    overflow = page.evaluate(
        "(() => { const m = document.getElementById('messages');"
        " return m.scrollHeight - m.clientHeight; })()"
    )
    size = page.viewport_size
    page.set_viewport_size({"width": size["width"], "height": size["height"] + max(overflow, 0)})
    page.screenshot(path=path, full_page=True)


def test_a_person_has_the_agent_save_a_readme_from_a_web_page(
    page, user, dev_conversation, llm, provider, allow_site
):
    site = allow_site
    saved: dict[str, str] = {}

    def write_file(body: dict[str, Any]) -> Reply:
        text = _expect_ok(body, "browser_extract")["text"]
        saved["text"] = text
        return Reply(calls=[Call("file_write", {"path": "README.txt", "content": text + "\n"})])

    llm.script(
        Reply(text="Opening the site.", calls=[Call("browser_open", {"url": site.url("/")})]),
        lambda body: (
            _expect_ok(body, "browser_open"),
            Reply(calls=[Call("browser_screenshot", {})]),
        )[1],
        lambda body: (
            _expect_ok(body, "browser_screenshot"),
            Reply(calls=[Call("browser_click", {"text": "README"})]),
        )[1],
        lambda body: (
            _expect_ok(body, "browser_click"),
            Reply(calls=[Call("browser_extract", {"selector": "#text"})]),
        )[1],
        write_file,
        lambda body: (
            _expect_ok(body, "file_write"),
            Reply(text="Saved the README text to **README.txt**."),
        )[1],
    )

    login(page, "alice", "alice-password-1")
    page.goto(f"/c/{dev_conversation.pk}/")
    wait_connected(page)
    page.get_by_label("Message").fill(TASK)
    page.get_by_role("button", name="Send").click()

    expect(page.locator(".markdown strong", has_text="README.txt")).to_be_visible(timeout=60_000)
    for tool in ("browser_open", "browser_screenshot", "browser_click", "browser_extract"):
        expect(cards(page, tool).locator(".status-word")).to_have_text("succeeded")
    expect(cards(page, "file_write").locator(".status-word")).to_have_text("succeeded")

    thumbnail = cards(page, "browser_screenshot").locator("img[alt='Screenshot of Test site']")
    expect(thumbnail).to_be_visible()
    page.wait_for_function(
        "img => img.complete && img.naturalWidth === 1280", arg=thumbnail.element_handle()
    )
    with page.context.expect_page() as full_size:
        thumbnail.click()
    opened = full_size.value
    opened.wait_for_load_state()
    assert opened.url.endswith(f"/media/screenshots/{_shot_id(thumbnail)}/")
    opened.close()

    assert saved["text"] == README_TEXT
    workspace = Path(settings.WORKSPACES_DIR) / f"c{dev_conversation.pk}"
    assert (workspace / "README.txt").read_text() == README_TEXT + "\n"
    assert "/readme" in site.paths()
    assert not llm.errors, llm.errors
    screenshot_whole_conversation(page)


def _shot_id(thumbnail: Any) -> str:
    return thumbnail.get_attribute("src").rstrip("/").rsplit("/", 1)[-1]


@pytest.mark.expect_http_errors
def test_a_hostile_page_cannot_escape_the_allowlist(
    page, user, dev_conversation, llm, provider, allow_site, servers
):
    site, victim, other = servers

    llm.script(
        Reply(calls=[Call("browser_open", {"url": site.url("/subresources")})]),
        lambda body: Reply(calls=[Call("browser_open", {"url": site.url("/popups")})]),
        lambda body: Reply(calls=[Call("browser_click", {"selector": "#bad"})]),
        lambda body: Reply(calls=[Call("browser_open", {"url": site.url("/sw")})]),
        lambda body: Reply(calls=[Call("browser_open", {"url": victim.url("/direct")})]),
        lambda body: Reply(text="Done looking around."),
    )
    login(page, "alice", "alice-password-1")
    page.goto(f"/c/{dev_conversation.pk}/")
    wait_connected(page)
    page.get_by_label("Message").fill("Look around the test site")
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_text("Done looking around.")).to_be_visible(timeout=60_000)

    first = cards(page, "browser_open").nth(0)
    expect(first.locator(".status-word")).to_have_text("succeeded")
    expect(first.locator(".toolcall-output")).to_contain_text(f"blocked image {victim.origin}")
    expect(cards(page, "browser_click").locator(".toolcall-output")).to_contain_text("popup closed")
    denied = cards(page, "browser_open").nth(3)
    expect(denied.locator(".status-word")).to_have_text("denied")
    expect(denied.locator(".toolcall-error")).to_contain_text("not in the allowed hosts")
    assert "/pixel.gif" in site.paths() and "/probe" in site.paths()
    assert "/sw.js" not in site.paths()
    victim.assert_untouched()
    other.assert_untouched()
    first.locator(".toolcall-details summary").click()
    screenshot_whole_conversation(page, "var/scenario-browser-attacks.png")
