"""``/v1``: the OpenAI-compatible endpoint (``GET /v1/models``, ``GET /v1/models/{model}``,
``POST /v1/chat/completions``), for any OpenAI client with an API token that has the ``chat``
scope (``Authorization: Bearer cc_…``).

It is a small Starlette application beside Django, like ``/mcp/``: a reply that waits for a
model, a tool or an approver holds its request for minutes, and Django's own request path
would hold one of the server's few synchronous threads for all that time (its middleware is
synchronous); here a waiting request costs a coroutine, and the database work runs in short
steps on the server's thread pool (``infra.websocket.db``). Starlette is the web toolkit the
MCP SDK already serves ``/mcp/`` with.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from django.conf import settings
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from infra.events import GroupListener
from infra.safe_json import JsonTooDeep, json_loads_safe
from infra.websocket import db
from platform_app.api.errors import ApiError, error_body, refusal_error
from platform_app.api.follow import turn_listen
from platform_app.api.v1 import retries, services
from platform_app.api.v1.schemas import ChatCompletionRequest
from platform_app.api.v1.stream import Reply, stream_reply, whole_reply

logger = logging.getLogger(__name__)


async def _token_id(request: Request, scope: str) -> int:
    from platform_app.api_tokens import Refusal, api_token_for_request, bearer_token

    raw = bearer_token(request.headers.get("authorization", ""))
    token = await db(api_token_for_request)(raw, scope=scope)
    if isinstance(token, Refusal):
        raise refusal_error(token)
    return token.pk


async def _json_body(request: Request) -> Any:
    """The request's JSON, read up to the largest body Django itself takes in memory."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 2_621_440
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise ApiError(413, f"the request body is larger than {limit} bytes", code="too_large")
    body = bytearray()
    async for part in request.stream():
        body += part
        if len(body) > limit:
            raise ApiError(413, f"the request body is larger than {limit} bytes", code="too_large")
    try:
        return json_loads_safe(body)
    except JsonTooDeep as exc:
        raise ApiError(400, f"the request body is {exc}", code="json_too_deep") from None
    except ValueError as exc:  # UnicodeDecodeError too
        raise ApiError(400, f"the request body is not JSON: {exc}", code="invalid_json") from None


def _parsed(data: Any) -> ChatCompletionRequest:
    if not isinstance(data, dict):
        raise ApiError(400, "the request body must be a JSON object", code="invalid_json")
    try:
        return ChatCompletionRequest.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise ApiError(
            400,
            f"{where or 'body'}: {first.get('msg', 'invalid')}",
            code="invalid_request",
            param=str(first["loc"][0]) if first.get("loc") else None,
        ) from None


async def models(request: Request) -> Response:
    token_id = await _token_id(request, "chat")

    def listing() -> list[dict[str, Any]]:
        token = services.token_load(token_id)
        return [services.model_object(agent) for agent in services.models_for(token)]

    return JSONResponse({"object": "list", "data": await db(listing)()})


async def model(request: Request) -> Response:
    token_id = await _token_id(request, "chat")
    name = request.path_params["model"]

    def one() -> dict[str, Any]:
        return services.model_object(services.model_named(services.token_load(token_id), name))

    return JSONResponse(await db(one)())


async def chat_completions(request: Request) -> Response:
    token_id = await _token_id(request, "chat")
    data = await _json_body(request)
    chat = _parsed(data)
    claim = await db(retries.request_claim)(
        token_id=token_id,
        key=retries.idempotency_key(request.headers.get("idempotency-key", "")),
        body=retries.body_hash(data),
        sdk_retry=retries.sdk_retry(request.headers.get("x-stainless-retry-count", "")),
    )
    if claim.joined:  # a retry: the turn its first attempt started, not a new one
        return await _join(request, chat, claim)
    header = request.headers.get("x-conversation-id", "")
    asked = {
        "token_id": token_id,
        "request": chat,
        "conversation_header": header,
        "trace_header": request.headers.get("x-trace", ""),
    }
    # Listen before the turn starts: none of its events is missed. A request that names its
    # conversation listens first and then checks and starts in one step.
    named = services.requested_conversation(chat, header)
    events = turn_listen(named) if named is not None else None
    try:
        if events is not None:
            await events.__aenter__()
            prepared, turn_id = await db(services.chat_prepare_and_start)(**asked)
        else:
            prepared = await db(services.chat_prepare)(**asked)
            events = turn_listen(prepared.conversation_id)
            await events.__aenter__()
            turn_id = await db(services.chat_start)(prepared=prepared)
    except BaseException:
        if events is not None:
            await events.__aexit__(None, None, None)
        await asyncio.shield(db(retries.request_forget)(claim.id))
        raise
    await db(retries.request_started)(
        claim_id=claim.id,
        conversation_id=prepared.conversation_id,
        turn_id=turn_id,
        model=prepared.model,
        trace=prepared.trace,
    )
    reply = Reply(
        id=f"chatcmpl-cc-{turn_id or 'none'}-{prepared.conversation_id}",
        created=claim.created,  # a retry answers with the same
        model=prepared.model,
        conversation_id=prepared.conversation_id,
        turn_id=turn_id,
        trace=prepared.trace,
    )
    return await _respond(request, chat, reply, events, claim, {})


async def _join(request: Request, chat: ChatCompletionRequest, claim: retries.Claim) -> Response:
    """Answer a retry from the turn its first attempt started (running or ended)."""
    assert claim.conversation_id is not None
    reply = Reply(
        id=f"chatcmpl-cc-{claim.turn_id or 'none'}-{claim.conversation_id}",
        created=claim.created,
        model=claim.model,
        conversation_id=claim.conversation_id,
        turn_id=claim.turn_id,
        trace=claim.trace,
    )
    events = turn_listen(claim.conversation_id)
    await events.__aenter__()
    return await _respond(request, chat, reply, events, claim, {"Idempotent-Replayed": "true"})


async def _respond(
    request: Request,
    chat: ChatCompletionRequest,
    reply: Reply,
    events: GroupListener,
    claim: retries.Claim,
    headers: dict[str, str],
) -> Response:
    headers = {**headers, "X-Conversation-Id": str(reply.conversation_id)}
    if reply.turn_id is not None:
        headers["X-Turn-Id"] = str(reply.turn_id)
    keepalive = settings.API_STREAM_KEEPALIVE_SECONDS
    if chat.stream:
        include_usage = bool(chat.stream_options and chat.stream_options.include_usage)
        body = stream_reply(events, reply, include_usage=include_usage, keepalive=keepalive)
        headers.update({"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        return StreamingResponse(body, media_type="text/event-stream", headers=headers)
    grace = settings.V1_DISCONNECT_GRACE_SECONDS
    answer = asyncio.ensure_future(
        whole_reply(events, reply, keepalive=keepalive, stop_on_leave=not grace)
    )
    gone = asyncio.ensure_future(_client_gone(request))
    try:
        await asyncio.wait({answer, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
    if not answer.done():  # the client left: its turn stops, now or after the grace time
        answer.cancel()
        await asyncio.gather(answer, return_exceptions=True)
        if grace and reply.turn_id is not None:
            _stop_later(claim, reply.turn_id, grace)
        return Response(status_code=499)
    result = answer.result()
    if "error" in result:  # the turn failed: the same request would fail again
        return JSONResponse(result, status_code=502, headers={**headers, "x-should-retry": "false"})
    return JSONResponse(result, headers=headers)


_waiting: set[asyncio.Task[None]] = set()


def _stop_later(claim: retries.Claim, turn_id: int, grace: float) -> None:
    """The turn of a client that left runs ``grace`` seconds more for a retry to join it;
    then it stops, unless a retry did (the mark is in the database: any host's retry counts)."""

    async def later() -> None:
        try:
            await db(retries.request_left)(claim.id, claim.attempts, grace)
            await asyncio.sleep(grace)
            await db(retries.request_stop_if_due)(claim.id)
        except Exception:
            logger.exception("turn %s: could not stop it after its client left", turn_id)

    task = asyncio.get_running_loop().create_task(later())
    _waiting.add(task)
    task.add_done_callback(_waiting.discard)


async def _client_gone(request: Request) -> None:
    """Returns when the client disconnects (the body was read: what is left is the end)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


ALLOWED = {"/v1/models": "GET", "/v1/chat/completions": "POST"}


async def not_found(request: Request) -> Response:
    path = request.url.path
    allowed = ALLOWED.get(path) or ("GET" if path.startswith("/v1/models/") else None)
    if allowed is not None:  # a known path asked with another method
        message = f"{request.method} is not allowed on {path}; use {allowed}"
        raise ApiError(405, message, code="method_not_allowed", headers={"Allow": allowed})
    raise ApiError(404, f"no route {request.method} {path}", code="unknown_url")


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)


async def _crash(request: Request, exc: Exception) -> Response:
    logger.exception("%s %s failed", request.method, request.url.path, exc_info=exc)
    body = error_body(500, "internal error (the details are in the server log)", code="internal")
    return JSONResponse(body, status_code=500, headers={"x-should-retry": "false"})


async def _method_not_allowed(request: Request, exc: Exception) -> Response:
    status = getattr(exc, "status_code", 405)
    body = error_body(status, f"{request.method} is not allowed on {request.url.path}")
    return JSONResponse(body, status_code=status)


def build_app() -> Starlette:
    return Starlette(
        routes=[
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/models/{model:path}", model, methods=["GET"]),
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
            Route("/v1/{rest:path}", not_found),
        ],
        exception_handlers={
            ApiError: _api_error,
            404: _method_not_allowed,
            405: _method_not_allowed,
            Exception: _crash,
        },
    )


class OpenAIRouter:
    """``/v1`` and everything under it go to the OpenAI-compatible endpoint, the rest on."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.app: Starlette | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path == "/v1" or path.startswith("/v1/"):
            if self.app is None:
                self.app = build_app()
            await self.app(scope, receive, send)
        else:
            await self.inner(scope, receive, send)
