"""Our governed tools for outside MCP clients: the ``/mcp/`` streamable-HTTP endpoint.

The official SDK's low-level server (stateless streamable HTTP, so any web process can answer
any request) lists the tools the token's user may use — their agent profile's subset, enabled
ones only — and runs each call through the same binding, policy, approval, queue, sandbox and
audit as the chat (source "mcp"). A call that requires approval waits until someone approves
it in the web UI (the Tokens page lists them). A client that cancels its request
(``notifications/cancelled``) stops the call. A call's answer waits on the events the call
publishes to its group (``toolcall_<id>``) on the channel layer, not on a poll of its row.

Authentication: ``Authorization: Bearer <token>`` with a personal API token that has the
``mcp`` scope (Tokens page or ``manage.py api_tokens create``), checked from the headers
before any body is read. Requests are rate-limited per token. Only POST is served
(stateless: no event stream to GET). Nothing the server fails on reaches the client but a
generic error; the details go to the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
from typing import Any

import anyio
from django.conf import settings

from infra.events import GroupListener, toolcall_group
from infra.safe_json import JsonTooDeep, json_loads_safe

# Its database work runs on the server's thread pool, each call closing stale connections
# (after a database restart too), not on asgiref's one sync thread, whose connections only
# Channels' socket connects and disconnects close.
from infra.websocket import db

logger = logging.getLogger(__name__)

# A call's finish wakes its wait through the call's events; its row is read once after
# subscribing (a call that finished before that sent its events to nobody) and then only
# after this long without an event, in case one was lost (a full channel, Redis restarting).
FALLBACK_POLL_SECONDS = 2.0
_token_id: contextvars.ContextVar[int | None] = contextvars.ContextVar("mcp_token", default=None)


# --- sync parts (ORM) --------------------------------------------------------------------------
def _offered(token: Any) -> list[str]:
    """The tool names a token's client may use: what the token allows, minus the Agent group,
    which structures a chat turn (pause, plan, end) and is nothing for an outside client with
    its own loop. What is listed and what may be called are the same list."""
    from platform_app.api_tokens import api_token_allowed_tools
    from tools_app import selectors

    allowed = api_token_allowed_tools(token)
    return [
        name
        for name, tool in selectors.registered_tools().items()
        if tool.tool_group != "agent" and (allowed is None or name in allowed)
    ]


def _tools_for(token_id: int) -> list[dict[str, Any]]:
    from tools_app.models import ApiToken
    from tools_app.services.decision import usable_tools

    token = ApiToken.objects.select_related("agent").get(pk=token_id)
    # The token's tools within its owner's grants, as they are now (binding checks them too).
    return [
        {
            "name": tool.tool_name,
            "description": tool.description(),
            "input_schema": tool.anthropic_schema()["input_schema"],
        }
        for tool in usable_tools(token.user_id, _offered(token))
    ]


def _bind(token_id: int, name: str, arguments: dict[str, Any]) -> Any:
    from platform_app.api_tokens import api_token_allowed_tools
    from tools_app.models import ApiToken, ToolCall
    from tools_app.runtime import BindContext
    from tools_app.services.binding import CallRequest, toolcall_bind, toolcall_dispatch

    token = ApiToken.objects.select_related("agent").get(pk=token_id)
    call = toolcall_bind(
        request=CallRequest(tool=name, arguments=arguments),
        ctx=BindContext(
            user_id=token.user_id,
            conversation_id=None,
            source="mcp",
            # The token's whole list: a turn an MCP call starts (a subagent) may use the
            # Agent group, which an outside client is not offered itself.
            scope=api_token_allowed_tools(token),
        ),
        # A tool outside the list is refused, stored and audited like any other.
        allowed_tools=_offered(token),
    )
    if call.status == ToolCall.Status.QUEUED:
        toolcall_dispatch(call)
    return call


def _status(call_id: int) -> str:
    from tools_app.models import ToolCall

    status = ToolCall.objects.filter(pk=call_id).values_list("status", flat=True).first()
    return status or ToolCall.Status.FAILED  # removed meanwhile: _finished says so


def _finished(call_id: int) -> Any:
    from tools_app.models import ToolCall

    call = ToolCall.objects.filter(pk=call_id).first()
    if call is None:  # removed meanwhile (its conversation or user deleted)
        error = "the call no longer exists"
        return ToolCall(pk=call_id, status="failed", result={"success": False, "error": error})
    return call


def _cancel(call_id: int) -> None:
    from tools_app.models import ToolCall
    from tools_app.services.execution import toolcall_cancel

    call = ToolCall.objects.filter(pk=call_id).first()
    if call is not None and not call.is_terminal:
        toolcall_cancel(call, reason="cancelled by the MCP client")


# --- waiting for a call -------------------------------------------------------------------------
class _CallEvents(GroupListener):
    """The events one call publishes, received on a channel of our own in its group."""

    def __init__(self, call_id: int) -> None:
        super().__init__(toolcall_group(call_id))

    async def next_status(self, timeout: float) -> str | None:
        """The status the call's next card announces ("" for another event), or None when
        nothing came within ``timeout``."""
        payload = await self.receive(timeout)
        if payload is None:
            return None
        return str(payload.get("status") or "") if payload.get("type") == "toolcall" else ""


async def call_finished(call_id: int) -> Any:
    """The call once it has finished, woken by its events."""
    from tools_app.models import ToolCall

    async with _CallEvents(call_id) as events:
        status: str | None = await db(_status)(call_id)
        while True:
            if status in ToolCall.TERMINAL:
                done = await db(_finished)(call_id)
                if done.status in ToolCall.TERMINAL:
                    return done
                status = done.status  # a card sent before its transaction committed: wait on
            status = await events.next_status(FALLBACK_POLL_SECONDS)
            if status is None:  # nothing heard for a while: an event may have been lost
                status = await db(_status)(call_id)


async def call_run(token_id: int, name: str, arguments: dict[str, Any]) -> Any:
    """Bind a client's call and wait for its end (the finished row). A client that gives up
    (its request cancelled) has the call cancelled, also when that comes while the call is
    being stored: the bind runs in a task of its own, and the client may see the stored call
    before this coroutine does."""
    binding = asyncio.ensure_future(db(_bind)(token_id, name, arguments))
    try:
        call = await asyncio.shield(binding)
        return await call_finished(call.pk)
    except asyncio.CancelledError:
        # The SDK cancels a handler through an anyio cancel scope, which cancels again at
        # every await: a shielded scope lets the cancel finish here (an ``asyncio.shield``
        # would leave it to an unreferenced task, which may be collected before it runs).
        with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
            stored = await binding  # a bind that failed stored nothing to cancel
            await db(_cancel)(stored.pk)
        raise


# --- the server --------------------------------------------------------------------------------
def _current_token(ctx: Any) -> int:
    request = getattr(ctx, "request", None)
    scope = getattr(request, "scope", None) or {}
    token_id = scope.get("cc_token_id") or _token_id.get()
    if token_id is None:  # the endpoint authenticates every request before it gets here
        raise PermissionError("not authenticated")
    return int(token_id)


# What a client sees when the server fails: the details stay in the server's log (they may
# name files, paths and settings).
INTERNAL_ERROR = "internal error: the call could not be run (the details are in the server log)"


def build_server() -> Any:
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError
    from mcp_types import INTERNAL_ERROR as INTERNAL_ERROR_CODE
    from mcp_types import INVALID_REQUEST, CallToolResult, ListToolsResult, TextContent, Tool

    from platform_app.api_tokens import TokenError

    def error_result(message: str) -> Any:
        result = {"success": False, "error": message}
        return CallToolResult(
            content=[TextContent(type="text", text=json.dumps(result, ensure_ascii=False))],
            structured_content=result,
            is_error=True,
        )

    async def list_tools(ctx: Any, params: Any) -> Any:
        try:
            tools = await db(_tools_for)(_current_token(ctx))
        except TokenError as exc:
            raise MCPError(code=INVALID_REQUEST, message=str(exc)) from None
        except Exception:
            logger.exception("MCP tools/list failed")
            raise MCPError(code=INTERNAL_ERROR_CODE, message="Internal server error") from None
        return ListToolsResult(tools=[Tool(**t) for t in tools])

    async def call_tool(ctx: Any, params: Any) -> Any:
        # The SDK would send an exception's text to the client as it is; ours never leave.
        try:
            return await _call_tool(_current_token(ctx), params)
        except TokenError as exc:
            return error_result(str(exc))
        except Exception:
            logger.exception("MCP tools/call of %r failed", getattr(params, "name", "?"))
            return error_result(INTERNAL_ERROR)

    async def _call_tool(token_id: int, params: Any) -> Any:
        from tools_app.models import ToolCall

        done = await call_run(token_id, params.name, dict(params.arguments or {}))
        result = done.result if isinstance(done.result, dict) else {"result": done.result}
        result = {"tool_call_id": done.pk, "status": done.status, **result}
        return CallToolResult(
            content=[TextContent(type="text", text=json.dumps(result, ensure_ascii=False))],
            structured_content=result,
            is_error=done.status != ToolCall.Status.SUCCEEDED,
        )

    return Server(
        "controlcenter",
        version="1",
        instructions="Control Center's governed tools: every call is checked, sandboxed and "
        "audited; some need a person's approval in the web UI before they run.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _transport_security() -> Any:
    from mcp.server.transport_security import TransportSecuritySettings

    hosts = list(settings.ALLOWED_HOSTS)
    if "*" in hosts:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    allowed = [h for host in hosts for h in (host, f"{host}:*")]
    origins = [f"{scheme}://{h}" for scheme in ("http", "https") for h in allowed]
    origins += list(settings.CSRF_TRUSTED_ORIGINS)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=allowed, allowed_origins=origins
    )


class McpEndpoint:
    """ASGI app for ``/mcp/``: authenticates, rate-limits, then hands over to the SDK.

    The SDK's session manager must run inside a task for the life of the server; Daphne has no
    ASGI lifespan, so it is started on the first request, on the server's own event loop.
    """

    def __init__(self) -> None:
        self._app: Any = None
        self._lock: asyncio.Lock | None = None
        self._task: asyncio.Task[None] | None = None

    async def _ensure_started(self) -> Any:
        if self._app is not None:
            return self._app
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._app is not None:
                return self._app
            server = build_server()
            app = server.streamable_http_app(
                streamable_http_path="/mcp/",
                stateless_http=True,
                transport_security=_transport_security(),
            )
            manager = server.session_manager
            ready = asyncio.Event()

            async def keep_running() -> None:
                async with manager.run():
                    ready.set()
                    await asyncio.Event().wait()

            self._task = asyncio.get_running_loop().create_task(keep_running())
            await ready.wait()
            self._app = app
            return app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Everything here is decided from the headers: no body is read before the token is
        checked (and none is larger than MAX_REQUEST_BODY_BYTES, infra/body_limit.py)."""
        if scope["type"] != "http":
            return
        from platform_app.api_tokens import Refusal, api_token_for_request, bearer_token

        if scope["method"] != "POST":
            # Stateless: no session to end (DELETE) and no server-sent event stream (GET), which
            # the MCP specification lets such a server decline with 405. The SDK would hold a
            # GET stream open for ever.
            await _json(
                send,
                405,
                {"error": "method_not_allowed", "error_description": "this server takes POST"},
                extra=[(b"allow", b"POST")],
            )
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        raw = bearer_token(headers.get("authorization", ""))
        token = await db(api_token_for_request)(raw, scope="mcp")
        if isinstance(token, Refusal):
            await _refuse(send, token)
            return
        body = await _checked_body(receive, send)
        if body is None:
            return
        app = await self._ensure_started()
        scope = {**scope, "path": "/mcp/", "raw_path": b"/mcp/", "cc_token_id": token.pk}
        reset = _token_id.set(token.pk)
        try:
            await app(scope, _replay(body, receive), send)
        finally:
            _token_id.reset(reset)


async def _checked_body(receive: Any, send: Any) -> bytes | None:
    """The whole body (capped by infra/body_limit.py), or None once a body nested too deep
    was answered 400 as a JSON-RPC parse error: the same limit as every other way in."""
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None  # the client went away
        body += message.get("body", b"")
        if not message.get("more_body", False):
            break
    data = bytes(body)
    try:
        json_loads_safe(data)
    except JsonTooDeep as exc:
        error = {"code": -32700, "message": f"Parse error: {exc}"}
        await _json(send, 400, {"jsonrpc": "2.0", "id": None, "error": error})
        return None
    except ValueError:
        pass  # not JSON at all: the SDK answers that in its own words
    return data


def _replay(body: bytes, receive: Any) -> Any:
    """``receive`` that gives the SDK the body already read, then waits on the client."""
    sent = False

    async def replayed() -> Any:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


async def _refuse(send: Any, refusal: Any) -> None:
    """401 (no usable token), 403 (no ``mcp`` scope) or 429 (rate limit, with Retry-After),
    in OAuth's error words as MCP clients expect them."""
    error = {401: "invalid_token", 403: "insufficient_scope", 429: "rate_limited"}
    extra = []
    if refusal.status == 401:
        extra.append((b"www-authenticate", b'Bearer realm="controlcenter"'))
    message = refusal.message
    if refusal.status == 429:
        extra.append((b"retry-after", str(refusal.retry_after).encode()))
        message = f"{message}; try again in {refusal.retry_after} s"
    body = {"error": error.get(refusal.status, "refused"), "error_description": message}
    await _json(send, refusal.status, body, extra=extra)


async def _json(
    send: Any, status: int, body: dict[str, Any], extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *(extra or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


class McpRouter:
    """``/mcp`` and ``/mcp/`` go to the MCP endpoint, everything else to Django."""

    def __init__(self, django_app: Any) -> None:
        self.django_app = django_app
        self.endpoint = McpEndpoint()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] in ("/mcp", "/mcp/"):
            await self.endpoint(scope, receive, send)
        else:
            await self.django_app(scope, receive, send)
