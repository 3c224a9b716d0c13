"""Our tools served to outside MCP clients at /mcp/, driven with the official SDK's client
against the real app server (and worker): list, write then read, refusals, authentication,
workspaces kept apart, approval in the web UI."""

from __future__ import annotations

import asyncio
import json
import threading
import urllib.error
import urllib.request
from typing import Any

import pytest

from platform_app.api_tokens import api_token_create, api_token_revoke
from tests.helpers import wait_for
from tools_app.models import AuditRecord, ToolCall, ToolFunctionConfig
from tools_app.runtime import workspace_dir_for

pytestmark = [pytest.mark.modes]


async def _with_session(url: str, token: str, work: Any) -> Any:
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=120)) as http,
        streamable_http_client(f"{url}/mcp/", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await work(session)


def mcp(url: str, token: str, work: Any) -> Any:
    return asyncio.run(_with_session(url, token, work))


def call(url: str, token: str, name: str, arguments: dict[str, Any]) -> Any:
    async def work(session: Any) -> Any:
        return await session.call_tool(name, arguments)

    return mcp(url, token, work)


@pytest.fixture
def alice_token(user: Any) -> str:
    return api_token_create(user=user, name="alice laptop")[1]


def test_a_client_lists_the_users_enabled_tools(app_server: str, alice_token: str) -> None:
    ToolFunctionConfig.objects.create(name="shell_exec", enabled=False)

    async def work(session: Any) -> Any:
        return await session.list_tools()

    tools = {t.name: t for t in mcp(app_server, alice_token, work).tools}
    assert "file_write" in tools and "file_read" in tools and "current_time" in tools
    assert "shell_exec" not in tools  # disabled by an admin
    assert tools["file_read"].input_schema["required"] == ["path"]


def test_a_client_writes_then_reads_a_file_through_the_governed_path(
    app_server: str, alice_token: str, user: Any
) -> None:
    wrote = call(app_server, alice_token, "file_write", {"path": "notes.txt", "content": "hi MCP"})
    assert not wrote.is_error, wrote.content
    read = call(app_server, alice_token, "file_read", {"path": "notes.txt"})
    assert not read.is_error, read.content
    assert read.structured_content["content"] == "hi MCP"
    assert (workspace_dir_for(f"u{user.pk}-test") / "notes.txt").read_text() == "hi MCP"
    calls = ToolCall.objects.filter(source="mcp", user=user).order_by("id")
    assert [c.tool for c in calls] == ["file_write", "file_read"]
    assert AuditRecord.objects.filter(tool_call__in=calls, source="mcp").count() == 2


def test_a_denied_call_comes_back_as_an_error_result(
    app_server: str, alice_token: str, user: Any
) -> None:
    escape = call(app_server, alice_token, "file_read", {"path": "../../etc/passwd"})
    assert escape.is_error
    assert escape.structured_content["status"] == "denied"
    ToolFunctionConfig.objects.create(name="current_time", enabled=False)
    disabled = call(app_server, alice_token, "current_time", {})
    assert disabled.is_error and "disabled" in disabled.structured_content["error"]


def test_the_agent_profile_limits_the_tools(app_server: str, user: Any) -> None:
    from chat_app.models import Agent

    agent = Agent.objects.create(name="reader", all_tools=False, tools=["file_read"])
    token = api_token_create(user=user, name="reader", agent=agent)[1]

    async def work(session: Any) -> Any:
        return await session.list_tools()

    assert [t.name for t in mcp(app_server, token, work).tools] == ["file_read"]
    refused = call(app_server, token, "file_write", {"path": "x.txt", "content": "x"})
    assert refused.is_error and "not available to this agent" in refused.structured_content["error"]


def _post(url: str, token: str | None) -> int:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    request = urllib.request.Request(f"{url}/mcp/", data=body, method="POST")
    request.add_header("Content-Type", "application/json")
    request.add_header("Accept", "application/json, text/event-stream")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_unauthenticated_and_revoked_requests_are_refused(
    app_server: str, user: Any, alice_token: str
) -> None:
    assert _post(app_server, None) == 401
    assert _post(app_server, "cc_not-a-real-token") == 401
    token, raw = api_token_create(user=user, name="soon revoked")
    api_token_revoke(token_id=token.pk)
    assert _post(app_server, raw) == 401
    user.is_active = False
    user.save(update_fields=["is_active"])
    assert _post(app_server, alice_token) == 401


def test_another_users_token_cannot_reach_this_users_workspace(
    app_server: str, alice_token: str, user: Any, other_user: Any
) -> None:
    wrote = call(app_server, alice_token, "file_write", {"path": "secret.txt", "content": "alice"})
    assert not wrote.is_error
    bob_token = api_token_create(user=other_user, name="bob")[1]
    read = call(app_server, bob_token, "file_read", {"path": "secret.txt"})
    assert read.is_error  # bob's workspace is his own: there is no secret.txt in it
    assert "alice" not in json.dumps(read.structured_content)
    assert not (workspace_dir_for(f"u{other_user.pk}-test") / "secret.txt").exists()


def test_a_call_that_requires_approval_waits_for_a_person(
    app_server: str, alice_token: str, user: Any, worker: str
) -> None:
    """Approved here as the web UI would (the approval queues the call on a worker)."""
    from tools_app.services.approval import toolcall_decide

    ToolFunctionConfig.objects.create(name="current_time", approval_mode="requester")
    result: dict[str, Any] = {}

    def client() -> None:
        result["value"] = call(app_server, alice_token, "current_time", {"timezone": "UTC"})

    thread = threading.Thread(target=client)
    thread.start()
    waiting = wait_for(
        lambda: ToolCall.objects.filter(
            source="mcp", tool="current_time", status="awaiting_approval"
        ).first(),
        timeout=20,
        message="the MCP call to wait for approval",
    )
    toolcall_decide(user=user, call_id=waiting.pk, approve=True)
    thread.join(30)
    assert not result["value"].is_error, result["value"].content
    assert result["value"].structured_content["timezone"] == "UTC"
