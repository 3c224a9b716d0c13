"""A Chromium that dies is relaunched by the next call, which says so."""

from __future__ import annotations

import os
import signal

from tests.helpers import wait_for
from tools_app.executors.browser.pool import get_pool


def _kill_browser() -> None:
    pool = get_pool()
    pid = pool.browser_pid()
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not pool.stats()["running"], timeout=10, message="Chromium to go away")


def test_a_killed_browser_is_relaunched_and_the_call_reports_it(browser, site):
    browser.ok("browser_open", url=site.url("/cookie/set?v=vanilla"))
    browser.ok("browser_open", url=site.url("/readme"))
    relaunches = get_pool().stats()["relaunches"]
    _kill_browser()
    call = browser.call("browser_extract", selector="h1")
    assert call.status == "succeeded", call.result
    assert call.result["browser_relaunched"] is True
    assert call.result["text"] == "README"  # the page was reopened at its last URL
    assert "relaunched" in call.output
    assert get_pool().stats()["relaunches"] == relaunches + 1
    # Cookies came back from the saved state.
    browser.ok("browser_open", url=site.url("/cookie/show"))
    assert browser.ok("browser_extract", selector="#cookie")["text"] == "cookie=[flavour=vanilla]"
    # Later calls do not claim a relaunch.
    assert "browser_relaunched" not in browser.ok("browser_extract")


def test_an_open_after_a_crash_goes_straight_to_the_new_url(browser, site):
    browser.ok("browser_open", url=site.url("/"))
    _kill_browser()
    result = browser.ok("browser_open", url=site.url("/form"))
    assert result["browser_relaunched"] is True
    assert result["title"] == "Search"
    assert "notes" not in result  # nothing was reopened first
