"""The pool's housekeeping and what it tells the Tools Manager."""

from __future__ import annotations

import os
import time

from infra.maintenance import maintenance_steps
from tools_app.executors.browser import browser_info, handoff
from tools_app.executors.browser.pool import get_pool


def test_idle_contexts_and_saved_states_are_reaped(browser, site):
    browser.ok("browser_open", url=site.url("/"))
    pool = get_pool()
    assert pool.stats()["contexts"] == 1
    assert pool.reap() == 0  # not idle yet
    assert pool.reap(context_idle=0.0) == 1
    assert pool.stats()["contexts"] == 0 and pool.stats()["running"]
    state = handoff.sessions_dir() / f"{browser.workspace_id}.json"
    old = time.time() - 3600
    os.utime(state, (old, old))
    assert handoff.sweep(600) == 1 and not state.exists()


def test_an_idle_browser_is_closed_and_comes_back_without_claiming_a_crash(browser, site):
    browser.ok("browser_open", url=site.url("/"))
    pool = get_pool()
    pool.reap(context_idle=0.0, browser_idle=0.0)
    assert not pool.stats()["running"]
    result = browser.ok("browser_open", url=site.url("/readme"))
    assert "browser_relaunched" not in result


def test_the_maintenance_loop_reaps_browsers():
    assert any(step.name == "browser" for step in maintenance_steps())


def test_browser_info_names_the_executable_and_the_pool(browser, site, chromium):
    browser.ok("browser_open", url=site.url("/"))
    info = browser_info()
    assert info["executable"] == chromium
    assert info["source"] in ("CHROMIUM_PATH", "playwright", "system")
    assert info["pool"]["running"] is True and info["pool"]["version"]
