"""The operator command line: mcp_servers, openapi_import, api_tokens."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from platform_app.api_tokens import api_token_verify
from tests.tools.mcp.servers import Observed
from tests.tools.openapi.api_app import API_KEY, make_app, serve
from tools_app.models import ApiToken, ToolSource
from tools_app.selectors import tool_named


def run(*args: str, **env: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_mcp_servers_add_list_refresh_remove_over_http(
    mcp_http: tuple[str, Observed], transactional_db: None
) -> None:
    url, observed = mcp_http
    out = run(
        "mcp_servers", "add", "cli-http", "--url", url, "--header", "X-Team=red", "--allow-private"
    )
    assert "registered MCP server cli-http" in out and "6 tool(s)" in out
    listing = run("mcp_servers", "list")
    assert "cli-http\thttp" in listing and "up" in listing and "secrets: header X-Team" in listing
    assert "red" not in listing  # secret values never printed
    assert "cli-http: 6 tool(s)" in run("mcp_servers", "refresh", "cli-http")
    assert any(h.get("x-team") == "red" for h in observed.headers)
    run("mcp_servers", "remove", "cli-http")
    assert not ToolSource.objects.filter(name="cli-http").exists()
    assert tool_named("echo") is None
    with pytest.raises(CommandError, match="no MCP server"):
        run("mcp_servers", "refresh", "cli-http")


def test_mcp_servers_add_a_stdio_server(mcp_venv: Path, transactional_db: None) -> None:
    from tests.tools.conftest import require_backend

    require_backend("bubblewrap")
    out = run(
        "mcp_servers", "add", "cli-time", "--command", "mcp-server-time", "--sandbox", "bubblewrap"
    )
    assert "get_current_time" in out


def test_mcp_servers_add_refuses_a_bad_request(transactional_db: None) -> None:
    with pytest.raises(CommandError, match="not a public address"):
        run("mcp_servers", "add", "x", "--url", "http://127.0.0.1:9/mcp")
    with pytest.raises(CommandError, match="lower-case"):
        run("mcp_servers", "add", "Bad Name", "--command", "x")


def test_openapi_import_with_chosen_operations(
    transactional_db: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serve(make_app()) as api:
        preview = run("openapi_import", "inv", f"{api}/openapi.json", "--list", "--allow-private")
        assert "get_item\tGET /items/{item_id}" in preview
        monkeypatch.setenv("INV_KEY", API_KEY)
        out = run(
            "openapi_import",
            "inv",
            f"{api}/openapi.json",
            "--operations",
            "get_item,search_items",
            "--allow-private",
            "--auth",
            "api_key",
            "--auth-name",
            "X-API-Key",
            "--secret-env",
            "INV_KEY",
        )
        assert "imported 2 operation(s) into openapi_inv: get_item, search_items" in out
        assert tool_named("create_item") is None
        with pytest.raises(CommandError, match="no such operation"):
            run(
                "openapi_import",
                "inv2",
                f"{api}/openapi.json",
                "--operations",
                "nope",
                "--allow-private",
            )


def test_api_tokens_create_list_revoke(user: Any) -> None:
    raw = run("api_tokens", "create", user.username, "--name", "ci").strip()
    token = api_token_verify(raw)
    assert token is not None and token.name == "ci"
    listing = run("api_tokens", "list", user.username)
    scopes = "chat,read,write,approve,mcp"
    assert f"{token.pk}\tci\t{token.prefix}…\t{scopes}\tactive" in listing
    assert raw not in listing
    run("api_tokens", "revoke", str(token.pk))
    assert ApiToken.objects.get(pk=token.pk).revoked_at is not None
    with pytest.raises(CommandError, match="no user"):
        run("api_tokens", "create", "nobody")
