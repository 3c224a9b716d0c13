"""Conversations, their messages and turns: list, create, read, change, delete, export; send a
message (a turn of the token's owner, source "api") and follow its turn as server-sent events.

A conversation is its owner's: lists and writes are the owner's only; a read of someone
else's needs the auditor permission and is audited (``chat_app.services.privacy``, via
"api"), exactly as on the pages. Another person's id answers as a missing one.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.utils.text import slugify
from ninja import Query, Router

from chat_app import selectors
from chat_app.models import Agent, Conversation, Turn
from chat_app.services import conversations as conversation_services
from chat_app.services import privacy, transfer
from chat_app.services.turns import TurnError, turn_start, turn_stop
from infra.websocket import db
from platform_app.api.errors import ApiError
from platform_app.api.follow import (
    CallChanged,
    KeepAlive,
    TextPiece,
    TextStitcher,
    turn_events,
    turn_listen,
)
from platform_app.api.rest.base import (
    Cursor,
    errors,
    etag_of,
    not_modified,
    scope,
    token_of,
    user_of,
)
from platform_app.api.rest.schemas import (
    ConversationIn,
    ConversationOut,
    ConversationPage,
    ConversationPatch,
    MessageIn,
    MessageOut,
    MessagePage,
    SentOut,
    ToolCallBrief,
    TurnOut,
)
from platform_app.api.v1 import services as v1
from platform_app.api_tokens import api_token_turn_scope

router = Router(tags=["conversations"])
RECENT = Cursor(["-updated_at", "-id"])
NOT_FOUND = "conversation not found"


def _readable(request: HttpRequest, conversation_id: int) -> Conversation:
    found = privacy.conversation_read(
        user=user_of(request), conversation_id=conversation_id, via="api"
    )
    if found is None:
        raise ApiError(404, NOT_FOUND, code="not_found")
    return found


def _owned(request: HttpRequest, conversation_id: int) -> Conversation:
    found = selectors.conversation_for(user_of(request), conversation_id)
    if found is None:
        raise ApiError(404, NOT_FOUND, code="not_found")
    return found


def _out(conversation: Conversation) -> ConversationOut:
    running = selectors.running_turn(conversation)
    return ConversationOut(
        id=conversation.pk,
        title=conversation.title,
        agent=conversation.agent.name if conversation.agent else None,
        created_at=conversation.created_at,
        updated_at=conversation.updated_at,
        pinned=conversation.pinned_at is not None,
        archived=conversation.archived_at is not None,
        running_turn_id=running.pk if running else None,
    )


def _turn_out(turn: Turn) -> TurnOut:
    return TurnOut(
        id=turn.pk,
        conversation_id=turn.conversation_id,
        status=turn.status,
        phase=turn.phase,
        source=turn.source,
        kind=turn.kind,
        error=turn.error,
        started_at=turn.started_at,
        finished_at=turn.finished_at,
    )


@router.get("/conversations", response={200: ConversationPage, **errors(400)}, auth=scope("read"))
def conversation_list(
    request: HttpRequest,
    archived: bool = False,
    cursor: str | None = None,
    limit: int = Query(50, ge=1, le=200),
) -> Any:
    """Your conversations, most recently active first (``archived=true``: the archived ones)."""
    mine = selectors.conversations_for(user_of(request)).filter(archived_at__isnull=not archived)
    rows, following = RECENT.page(mine.select_related("agent"), cursor=cursor, limit=limit)
    return {"items": [_out(c) for c in rows], "next_cursor": following}


def _agent_for(request: HttpRequest, name: str | None) -> Agent | None:
    if not name:
        return None
    try:
        return v1.model_named(token_of(request), name)
    except ApiError:
        raise ApiError(
            404,
            f"no agent profile named {name!r} that you may use",
            code="not_found",
            param="agent",
        ) from None


@router.post("/conversations", response={201: ConversationOut, **errors(404)}, auth=scope("chat"))
def conversation_create(request: HttpRequest, body: ConversationIn) -> Any:
    """A new, empty conversation (``agent``: the profile it uses; default: the default one).
    Send it messages with ``POST /api/conversations/{id}/messages``."""
    agent = _agent_for(request, body.agent)
    title = body.title.strip() or "New conversation"
    conversation = Conversation.objects.create(
        owner=user_of(request), agent=agent, title=title, source=Conversation.Source.API
    )
    return 201, _out(conversation)


@router.get(
    "/conversations/{conversation_id}",
    response={200: ConversationOut, 304: None, **errors(404)},
    auth=scope("read"),
)
def conversation_read(request: HttpRequest, response: HttpResponse, conversation_id: int) -> Any:
    """One conversation (yours; anyone's for an auditor, and that read is audited). Sends an
    ETag: with ``If-None-Match`` an unchanged conversation answers 304."""
    conversation = _readable(request, conversation_id)
    out = _out(conversation)
    if not_modified(request, response, etag_of(out.model_dump(mode="json"))):
        return 304, None
    return out


@router.patch(
    "/conversations/{conversation_id}",
    response={200: ConversationOut, **errors(404)},
    auth=scope("write"),
)
def conversation_change(request: HttpRequest, conversation_id: int, body: ConversationPatch) -> Any:
    """Rename, pin or archive one of your conversations."""
    conversation = _owned(request, conversation_id)
    if body.title is not None:
        conversation.title = body.title.strip() or conversation.title
        conversation.save(update_fields=["title"])
    if body.pinned is not None:
        conversation_services.conversation_pin(conversation, pinned=body.pinned)
    if body.archived is not None:
        conversation_services.conversation_archive(conversation, archived=body.archived)
    conversation.refresh_from_db()
    return _out(conversation)


@router.delete(
    "/conversations/{conversation_id}", response={204: None, **errors(404)}, auth=scope("write")
)
def conversation_delete(request: HttpRequest, conversation_id: int) -> Any:
    """Delete one of your conversations and its tool calls (the audit log keeps its records).
    A turn still running is stopped first."""
    conversation = _owned(request, conversation_id)
    for turn in conversation.turns.filter(status=Turn.Status.RUNNING):
        turn_stop(turn=turn)
    conversation.delete()
    return 204, None


@router.get(
    "/conversations/{conversation_id}/messages",
    response={200: MessagePage, **errors(400, 404)},
    auth=scope("read"),
)
def message_list(
    request: HttpRequest,
    conversation_id: int,
    cursor: str | None = None,
    limit: int = Query(50, ge=1, le=200),
) -> Any:
    """The conversation's messages on the branch it shows, oldest first, with the ids and
    statuses of their tool calls (``GET /api/tool-calls/{id}`` for the rest)."""
    conversation = _readable(request, conversation_id)
    after = 0
    if cursor:
        if not cursor.isascii() or not cursor.isdigit() or len(cursor) > 18:
            raise ApiError(400, "the cursor is not one this API gave", code="invalid_cursor")
        after = int(cursor)
    shown = [m for m in selectors.conversation_messages(conversation) if m.pk > after]
    page = shown[:limit]
    items = [
        MessageOut(
            id=m.pk,
            turn_id=m.turn_id,
            role=m.role,
            origin=m.origin,
            state=m.state,
            content=m.content,
            created_at=m.created_at,
            usage=m.usage or {},
            tool_calls=[
                ToolCallBrief(id=c.pk, tool=c.tool, status=c.status) for c in m.tool_calls.all()
            ],
        )
        for m in page
    ]
    following = str(page[-1].pk) if len(shown) > limit else None
    return {"items": items, "next_cursor": following}


EXPORT_RESPONSES = {
    200: {
        "description": "The conversation as a file",
        "content": {
            "application/json": {"schema": {"type": "object"}},
            "text/markdown": {"schema": {"type": "string"}},
        },
    }
}


@router.get(
    "/conversations/{conversation_id}/export",
    response={**errors(404)},
    auth=scope("read"),
    openapi_extra={"responses": EXPORT_RESPONSES},
)
def conversation_export(
    request: HttpRequest,
    conversation_id: int,
    format: str = Query("json", pattern="^(json|markdown)$"),  # noqa: A002
) -> HttpResponse:
    """The conversation as the page exports it: JSON (messages with their tool calls, which
    ``Import`` takes back) or Markdown."""
    conversation = _readable(request, conversation_id)
    if format == "json":
        body, kind, extension = transfer.export_json(conversation), "application/json", "json"
    else:
        body, kind, extension = transfer.export_markdown(conversation), "text/markdown", "md"
    response = HttpResponse(body, content_type=f"{kind}; charset=utf-8")
    stem = slugify(conversation.title)[:60] or "conversation"
    response["Content-Disposition"] = f'attachment; filename="{stem}-{conversation.pk}.{extension}"'
    return response


@router.post(
    "/conversations/{conversation_id}/messages",
    response={202: SentOut, 200: SentOut, **errors(400, 404, 409)},
    auth=scope("chat"),
)
def message_send(request: HttpRequest, conversation_id: int, body: MessageIn) -> Any:
    """Send a message to one of your conversations: it starts a turn (source "api") under
    your grants, allow-lists, limits and approvals, and answers at once with it (202). Follow
    it with ``GET /api/turns/{id}/events``. A command that answers at once (``/help``) gives
    200 with its ``notice`` and no turn. 409: a turn of this conversation is still running."""
    conversation = _owned(request, conversation_id)
    token = token_of(request)
    try:
        turn = turn_start(
            conversation=conversation,
            user_id=conversation.owner_id,
            text=body.text,
            source=Turn.Source.API,
            scope=api_token_turn_scope(token),
        )
    except TurnError as exc:
        busy = "still working" in str(exc)
        raise ApiError(
            409 if busy else 400,
            str(exc),
            code="conversation_busy" if busy else "invalid_message",
            param=None if busy else "text",
        ) from None
    if turn is None:
        return 200, {"turn": None, "notice": v1.answered_at_once(conversation.pk)}
    return 202, {"turn": _turn_out(turn), "notice": ""}


def _turn_readable(request: HttpRequest, turn_id: int) -> Turn:
    turn = Turn.objects.filter(pk=turn_id).first()
    if turn is None:
        raise ApiError(404, "turn not found", code="not_found")
    try:
        _readable(request, turn.conversation_id)
    except ApiError:
        raise ApiError(404, "turn not found", code="not_found") from None
    return turn


@router.get("/turns/{turn_id}", response={200: TurnOut, **errors(404)}, auth=scope("read"))
def turn_read(request: HttpRequest, turn_id: int) -> Any:
    return _turn_out(_turn_readable(request, turn_id))


@router.post("/turns/{turn_id}/stop", response={200: TurnOut, **errors(404)}, auth=scope("chat"))
def turn_stop_view(request: HttpRequest, turn_id: int) -> Any:
    """Stop one of your turns as the Stop button does: the model stream ends and its tool
    calls are cancelled."""
    turn = Turn.objects.filter(pk=turn_id, conversation__owner=user_of(request)).first()
    if turn is None:
        raise ApiError(404, "turn not found", code="not_found")
    turn_stop(turn=turn)
    turn.refresh_from_db()
    return _turn_out(turn)


EVENTS_RESPONSES = {
    200: {
        "description": "Server-sent events: `text` (the reply as it is written: "
        '{"message_id", "text"}), `tool_call` (a call changed: {"id", "tool", "status", '
        '"arguments", "error"?}), and `end` ({"status", "error", "usage"}); comment lines '
        "keep the stream alive while nothing happens.",
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    }
}


def _sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n"


@router.get(
    "/turns/{turn_id}/events",
    response={**errors(404)},
    auth=scope("read"),
    openapi_extra={"responses": EVENTS_RESPONSES},
)
async def turn_follow(request: HttpRequest, turn_id: int) -> StreamingHttpResponse:
    """Follow a turn as it runs (a finished one answers with its `end` at once). Leaving
    does not stop the turn: ``POST /api/turns/{id}/stop`` does."""
    from django.conf import settings

    turn = await db(_turn_readable)(request, turn_id)
    events = turn_listen(turn.conversation_id)
    await events.__aenter__()  # before reading its state: nothing it publishes is missed

    async def body() -> AsyncIterator[str]:
        stitcher = TextStitcher()
        try:
            status = await db(lambda: Turn.objects.get(pk=turn_id).status)()
            if status == Turn.Status.RUNNING:
                keepalive = settings.API_STREAM_KEEPALIVE_SECONDS
                async for event in turn_events(events, turn_id, keepalive=keepalive):
                    if isinstance(event, KeepAlive):
                        yield ": keep-alive\n\n"
                    elif isinstance(event, TextPiece):
                        text = stitcher.add(event)
                        if text:
                            yield _sse("text", {"message_id": event.message_id, "text": text})
                    elif isinstance(event, CallChanged):
                        info = await db(v1.call_info_of)(event.call_id)
                        if info is not None:
                            yield _sse("tool_call", info)
            outcome = await db(v1.turn_outcome)(turn_id)
            for role, message_id, text in outcome.parts:
                missing = stitcher.missing(message_id, text) if role == "assistant" else ""
                if missing:
                    yield _sse("text", {"message_id": message_id, "text": missing})
            end = {"status": outcome.status, "error": outcome.error, "usage": outcome.usage}
            yield _sse("end", end)
        finally:
            await events.__aexit__(None, None, None)

    response = StreamingHttpResponse(body(), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response
