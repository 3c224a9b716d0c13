"""Attacks on API tokens and the ``/mcp/`` endpoint (issue 20), against the real app server
(``manage.py serve``) and the official SDK client: tokens of a deleted agent profile, minting
without end, ``GET`` streams held open, huge unauthenticated bodies, Agent-group tools called
though not listed, raw exceptions sent to the client. Those that touch the database's locking
or the worker run in both modes; the body cap is the web server's alone."""

from __future__ import annotations

import asyncio
import importlib
import io
import json
import os
import select
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.test import Client, override_settings

from platform_app.api_tokens import (
    AGENT_DELETED,
    TokenError,
    api_token_allowed_tools,
    api_token_create,
    api_token_revoke,
    api_token_verify,
)
from tests.conftest import ROOT, _process_tree, child_env
from tests.e2e.conftest import free_port
from tests.helpers import wait_for
from tools_app.models import ApiToken, AuditRecord, ToolCall

MB = 1024 * 1024


async def _with_session(url: str, token: str, work: Any) -> Any:
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60)) as http,
        streamable_http_client(f"{url}/mcp/", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await work(session)


def _list(url: str, token: str) -> list[str]:
    async def work(session: Any) -> Any:
        return await session.list_tools()

    return [t.name for t in asyncio.run(_with_session(url, token, work)).tools]


def _call(url: str, token: str, name: str, arguments: dict[str, Any]) -> str:
    """What the client gets back, as text: a result, or the error the SDK raised."""

    async def work(session: Any) -> Any:
        return await session.call_tool(name, arguments)

    try:
        result = asyncio.run(_with_session(url, token, work))
    except Exception as exc:  # a JSON-RPC error, raised by the SDK with the server's words
        return f"error: {_words(exc)}"
    assert result.is_error, result.content
    return json.dumps(result.structured_content, ensure_ascii=False)


def _words(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):  # the SDK's task group wraps the error
        return " ".join(_words(inner) for inner in exc.exceptions)
    return str(exc)


def _request(url: str, method: str, token: str | None = None) -> tuple[int, Any, str]:
    request = urllib.request.Request(f"{url}/mcp/", method=method)
    request.add_header("Accept", "application/json, text/event-stream")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read().decode()


# --- a deleted agent profile does not widen its tokens -----------------------------------------
@pytest.mark.modes
def test_it_refuses_a_token_whose_agent_profile_was_deleted(app_server: str, user: Any) -> None:
    from chat_app.models import Agent

    reader = Agent.objects.create(name="reader", all_tools=False, tools=["file_read"])
    token, raw = api_token_create(user=user, name="reader only", agent=reader)
    assert _list(app_server, raw) == ["file_read"]
    reader.delete()

    token.refresh_from_db()
    assert token.agent is None and token.scoped
    with pytest.raises(TokenError, match="agent profile was deleted"):
        api_token_verify(raw)
    with pytest.raises(TokenError, match="agent profile was deleted"):
        api_token_allowed_tools(token)
    status, headers, body = _request(app_server, "POST", raw)
    assert status == 401
    assert json.loads(body)["error_description"] == AGENT_DELETED
    assert not ToolCall.objects.filter(source="mcp").exists()


def test_it_keeps_a_token_made_without_a_profile_on_the_default_agent(user: Any) -> None:
    from chat_app.models import Agent

    Agent.objects.create(name="default", is_default=True, all_tools=False, tools=["file_read"])
    token, raw = api_token_create(user=user, name="default agent")
    assert not token.scoped and api_token_verify(raw) == token
    assert api_token_allowed_tools(token) == ["file_read"]


def test_it_marks_tokens_that_name_a_profile_as_scoped_when_migrating(user: Any) -> None:
    from django.apps import apps

    from chat_app.models import Agent

    reader = Agent.objects.create(name="reader", all_tools=False, tools=["file_read"])
    with_agent, _ = api_token_create(user=user, name="a", agent=reader)
    without, _ = api_token_create(user=user, name="b")
    ApiToken.objects.update(scoped=False)  # as every row was before the field existed
    migration = importlib.import_module("tools_app.migrations.0008_api_token_scoped")
    migration.mark_scoped(apps, None)
    assert ApiToken.objects.get(pk=with_agent.pk).scoped
    assert not ApiToken.objects.get(pk=without.pk).scoped


def test_the_tokens_page_refuses_a_profile_deleted_meanwhile_and_names_dead_tokens(
    user: Any,
) -> None:
    from chat_app.models import Agent

    client = Client()
    client.force_login(user)
    reader = Agent.objects.create(name="reader", all_tools=False, tools=["file_read"])
    api_token_create(user=user, name="old reader", agent=reader)
    reader_id = reader.pk
    reader.delete()
    page = client.post("/tokens/", {"name": "new", "agent": str(reader_id)}, follow=True)
    assert "that agent profile no longer exists" in page.content.decode()
    assert not ApiToken.objects.filter(name="new").exists()  # not the default agent's instead
    assert "profile deleted" in client.get("/tokens/").content.decode()


# --- tokens per user -----------------------------------------------------------------------------
@pytest.mark.modes
@override_settings(API_TOKENS_PER_USER=3)
def test_it_caps_the_active_tokens_a_user_may_hold(user: Any, other_user: Any) -> None:
    made = [api_token_create(user=user, name=f"t{i}")[0] for i in range(3)]
    with pytest.raises(TokenError, match="3 active tokens already"):
        api_token_create(user=user, name="one more")
    api_token_create(user=other_user, name="bob's own")  # a cap per user
    api_token_revoke(token_id=made[0].pk)
    api_token_create(user=user, name="after a revoke")  # revoked ones do not count
    assert ApiToken.objects.filter(user=user, revoked_at__isnull=True).count() == 3


@override_settings(API_TOKENS_PER_USER=1)
def test_the_tokens_page_and_the_command_show_the_cap(user: Any) -> None:
    client = Client()
    client.force_login(user)
    client.post("/tokens/", {"name": "first"})
    page = client.post("/tokens/", {"name": "second"}).content.decode()
    assert "1 active tokens already, the most a user may hold; revoke one first" in page
    assert 'id="new-token"' not in page
    with pytest.raises(CommandError, match="active tokens already"):
        call_command("api_tokens", "create", user.username, stdout=io.StringIO())
    assert ApiToken.objects.filter(user=user).count() == 1


# --- GET /mcp/ ------------------------------------------------------------------------------------
def test_it_answers_get_with_405_instead_of_a_stream_that_never_ends(
    app_server: str, user: Any
) -> None:
    raw = api_token_create(user=user, name="getter")[1]
    for token in (raw, None):
        started = time.monotonic()
        status, headers, _ = _request(app_server, "GET", token)
        assert status == 405 and headers["Allow"] == "POST"
        assert time.monotonic() - started < 5
    status, headers, _ = _request(app_server, "DELETE", raw)
    assert status == 405 and headers["Allow"] == "POST"


# --- request bodies -------------------------------------------------------------------------------
def _server_pid(url: str) -> int:
    port = url.rsplit(":", 1)[1].encode()
    for pid in _process_tree(os.getpid())[1:]:
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"serve" in args and port in args:
            return pid
    raise AssertionError(f"no app server process listening on {url}")


def _memory_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for process {pid}")


def _stream_post(url: str, path: str, headers: dict[str, str], total: int) -> tuple[int, int]:
    """POST ``total`` bytes, chunked, as fast as the server takes them, while watching for its
    answer. (status or 0 when the connection was cut before one could be read, bytes sent)."""
    host, port = url.removeprefix("http://").split(":")
    lines = [f"POST {path} HTTP/1.1", f"Host: {host}:{port}", "Transfer-Encoding: chunked"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    chunk = b"x" * MB
    framed = b"%x\r\n" % len(chunk) + chunk + b"\r\n"
    sent = 0
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        try:
            while sent < total and not select.select([sock], [], [], 0)[0]:
                sock.sendall(framed)
                sent += len(chunk)
            if sent >= total:
                sock.sendall(b"0\r\n\r\n")
        except OSError:  # the server closed the connection on us
            pass
        try:
            head = sock.recv(4096)
        except OSError:
            return 0, sent
    return (int(head.split()[1]) if head.startswith(b"HTTP/") else 0), sent


def test_a_huge_unauthenticated_post_is_refused_without_holding_it_in_memory(
    transactional_db: None, app_server: str
) -> None:
    pid = _server_pid(app_server)
    bad = {"Authorization": "Bearer cc_not-a-real-token", "Content-Type": "application/json"}
    assert _stream_post(app_server, "/mcp/", bad, 1024)[0] == 401  # warm: the endpoint is up
    before = _memory_kb(pid, "VmHWM")

    status, sent = _stream_post(app_server, "/mcp/", bad, 300 * MB)

    grown_mb = (_memory_kb(pid, "VmHWM") - before) / 1024
    assert grown_mb < 50, f"the server's peak memory grew by {grown_mb:.0f} MB"
    # 413 while the body arrives (0: the connection was cut before the answer could be read)
    assert status in (0, 413)
    assert sent < 300 * MB, "the server took the whole body"
    assert _request(app_server, "POST")[0] == 401  # and it still serves


def test_a_declared_length_over_the_cap_is_refused_before_the_body(
    transactional_db: None, app_server: str
) -> None:
    """Any path, not only /mcp/: the answer comes from the headers alone."""
    for path in ("/mcp/", "/accounts/login/", "/tokens/"):
        host, port = app_server.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(
                f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                f"Content-Length: {settings.MAX_REQUEST_BODY_BYTES + 1}\r\n\r\n".encode()
            )
            assert sock.recv(4096).startswith(b"HTTP/1.1 413 "), path


@pytest.fixture
def uvicorn_app(transactional_db: None) -> Iterator[str]:
    """The same ASGI application under a server that streams bodies to it (uvicorn), where
    the cap is the middleware's to keep."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "controlcenter.asgi:application"]
        + ["--port", str(port), "--lifespan", "off", "--log-level", "warning"],
        cwd=ROOT,
        env=child_env(MAX_REQUEST_BODY_BYTES=str(MB)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=1):
                return True
        except OSError:
            return proc.poll() is not None

    try:
        wait_for(up, timeout=60, message="uvicorn to serve the app")
        assert proc.poll() is None
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_the_asgi_middleware_caps_bodies_under_a_streaming_server(uvicorn_app: str) -> None:
    bad = {"Authorization": "Bearer cc_not-a-real-token", "Content-Type": "application/json"}
    assert _stream_post(uvicorn_app, "/mcp/", bad, MB // 2)[0] == 401
    # Django reads a body before its view runs: chunked past the cap, it stops there.
    status, sent = _stream_post(uvicorn_app, "/accounts/login/", {}, 64 * MB)
    assert status == 413 and sent < 64 * MB
    # A declared length over the cap: refused before the body, so the answer comes to the
    # headers alone. (urllib, which reads only once it has sent everything, once met the
    # connection closed under it: a broken pipe.)
    assert _declared_post(uvicorn_app, "/accounts/login/", MB + 1) == 413


def _declared_post(url: str, path: str, length: int) -> int:
    """Send the headers of a POST declaring ``length`` bytes; the status the server answers
    before any of the body (0 if it waits for the body instead)."""
    host, port = url.removeprefix("http://").split(":")
    head = f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Length: {length}\r\n\r\n"
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(head.encode())
        if not select.select([sock], [], [], 10)[0]:
            return 0
        answer = sock.recv(4096)
    return int(answer.split()[1]) if answer.startswith(b"HTTP/") else 0


# --- tools/call ----------------------------------------------------------------------------------
@pytest.mark.modes
def test_it_refuses_agent_group_tools_over_mcp_and_audits_the_refusal(
    app_server: str, user: Any
) -> None:
    raw = api_token_create(user=user, name="outside loop")[1]
    listed = _list(app_server, raw)
    assert "final_answer" not in listed and "file_read" in listed
    answer = {
        "reasoning": "done",
        "completed_steps": ["nothing"],
        "answer": "forged",
        "status": "completed",
    }
    result = json.loads(_call(app_server, raw, "final_answer", answer))
    assert result["status"] == "denied"
    assert "not available" in result["error"]
    call = ToolCall.objects.get(pk=result["tool_call_id"])
    assert call.source == "mcp" and call.status == "denied"
    assert AuditRecord.objects.filter(tool_call=call, source="mcp").exists()
    unknown = json.loads(_call(app_server, raw, "no_such_tool", {}))
    assert "final_answer" not in unknown["error"]  # not named among the available ones


@pytest.mark.modes
@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("current_time", {"timezone": "x" * 300}),
        ("send_message", {"channel": "conversation", "chat_id": "²", "text": "hi"}),
    ],
)
def test_it_never_sends_an_exception_or_a_path_to_the_client(
    app_server: str, user: Any, tool: str, arguments: dict[str, Any]
) -> None:
    raw = api_token_create(user=user, name="prober")[1]
    answer = _call(app_server, raw, tool, arguments)
    for leak in (str(ROOT), "/usr/", "site-packages", "Traceback", "Errno", "invalid literal"):
        assert leak not in answer, answer
