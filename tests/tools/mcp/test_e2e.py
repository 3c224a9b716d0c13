"""An admin registers an MCP server in the Tools Manager and presses Test on one of its tools,
in real Chromium, against the real app server and worker (both modes)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from playwright.sync_api import expect

from tests.e2e.conftest import login
from tests.tools.mcp.servers import Observed
from tools_app.models import ToolCall, ToolSource

pytestmark = [pytest.mark.e2e, pytest.mark.modes]

SHOTS = Path(settings.VAR_DIR) / "screenshots"


def shot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"mcp-{name}.png"), full_page=True)


def test_an_admin_registers_an_mcp_server_and_tests_one_of_its_tools(
    page: Any, staff_user: Any, mcp_http: tuple[str, Observed]
) -> None:
    url, _ = mcp_http
    login(page, "root", "root-password-1")
    page.goto("/tools/")
    page.get_by_role("link", name="Add MCP server").click()
    page.get_by_label("Name").fill("e2e-tools")
    page.get_by_label("Transport").select_option("http")
    page.get_by_label("URL").fill(url)
    page.get_by_label("Bearer token").fill("e2e-secret-token")
    page.get_by_text("The server is on a private or loopback address").click()
    shot(page, "add-form")
    page.get_by_role("button", name="Add server").click()
    group = page.locator("#group-mcp_e2e_tools")
    expect(group.locator(".source-state")).to_have_text("up", timeout=30_000)
    expect(group.locator("#function-echo")).to_be_visible()
    expect(group).to_contain_text("6 tools")
    shot(page, "manager")
    assert "e2e-secret-token" not in page.content()
    source = ToolSource.objects.get(name="e2e-tools")
    assert source.state == "up" and source.tool_count == 6

    group.get_by_role("link", name="Test echo").click()
    page.get_by_label("Text").fill("hello from chromium")
    page.get_by_label("Upper").check()
    page.get_by_role("button", name="Run test").click()
    card = page.locator("#test-results .toolcall").first
    expect(card.locator(".status-word")).to_have_text("succeeded", timeout=30_000)
    expect(card).to_contain_text("HELLO FROM CHROMIUM")
    shot(page, "test-run")
    call = ToolCall.objects.filter(tool="echo", source="test").latest("id")
    assert call.status == "succeeded" and call.group == "mcp_e2e_tools"
    assert re.search("HELLO FROM CHROMIUM", call.result["text"])
