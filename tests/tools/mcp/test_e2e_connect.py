"""A person meets a per-person MCP server in the chat, in real Chromium against the real app
server and worker: the Connect card, the authorization server's own sign-in page, back to the
conversation, Retry, then their Connections page (1280 and 390 px, light and dark)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from playwright.sync_api import expect

from tests.e2e.conftest import docs_shot, login, wait_connected
from tests.tools.mcp.connect import connected
from tests.tools.mcp.oauth_servers import OAuthMcp, serve_oauth_mcp
from tools_app.connections.models import SourceConnection
from tools_app.connections.services import source_credentials_set
from tools_app.executors.mcp.services import mcp_refresh, mcp_server_add

pytestmark = [pytest.mark.e2e]

PHONE = {"width": 390, "height": 844}


@pytest.fixture
def served() -> Iterator[OAuthMcp]:
    from tools_app.executors.mcp.runtime import runtime

    with serve_oauth_mcp() as server:
        yield server
        runtime().close_all(timeout=5)


@pytest.fixture
def source(served: OAuthMcp, staff_user: Any) -> Any:
    source = mcp_server_add(
        name="svc", label="Test Service", url=served.url, allow_private=True, user=staff_user
    )
    source_credentials_set(source=source, mode="person", user=staff_user)
    source.refresh_from_db()
    admin = Client()
    admin.force_login(staff_user)
    connected(admin, served, "svc", "admin-gh")
    mcp_refresh(source, user_id=staff_user.pk)
    source.refresh_from_db()
    return source


def test_connect_card_connect_flow_retry_and_the_connections_page(
    page: Any,
    browser: Any,
    app_server: str,
    served: OAuthMcp,
    source: Any,
    user: Any,
    conversation: Any,
) -> None:
    login(page, "alice", "alice-password-1")
    page.goto(f"/c/{conversation.pk}/")
    wait_connected(page)
    page.get_by_label("Message").fill("/whoami {}")
    page.get_by_role("button", name="Send").click()
    card = page.locator(".toolcall").first
    expect(card.locator(".status-word").first).to_have_text("failed")
    connect_box = card.locator(".toolcall-connect")
    expect(connect_box).to_contain_text("Connect Test Service to use whoami")
    docs_shot(card, "connect-card-1280")

    # Connect: the authorization server's own page, then back to the conversation.
    connect_box.get_by_role("link", name="Connect").click()
    page.wait_for_url(f"{served.base}/login*")
    page.get_by_label("Account").fill("alice-gh")
    page.get_by_role("button", name="Authorize").click()
    page.wait_for_url(f"{app_server}/c/{conversation.pk}/")
    assert SourceConnection.objects.get(user=user).account == "alice-gh"
    wait_connected(page)

    # Retry: the same call through the same binding, served as Alice's account.
    page.locator(".toolcall-connect").first.get_by_role("button", name="Retry").click()
    done = page.locator(".toolcall.status-succeeded")
    expect(done).to_have_count(1, timeout=30_000)
    expect(done).to_contain_text("you are alice-gh")
    docs_shot(page, "connect-retry-1280")

    page.goto("/connections/")
    row = page.locator("#source-svc")
    expect(row).to_contain_text("alice-gh")
    expect(row).to_contain_text("tools:read")
    expect(row.get_by_role("button", name="Disconnect Test Service")).to_be_visible()
    token = dict(served.observed.issued)["alice-gh"]
    assert token not in page.content()
    docs_shot(page, "connections-1280", full_page=True)
    for viewport, scheme, name in (
        (PHONE, "light", "connections-390"),
        ({"width": 1280, "height": 860}, "dark", "connections-1280-dark"),
        (PHONE, "dark", "connections-390-dark"),
    ):
        context = browser.new_context(base_url=app_server, viewport=viewport, color_scheme=scheme)
        other = context.new_page()
        login(other, "alice", "alice-password-1")
        other.goto("/connections/")
        expect(other.locator("#source-svc")).to_contain_text("alice-gh")
        overflow = other.evaluate("document.documentElement.scrollWidth > window.innerWidth")
        assert not overflow, f"{name}: the page is wider than the screen"
        docs_shot(other, name, full_page=True)
        if name == "connections-390-dark":
            other.goto(f"/c/{conversation.pk}/")
            expect(other.locator(".toolcall-connect").first).to_be_visible()
            docs_shot(other, "connect-card-390-dark", full_page=False)
        context.close()

    # The admin's side: how the source authenticates.
    for viewport, scheme, name in (
        ({"width": 1280, "height": 860}, "light", "source-credentials-1280"),
        (PHONE, "dark", "source-credentials-390-dark"),
    ):
        context = browser.new_context(base_url=app_server, viewport=viewport, color_scheme=scheme)
        admin = context.new_page()
        login(admin, "root", "root-password-1")
        admin.goto("/tools/")
        admin.get_by_role("link", name="Credentials of Test Service").click()
        expect(
            admin.get_by_label("per person — each person connects their own account")
        ).to_be_checked()
        expect(admin.locator(".callback-url")).to_have_text(f"{app_server}/connections/callback/")
        overflow = admin.evaluate("document.documentElement.scrollWidth > window.innerWidth")
        assert not overflow, f"{name}: the page is wider than the screen"
        docs_shot(admin, name, full_page=True)
        context.close()

    # Disconnect: revoked at the service, gone here.
    row.get_by_role("button", name="Disconnect Test Service").click()
    expect(page.locator("#source-svc")).to_contain_text("not connected")
    assert not SourceConnection.objects.filter(user=user).exists()
    assert served.observed.revoked and token not in served.provider.access
