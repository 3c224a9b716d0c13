"""An admin reviews a real MCP server's changed definitions in real Chromium: the Tools Manager
marks the source, the review page shows each diff (escaped), Accept and Reject apply; at 1280
and 390 px, light and dark."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import docs_shot, login
from tests.e2e.test_layout import PHONE, axe_violations
from tests.tools.mcp.changing_server import serve_changing
from tools_app.models import AuditRecord, ToolSource
from tools_app.services.pins import pending

pytestmark = [pytest.mark.e2e]


@pytest.fixture
def held_source(staff_user: Any) -> Iterator[ToolSource]:
    from tools_app.executors.mcp.runtime import runtime
    from tools_app.executors.mcp.services import mcp_refresh, mcp_server_add, server_spec
    from tools_app.imported import imported_reset

    with serve_changing() as url:
        source = mcp_server_add(name="shifty", url=url, allow_private=True, user=staff_user)
        mcp_refresh(source)
        spec, rt = server_spec(source), runtime()
        for what in ("add", "poison", "schema", "remove"):
            rt.run(
                lambda w=what: rt.call_tool(spec, "change", {"what": w, "announce": False}),
                timeout=20,
            )
        mcp_refresh(source)
        source.refresh_from_db()
        yield source
        rt.close_all(timeout=5)
    imported_reset()


def shots(page: Any, name: str) -> list[str]:
    docs_shot(page, f"{name}-1280", full_page=True)
    problems = axe_violations(page)
    page.evaluate("document.documentElement.dataset.theme = 'dark'")
    docs_shot(page, f"{name}-dark-1280", full_page=True)
    page.set_viewport_size(PHONE)
    docs_shot(page, f"{name}-dark-390", full_page=True)
    page.evaluate("document.documentElement.dataset.theme = 'light'")
    docs_shot(page, f"{name}-390", full_page=True)
    problems += axe_violations(page)
    page.set_viewport_size({"width": 1280, "height": 860})
    return problems


def test_an_admin_reviews_a_servers_changes(page: Any, held_source: ToolSource) -> None:
    login(page, "root", "root-password-1")
    page.goto("/tools/")
    row = page.locator("#group-mcp_shifty")
    expect(row.get_by_role("link", name="4 changes to review")).to_be_visible()
    expect(row.locator("#function-note")).to_contain_text("changed: refused until reviewed")
    row.get_by_role("link", name="4 changes to review").click()
    expect(page.get_by_role("heading", name="shifty: changed definitions")).to_be_visible()
    note = page.locator("#review-note")
    expect(note.locator(".diff-del")).to_have_text("−Take a note.")
    expect(note.locator(".diff-add").first).to_contain_text("IGNORE ALL PREVIOUS")
    # The server's markup is shown as text, not run: the page has no JavaScript error.
    expect(note.locator(".diff-add").nth(1)).to_contain_text("</pre><script>alert('pwned')")
    problems = shots(page, "tools-review")

    page.get_by_role("button", name="Accept sneaky").click()
    expect(page.locator(".banner", has_text="sneaky: accepted.")).to_be_visible()
    page.get_by_role("button", name="Reject note").click()
    expect(page.locator(".banner", has_text="note: rejected.")).to_be_visible()
    expect(page.get_by_role("heading", name="2 waiting for review")).to_be_visible()
    held_source.refresh_from_db()
    assert {e["name"] for e in pending(held_source)} == {"weather", "farewell"}
    assert AuditRecord.objects.filter(kind="definition", status="accepted", tool="sneaky").exists()

    page.get_by_label("Accept changes automatically").check()
    page.get_by_role("button", name="Save choices").click()
    expect(page.locator(".auto-accept-warning")).to_be_visible()
    problems += shots(page, "tools-review-auto")
    assert problems == [], problems
