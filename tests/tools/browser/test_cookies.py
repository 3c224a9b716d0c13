"""Cookies live as long as the conversation's browser context, and never leak to another
conversation; the state also travels to another worker process through its saved file."""

from __future__ import annotations

from tests.tools.browser.conftest import Browser, new_conversation
from tools_app.executors.browser import handoff
from tools_app.executors.browser.pool import get_pool


def test_cookies_persist_across_calls_of_one_conversation(browser, site):
    browser.ok("browser_open", url=site.url("/cookie/set?v=vanilla"))
    browser.ok("browser_open", url=site.url("/cookie/show"))
    assert browser.ok("browser_extract", selector="#cookie")["text"] == "cookie=[flavour=vanilla]"


def test_cookies_never_cross_conversations(browser, site, owner):
    browser.ok("browser_open", url=site.url("/cookie/set?v=vanilla"))
    stranger = Browser(owner, new_conversation(owner))
    stranger.ok("browser_open", url=site.url("/cookie/show"))
    assert stranger.ok("browser_extract", selector="#cookie")["text"] == "cookie=[]"
    stranger.ok("browser_open", url=site.url("/cookie/set?v=chocolate"))
    browser.ok("browser_open", url=site.url("/cookie/show"))
    assert browser.ok("browser_extract", selector="#cookie")["text"] == "cookie=[flavour=vanilla]"


def test_another_process_carries_on_from_the_saved_state(browser, site):
    """Prefork workers do not share contexts: a process that did not see the last call
    rebuilds the context from the saved state (cookies, URL) before acting."""
    browser.ok("browser_open", url=site.url("/cookie/set?v=vanilla"))
    browser.ok("browser_open", url=site.url("/readme"))
    state = handoff.load(browser.workspace_id)
    assert state is not None and state["url"] == site.url("/readme")
    # Drop this process's context, as if the next call landed in a fresh process.
    get_pool().reap(context_idle=-1, browser_idle=float("inf"))
    result = browser.ok("browser_extract", selector="h1")
    assert (result["url"], result["text"]) == (site.url("/readme"), "README")
    assert f"the page was reopened at {site.url('/readme')}" in result["notes"]
    browser.ok("browser_open", url=site.url("/cookie/show"))
    assert browser.ok("browser_extract", selector="#cookie")["text"] == "cookie=[flavour=vanilla]"


def test_a_newer_state_from_another_process_replaces_the_local_context(browser, site):
    browser.ok("browser_open", url=site.url("/"))
    state = handoff.load(browser.workspace_id)
    assert state is not None
    # Another process acted since: it moved on to /form and holds a cookie.
    cookie = {"name": "flavour", "value": "mint", "domain": "127.0.0.1", "path": "/"}
    handoff.save(
        browser.workspace_id, seq=state["seq"] + 5, url=site.url("/form"), cookies=[cookie]
    )
    assert browser.ok("browser_extract", kind="links")["url"] == site.url("/form")
    browser.ok("browser_open", url=site.url("/cookie/show"))
    assert browser.ok("browser_extract", selector="#cookie")["text"] == "cookie=[flavour=mint]"
