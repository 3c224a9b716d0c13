"""The Tools Manager's Test button for every browser and every Docker function, pressed by an
admin in real Chromium against real services: a local web site (allowed through the Browser
group's settings form) and a real container on the Docker engine (the lifecycle operations
allowed through the Docker group's form).

Test runs have no conversation: their workspace, and so their browser context, is the
user's own (``u<id>-test``, see ``tools_app.runtime.workspace_id_for``), which is why a
``browser_screenshot`` run sees the page an earlier ``browser_open`` run opened.
"""

from __future__ import annotations

import html
import re
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from playwright.sync_api import expect

from tests.e2e.conftest import login
from tests.helpers import require, wait_for
from tests.tools.browser.site import Request, Response, Site, serving
from tools_app.models import Screenshot, ToolCall
from tools_app.registry import TOOLS

pytestmark = [pytest.mark.e2e]

HOST = "127.0.0.9"
IMAGE = "controlcenter-sandbox-mini:latest"
SHOTS = Path(settings.VAR_DIR) / "screenshots"


# --- the local web site -------------------------------------------------------------------


def _page(title: str, body: str) -> Response:
    doc = f"<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>"
    return 200, [("Content-Type", "text/html; charset=utf-8")], doc.encode()


def _home(r: Request) -> Response:
    return _page(
        "Test buttons site",
        "<h1 style='color:#2b5'>Test buttons site</h1><p>A page for the Tools Manager.</p>"
        "<a id='to-form' href='/form'>Search form</a>",
    )


def _form(r: Request) -> Response:
    return _page(
        "Search form",
        "<form action='/search'><input name='q' aria-label='Query'>"
        "<button type='submit'>Search</button></form>",
    )


def _search(r: Request) -> Response:
    # The answer appears a moment after load, so browser_wait has something to wait for.
    said = html.escape(r.query.get("q", ""))
    return _page(
        "Search results",
        "<div id='box'></div><script>setTimeout(() => {"
        f" document.getElementById('box').innerHTML = '<p id=said>You searched for: {said}</p>';"
        " }, 300);</script>",
    )


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    with serving(HOST, {"/": _home, "/form": _form, "/search": _search}) as server:
        yield server


# --- the container ------------------------------------------------------------------------


def _docker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=False)


def _state(name: str) -> str:
    return _docker("inspect", "-f", "{{.State.Status}}", name).stdout.strip()


@pytest.fixture
def container() -> Iterator[tuple[str, str]]:
    """(name, id) of a running container that logs ticks and stops at once on SIGTERM."""
    require(_docker("info").returncode == 0, "no Docker engine")
    require(_docker("image", "inspect", IMAGE).returncode == 0, f"image {IMAGE} missing")
    name = f"cc-testbtn-{uuid.uuid4().hex[:8]}"
    loop = "trap 'exit 0' TERM; i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.1; done"
    started = _docker(
        "run", "-d", "--name", name, "--network", "none", "--label", "cc.test=buttons",
        IMAGE, "sh", "-c", loop,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    try:
        wait_for(lambda: "tick 3" in _docker("logs", name).stdout, message=f"{name} to log")
        yield name, started.stdout.strip()
    finally:
        _docker("rm", "-f", name)


# --- driving the pages --------------------------------------------------------------------


def shot(page: Any, name: str) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"tools-{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def edit_settings(page: Any, label: str, values: dict[str, str], changed: str) -> None:
    """Fill the group's settings form like an admin (lists one entry per line) and save."""
    page.goto("/tools/")
    page.get_by_role("link", name=f"Edit {label} settings").click()
    for field, value in values.items():
        page.get_by_label(field, exact=True).fill(value)
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#settings-saved, #settings-errors")).to_be_visible()
    refused = page.locator(".field.has-error").all_inner_texts()
    assert not refused, f"the form refused the settings: {refused}"
    expect(page.locator("#settings-saved")).to_contain_text(f"{changed} changed")


def run_test(
    page: Any,
    tool: str,
    fields: dict[str, str] | None = None,
    switches: tuple[str, ...] = (),
    *,
    result: tuple[str, ...] = (),
) -> Any:
    """Open the function's Test page, fill the argument fields, press Run test and wait
    for the card to succeed; ``result`` are snippets its result must show."""
    page.goto(f"/tools/functions/{tool}/test/")
    for label, value in (fields or {}).items():
        page.get_by_label(label).fill(value)  # not exact: a required field's label ends in *
    for label in switches:
        page.get_by_role("switch", name=label).check()
    page.get_by_role("button", name="Run test").click()
    card = page.locator(".test-run .toolcall").first
    expect(card.locator(".tool-name")).to_have_text(tool)
    expect(card.locator(".status-word")).not_to_have_text(
        re.compile("queued|running|awaiting approval"), timeout=30_000
    )
    status = card.locator(".status-word").inner_text()
    assert status == "succeeded", f"{tool} {status}: {card.inner_text()}"
    expect(page.locator(".test-run").first).to_have_attribute("data-status", "succeeded")
    for snippet in result:
        expect(card.locator(".toolcall-result")).to_contain_text(snippet)
    return card


def assert_test_runs(prefix: str, count: int) -> None:
    calls = ToolCall.objects.filter(tool__startswith=prefix, source="test")
    assert calls.count() == count
    assert {(c.status, c.conversation_id) for c in calls} == {("succeeded", None)}


def test_every_browser_function_passes_its_test_run_and_the_screenshot_shows(
    page, staff_user, site
):
    login(page, "root", "root-password-1")
    edit_settings(
        page,
        "Browser",
        {"Allowed domains": HOST, "Private allowed": HOST},
        "allowed_domains, private_allowed",
    )

    run_test(page, "browser_open", {"Url": site.url("/")}, result=('"title": "Test buttons site"',))
    card = run_test(page, "browser_screenshot", result=('"mime_type": "image/png"',))
    thumbnail = card.locator("img[alt='Screenshot of Test buttons site']")
    expect(thumbnail).to_be_visible()
    page.wait_for_function(
        "img => img.complete && img.naturalWidth > 0", arg=thumbnail.element_handle()
    )
    assert thumbnail.evaluate("img => img.naturalWidth") == 1280
    [screenshot] = Screenshot.objects.all()
    assert (screenshot.conversation_id, screenshot.user_id) == (None, staff_user.pk)
    assert thumbnail.get_attribute("src") == f"/media/screenshots/{screenshot.pk}/"
    card.get_by_text("Output and result").click()
    shot(page, "test-browser-screenshot")

    run_test(page, "browser_click", {"Text": "Search form"}, result=('"title": "Search form"',))
    run_test(
        page,
        "browser_type",
        {"Selector": "input[name=q]", "Text": "blue fox"},
        ("Submit",),
        result=("/search?q=blue+fox",),
    )
    run_test(page, "browser_wait", {"Selector": "#said"})
    run_test(
        page,
        "browser_extract",
        {"Selector": "#said"},
        result=("You searched for: blue fox",),
    )
    run_test(page, "browser_back", result=('"went_back": true', site.url("/form")))

    assert_test_runs("browser_", 7)
    assert {t for t in TOOLS if t.startswith("browser_")} == {
        c.tool for c in ToolCall.objects.filter(source="test")
    }, "a browser function has no Test run here"
    # Going back may be served from the browser's cache: only the first three must be there.
    assert site.paths()[:3] == ["/", "/form", "/search?q=blue+fox"], site.paths()


def test_every_docker_function_passes_its_test_run(page, staff_user, container):
    name, container_id = container
    login(page, "root", "root-password-1")

    run_test(
        page, "docker_list_containers", {"Name": name}, result=(f'"name": "{name}"', '"count": 1')
    )
    run_test(page, "docker_inspect", {"Container id": name}, result=('"Running": true',))
    run_test(page, "docker_logs", {"Container id": name, "Tail": "3"}, result=("tick",))

    # The lifecycle operations and exec are refused until the admin allows them, and then
    # only for this one container.
    operations = "list\ninspect\nlogs\nexec\nstart\nstop\nrestart"
    edit_settings(
        page,
        "Docker",
        {"Allowed operations": operations, "Allowed containers": name},
        "allowed_containers, allowed_operations",
    )

    card = run_test(
        page, "docker_exec", {"Container id": name, "Command": "cat /etc/hostname"},
        result=('"exit_code": 0',),
    )  # fmt: skip
    expect(card.locator(".toolcall-output")).to_contain_text(container_id[:12])
    run_test(page, "docker_stop", {"Container id": name}, result=('"status": "exited"',))
    assert _state(name) == "exited"
    run_test(page, "docker_start", {"Container id": name}, result=('"status": "running"',))
    assert _state(name) == "running"
    run_test(page, "docker_restart", {"Container id": name}, result=('"action": "restart"',))
    assert _state(name) == "running"
    shot(page, "test-docker-restart")

    assert_test_runs("docker_", 7)
    assert {t for t in TOOLS if t.startswith("docker_")} == {
        c.tool for c in ToolCall.objects.filter(source="test")
    }, "a docker function has no Test run here"
