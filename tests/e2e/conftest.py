"""End-to-end fixtures: the real app server process and real Chromium driven by Playwright.

The server is started the way an operator starts it (``manage.py serve``) on the test
database; in distributed mode it runs next to the separate worker process. The browser is
Playwright's own Chromium when installed, else ``CHROMIUM_PATH`` (default /usr/bin/chromium).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from tests.conftest import ROOT, child_env, shared_process, shared_processes_paused
from tests.helpers import require, wait_for

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# Every app server of the session by its URL: several are alive at once (each conftest that
# imports ``app_server`` gets its own, and some packages start their own), all on the test
# database, each with its own maintenance thread.
_SERVERS: dict[str, subprocess.Popen[bytes]] = {}


@contextlib.contextmanager
def other_app_servers_paused(url: str) -> Iterator[None]:
    """Pause every app server but the one at ``url`` for the block. For a test that waits for
    the server's own maintenance pass to act on the page's conversation: in embedded mode the
    live event goes out through the in-process channel layer of the process that acted, so a
    pass made by another test server (same database, its own process) would change the row
    where the page never hears of it — a race of the test setup that one process never has."""
    others = [proc for other, proc in _SERVERS.items() if other != url]
    with shared_processes_paused(only=others):
        yield


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/healthz", timeout=1) as response:
            return response.status == 200
    except OSError:
        return False


@contextlib.contextmanager
def run_app_server(*extra: str, log_name: str = "test-server.log", **env: str) -> Iterator[str]:
    """``manage.py serve`` on a free port, on the test database; yields its URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    args = [sys.executable, "manage.py", "serve", "--port", str(port), *extra]
    log_path = Path(settings.VAR_DIR) / log_name
    with open(log_path, "ab") as log:
        proc = shared_process(
            subprocess.Popen(
                args, cwd=ROOT, env=child_env(**env), stdout=log, stderr=subprocess.STDOUT
            )
        )
        try:
            wait_for(
                lambda: proc.poll() is not None or _healthy(url),
                timeout=60,
                message="the app server to answer /healthz",
            )
            assert proc.poll() is None, f"app server exited; see {log_path}"
            _SERVERS[url] = proc
            yield url
        finally:
            _SERVERS.pop(url, None)
            proc.terminate()
            try:
                # A loaded CI host (two passes side by side) may need more than a few seconds
                # for a graceful stop; one that is killed leaves its fleet row behind.
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                log.write(b"run_app_server: no graceful stop within 30 s; killed\n")
                proc.kill()


@pytest.fixture(scope="session")
def app_server(django_db_setup: Any, worker_process: Any) -> Iterator[str]:
    # No in-process beat: several of these servers can be alive in one session (each conftest
    # that imports this fixture gets its own), and a schedule must fire in the server whose
    # page watches it (tests/e2e/test_schedules.py starts that one itself).
    with run_app_server("--no-beat") as url:
        yield url


def chromium_executable() -> str | None:
    configured = os.environ.get("CHROMIUM_PATH")
    if configured:
        return configured
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        bundled = p.chromium.executable_path
    if bundled and Path(bundled).exists():
        return None  # Playwright's own browser
    return shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"


# Module scope, not session: Playwright's sync API keeps an event loop running in the main
# thread while it is alive, which breaks sync Django code (async_to_sync) in later tests.
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    executable = chromium_executable()
    require(executable is None or Path(executable).exists(), f"Chromium not found at {executable}")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Any, app_server: str, request: pytest.FixtureRequest) -> Iterator[Any]:
    context = browser.new_context(base_url=app_server, viewport={"width": 1280, "height": 860})
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors: list[str] = []

    def on_error(exc: Any) -> None:
        errors.append(f"page error: {exc}")

    def on_console(m: Any) -> None:
        if m.type == "error":
            errors.append(f"console: {m.text}")

    page.on("pageerror", on_error)
    page.on("console", on_console)
    yield page
    # What the page says while the context closes is not the test's: closing aborts a poll in
    # flight, and htmx reports that abort (htmx:sendAbort) as an error.
    page.remove_listener("pageerror", on_error)
    page.remove_listener("console", on_console)
    context.close()
    if request.node.get_closest_marker("expect_http_errors"):
        errors = [e for e in errors if "Failed to load resource" not in e]
    assert not errors, f"JavaScript errors in the page: {errors}"


def login(page: Any, username: str, password: str) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(lambda url: "/accounts/login/" not in url)


def wait_connected(page: Any) -> None:
    page.wait_for_function("document.getElementById('chat')?.dataset.connected === 'true'")


def docs_shot(target: Any, name: str, **options: Any) -> None:
    """A screenshot the docs use (a page or a locator), as ``<name>.png``: into
    ``var/.../screenshots`` on a test run, so that tests leave the repository's files alone, and
    into docs/screenshots under ``make screenshots`` (``CC_SCREENSHOTS=docs/screenshots``)."""
    chosen = os.environ.get("CC_SCREENSHOTS")
    folder = ROOT / chosen if chosen else Path(settings.VAR_DIR) / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    target.screenshot(path=str(folder / f"{name}.png"), **options)
