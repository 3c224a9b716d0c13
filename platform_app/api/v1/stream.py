"""A ``/v1`` reply while its turn runs: streamed as OpenAI ``chat.completion.chunk`` events,
or written whole when the turn ends.

The content is what a plain OpenAI client can show: the model's text of every round and,
unless the token or the request turned it off, a markdown line per tool call (``trace_line``).
The same calls, and the turn's ids, are in a ``controlcenter`` field that standard clients
ignore. A call that waits for an approver holds the stream, which sends an SSE comment
(``: keep-alive``) every ``API_STREAM_KEEPALIVE_SECONDS`` until it is decided or expires.
A client that goes away before the end stops the turn, as Stop does (a non-streaming one after
``V1_DISCONNECT_GRACE_SECONDS``, so that its retry can join the turn: ``retries``).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from chat_app.models import Message, Turn
from infra.events import GroupListener
from infra.websocket import db
from platform_app.api.errors import error_body
from platform_app.api.follow import (
    CallChanged,
    KeepAlive,
    TextPiece,
    TextStitcher,
    turn_events,
)
from platform_app.api.v1.services import (
    Outcome,
    Writer,
    answered_at_once,
    call_info_of,
    compose,
    trace_line,
    turn_outcome,
    turn_stop_for_client,
)
from tools_app.models import ToolCall

logger = logging.getLogger(__name__)

FINISH: dict[str, str] = {Turn.Status.LIMITED.value: "length"}
# The statuses a trace line is written for: waiting for someone, and the end.
TRACED = {ToolCall.Status.AWAITING_APPROVAL, *ToolCall.TERMINAL}


@dataclass
class Reply:
    """Who the reply is for and what it is about."""

    id: str
    created: int
    model: str
    conversation_id: int
    turn_id: int | None
    trace: bool

    def ids(self) -> dict[str, Any]:
        return {"conversation_id": self.conversation_id, "turn_id": self.turn_id}


def sse(data: dict[str, Any]) -> str:
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"


def chunk(
    reply: Reply,
    delta: dict[str, Any],
    *,
    finish: str | None = None,
    extra: dict[str, Any] | None = None,
) -> str:
    body: dict[str, Any] = {
        "id": reply.id,
        "object": "chat.completion.chunk",
        "created": reply.created,
        "model": reply.model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if extra is not None:
        body["controlcenter"] = extra
    return sse(body)


def turn_failed(outcome: Outcome) -> dict[str, Any]:
    message = outcome.error or "the turn failed"
    return error_body(502, f"the turn failed: {message}", code="turn_failed")


_closing: set[asyncio.Task[None]] = set()


def _close(events: GroupListener, reply: Reply, finished: bool) -> None:
    """Leave the events' group and, when the reply did not reach its end (the client left),
    stop the turn. In a task of its own: the stream's task may be cancelled, and the web
    toolkit cancels every further wait inside it, so nothing there could finish this."""

    async def close() -> None:
        await events.__aexit__(None, None, None)
        if not finished and reply.turn_id is not None:
            try:
                await db(turn_stop_for_client)(reply.turn_id)
            except Exception:
                logger.exception("turn %s: could not stop it after its client left", reply.turn_id)

    task = asyncio.get_running_loop().create_task(close())
    _closing.add(task)
    task.add_done_callback(_closing.discard)


async def stream_reply(
    events: GroupListener, reply: Reply, *, include_usage: bool, keepalive: float
) -> AsyncIterator[str]:
    """The SSE body. ``events`` was entered before the turn started; this leaves it."""
    writer, stitcher = Writer(), TextStitcher()
    reported: dict[int, str] = {}
    finished = False
    try:
        yield chunk(reply, {"role": "assistant", "content": ""}, extra=reply.ids())
        if reply.turn_id is None:
            text = await db(answered_at_once)(reply.conversation_id)
            yield chunk(reply, {"content": text})
            finished = True
            yield chunk(reply, {}, finish="stop", extra={**reply.ids(), "status": "succeeded"})
            yield "data: [DONE]\n\n"
            return
        async for event in turn_events(events, reply.turn_id, keepalive=keepalive):
            if isinstance(event, KeepAlive):
                yield ": keep-alive\n\n"
            elif isinstance(event, TextPiece):
                out = writer.text(event.message_id, stitcher.add(event))
                if out:
                    yield chunk(reply, {"content": out})
            elif isinstance(event, CallChanged):
                info = await db(call_info_of)(event.call_id)
                if info is None or reported.get(info["id"]) == info["status"]:
                    continue
                reported[info["id"]] = info["status"]
                line = trace_line(info) if reply.trace and info["status"] in TRACED else ""
                delta = {"content": writer.block(line)} if line else {}
                yield chunk(reply, delta, extra={"tool_call": info})
        outcome = await db(turn_outcome)(reply.turn_id)
        finished = True
        tail = ""
        for role, message_id, text in outcome.parts:
            if role == Message.Role.NOTICE:
                tail += writer.block(text.strip())
            else:
                tail += writer.text(message_id, stitcher.missing(message_id, text))
        for info in outcome.all_calls:  # an event lost on the way: the call's end all the same
            if reported.get(info["id"]) != info["status"]:
                reported[info["id"]] = info["status"]
                tail += writer.block(trace_line(info)) if reply.trace else ""
        if tail:
            yield chunk(reply, {"content": tail})
        if outcome.status == Turn.Status.FAILED:
            yield sse(turn_failed(outcome))
            return
        extra = {**reply.ids(), "status": outcome.status, "tool_calls": outcome.all_calls}
        yield chunk(reply, {}, finish=FINISH.get(outcome.status, "stop"), extra=extra)
        if include_usage:
            yield sse(
                {
                    "id": reply.id,
                    "object": "chat.completion.chunk",
                    "created": reply.created,
                    "model": reply.model,
                    "choices": [],
                    "usage": outcome.usage,
                }
            )
        yield "data: [DONE]\n\n"
    finally:
        _close(events, reply, finished)


async def whole_reply(
    events: GroupListener, reply: Reply, *, keepalive: float, stop_on_leave: bool = True
) -> Any:
    """The ``chat.completion`` object once the turn ended, or the OpenAI error body (a
    failed turn: 502). ``events`` was entered before the turn started; this leaves it.
    Cancelled (the client left), it stops the turn unless ``stop_on_leave`` is false (the
    caller gives a retry time to join it: ``retries.request_left``)."""
    finished = False
    try:
        if reply.turn_id is None:
            content = await db(answered_at_once)(reply.conversation_id)
            outcome = Outcome(status=Turn.Status.SUCCEEDED, error="")
        else:
            async for _event in turn_events(events, reply.turn_id, keepalive=keepalive):
                pass  # the outcome is read whole at the end
            outcome = await db(turn_outcome)(reply.turn_id)
            content = compose(outcome, trace=reply.trace)
        finished = True
    finally:
        _close(events, reply, finished or not stop_on_leave)
    if outcome.status == Turn.Status.FAILED:
        return turn_failed(outcome)
    usage = outcome.usage or {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    return {
        "id": reply.id,
        "object": "chat.completion",
        "created": reply.created,
        "model": reply.model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": FINISH.get(outcome.status, "stop"),
            }
        ],
        "usage": usage,
        "controlcenter": {
            **reply.ids(),
            "status": outcome.status,
            "tool_calls": outcome.all_calls,
        },
    }
