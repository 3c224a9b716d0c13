"""Tools → Define a tool in Chromium (seed 001): an admin pastes a JSON Schema definition; a
wrong one is a clear error next to the box, a right one is defined and shown in the Tools
Manager. Both widths, both colour schemes, axe-core."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import login
from tests.e2e.test_approval_pages import shots
from tools_app import selectors
from tools_app.models import ToolSource

pytestmark = [pytest.mark.e2e, pytest.mark.expect_http_errors]

GOOD = {
    "name": "helpers",
    "tools": [
        {
            "name": "clock_in",
            "description": "The time in a city's timezone.",
            "input_schema": {
                "type": "object",
                "properties": {"tz": {"type": "string"}},
                "required": ["tz"],
            },
            "bind": {"tool": "current_time", "arguments": {"timezone": "{tz}"}},
        }
    ],
}


def test_an_admin_defines_a_tool_from_a_json_schema(page, staff_user):
    login(page, "root", "root-password-1")
    page.goto("/tools/")
    page.get_by_role("link", name="Define a tool").click()
    expect(page.get_by_role("heading", name="Define tools from a JSON Schema")).to_be_visible()
    shots(page, "define-tool")
    box = page.get_by_label("Definition (JSON or YAML)")
    box.fill('{"tools": [{"name": "x", "description": "d", "input_schema": {"type": "nope"}}]}')
    page.get_by_role("button", name="Define").click()
    expect(page.get_by_role("alert")).to_contain_text("not a valid JSON Schema")
    expect(box).to_have_attribute("aria-invalid", "true")
    shots(page, "define-tool-error")
    assert not ToolSource.objects.exists()
    page.get_by_label("Definition (JSON or YAML)").fill(json.dumps(GOOD, indent=2))
    page.get_by_role("button", name="Define").click()
    expect(page.get_by_text("Defined: clock_in.")).to_be_visible()
    expect(page.locator("#group-schema_helpers")).to_be_visible()
    source = ToolSource.objects.get(name="helpers")
    assert source.kind == "schema" and selectors.tool_named("clock_in") is not None
