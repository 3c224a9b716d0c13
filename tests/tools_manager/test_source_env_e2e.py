"""An admin gives a stdio MCP server a secret and a plain environment variable in real Chromium,
then finds the secret shown as "set" - never its value - on the server's Connection page;
screenshots at 1280 and 390 px, light and dark."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from playwright.sync_api import expect

from tests.e2e.conftest import login
from tools_app.models import ToolSource
from tools_app.services.sources import source_secrets

pytestmark = [pytest.mark.e2e]

SHOTS = Path(settings.VAR_DIR) / "screenshots"
SECRET = "ghp_e2e-secret-9a7c"


def shots(browser: Any, app_server: str, path: str, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    for scheme in ("light", "dark"):
        for width, height in ((1280, 900), (390, 844)):
            context = browser.new_context(
                base_url=app_server,
                viewport={"width": width, "height": height},
                color_scheme=scheme,
            )
            page = context.new_page()
            login(page, "root", "root-password-1")
            page.goto(path)
            page.screenshot(path=str(SHOTS / f"{name}-{width}-{scheme}.png"), full_page=True)
            overflow = page.evaluate(
                "document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert overflow <= 0, f"{name} at {width} px scrolls sideways by {overflow} px"
            context.close()


def test_an_admin_sets_a_secret_variable_and_never_sees_it_again(
    page: Any, browser: Any, app_server: str, staff_user: Any
) -> None:
    login(page, "root", "root-password-1")
    page.goto("/tools/sources/mcp/new/")
    page.get_by_label("Name", exact=True).fill("github")
    page.get_by_label("Command").fill("github-mcp-server stdio")
    page.get_by_label("Sandbox backend").select_option("bubblewrap")
    page.get_by_label("New variable 1", exact=True).fill("GITHUB_PERSONAL_ACCESS_TOKEN")
    page.get_by_label("Value of new variable 1").fill(SECRET)
    page.get_by_label("New variable 2", exact=True).fill("GITHUB_TOOLSETS")
    page.get_by_label("Value of new variable 2").fill("repos,issues")
    page.locator("label.env-plain").nth(1).click()
    shots(browser, app_server, "/tools/sources/mcp/new/", "source-env-new")
    page.get_by_role("button", name="Add server").click()
    page.wait_for_url(lambda url: "/tools/" in url and "/new/" not in url)

    source = ToolSource.objects.get(name="github")
    assert source_secrets(source)["env"] == {"GITHUB_PERSONAL_ACCESS_TOKEN": SECRET}
    page.goto("/tools/sources/github/edit/")
    expect(page.get_by_text("secret · set")).to_be_visible()
    expect(page.get_by_label("Value of GITHUB_TOOLSETS")).to_have_value("repos,issues")
    expect(page.get_by_label("New value for GITHUB_PERSONAL_ACCESS_TOKEN")).to_have_value("")
    assert SECRET not in page.content()
    shots(browser, app_server, "/tools/sources/github/edit/", "source-env-edit")

    page.get_by_role("switch", name="Remove GITHUB_TOOLSETS").check()
    page.get_by_role("button", name="Save and reconnect").click()
    page.wait_for_url(lambda url: "/edit/" not in url)
    source.refresh_from_db()
    assert [e["name"] for e in source.config["env"]] == ["GITHUB_PERSONAL_ACCESS_TOKEN"]
