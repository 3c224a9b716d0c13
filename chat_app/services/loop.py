"""One model round of a chat turn: stream the reply, then bind and dispatch its tool calls.

Runs in the ``agent_round`` Celery task. The stream is consumed in asyncio so Stop can cancel
it mid-token: a watcher polls the turn's ``cancel_requested`` flag and cancels the stream task,
which closes the HTTP response. Text goes to the browser in small batches and to the database
twice a second, so a reload mid-turn shows what was said so far and keeps streaming.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import sync_to_async
from django.db import close_old_connections, transaction
from django.db.models import F

from chat_app.events import message_publish, token_publish
from chat_app.fallback import fallback_prompt_block, parse_tool_calls
from chat_app.models import Agent, Message, Provider, Turn
from chat_app.providers import (
    ChatMessage,
    LLMProvider,
    ModelReply,
    ProviderError,
    TextDelta,
    ToolsNotSupported,
    ToolSpec,
)
from chat_app.services.agents import agent_for_conversation
from chat_app.services.history import build_history
from chat_app.services.providers import (
    provider_client,
    provider_for_conversation,
    provider_remember_no_tools,
)
from chat_app.services.turns import turn_advance, turn_finish
from tools_app import selectors
from tools_app.platform.prompt import platform_prompt
from tools_app.registry import BaseTool
from tools_app.runtime import BindContext
from tools_app.services.binding import (
    REASONING_FIELD,
    CallLimits,
    CallRequest,
    toolcall_bind,
    toolcall_dispatch,
)

logger = logging.getLogger(__name__)

TOKEN_FLUSH_SECONDS = 0.03
PERSIST_SECONDS = 0.5
CANCEL_POLL_SECONDS = 0.2

DEFAULT_SYSTEM_PROMPT = (
    "You are the assistant of Control Center. You can call tools to act for the user; every "
    "call is shown to the user and may be refused by policy. When a tool returns "
    '{"success": false, "error": ...}, read the error and correct the call or explain. '
    "Be concise."
)

NO_PROVIDER = (
    "No LLM provider is configured, so I cannot answer. An admin can add one under "
    "**Admin → Providers** (`/admin/chat_app/provider/add/`) or start the app with "
    "`LLM_PROVIDER`, `LLM_BASE_URL`, `LLM_API_KEY` and `LLM_MODEL` set. "
    "Slash commands work without one: type `/help`."
)


class _Cancelled(Exception):
    pass


@dataclass
class _Stream:
    turn_id: int
    conversation_id: int
    message_id: int
    text: str = ""
    sent: int = 0
    persisted: int = 0
    pending: list[str] = field(default_factory=list)


def tool_specs(tools: list[type[BaseTool]], *, strict: bool) -> list[ToolSpec]:
    with_reasoning = selectors.tools_with_reasoning()
    specs = []
    for tool in tools:
        schema = tool.openai_schema(strict=strict)["function"]
        if tool.tool_name in with_reasoning:
            schema["parameters"] = with_reasoning_field(schema["parameters"])
        specs.append(
            ToolSpec(
                name=tool.tool_name,
                description=schema["description"],
                parameters=schema["parameters"],
                strict=schema.get("strict", False),
            )
        )
    return specs


def with_reasoning_field(parameters: dict[str, Any]) -> dict[str, Any]:
    """Ask the model to say why it calls the tool; the card shows it (_reasoningForCall)."""
    out = dict(parameters)
    out["properties"] = {
        REASONING_FIELD: {
            "type": "string",
            "description": "One sentence: why you call this tool now. Shown to the user.",
        },
        **parameters.get("properties", {}),
    }
    out["required"] = [REASONING_FIELD, *parameters.get("required", [])]
    return out


def agent_round(turn_id: int) -> None:
    claimed = Turn.objects.filter(
        pk=turn_id, status=Turn.Status.RUNNING, phase=Turn.Phase.MODEL
    ).update(phase=Turn.Phase.STREAMING)
    if not claimed:
        return
    turn = Turn.objects.select_related("conversation").get(pk=turn_id)
    if turn.cancel_requested:
        turn_finish(turn, status=Turn.Status.CANCELLED)
        return
    if turn.round >= turn.max_rounds:
        turn_finish(
            turn,
            status=Turn.Status.LIMITED,
            error=f"round limit of {turn.max_rounds} reached",
            notice=(
                f"Stopped after {turn.max_rounds} rounds of tool calls (the round limit). "
                "Send a message to let the agent continue."
            ),
        )
        return
    agent = agent_for_conversation(turn.conversation)
    provider = agent.provider or provider_for_conversation(turn.conversation)
    if provider is None:
        turn_finish(turn, status=Turn.Status.FAILED, error="no LLM provider", notice=NO_PROVIDER)
        return
    _run_model(turn, provider, agent)


def _run_model(turn: Turn, provider: Provider, agent: Agent) -> None:
    tools = selectors.enabled_tools(agent.allowed_tools())
    native = provider.uses_native_tools()
    message = Message.objects.create(
        conversation_id=turn.conversation_id,
        turn=turn,
        role=Message.Role.ASSISTANT,
        state=Message.State.STREAMING,
        fallback=not native,
    )
    message_publish(message)
    client = provider_client(provider, model=agent.model)
    system = agent.system_prompt.strip() or DEFAULT_SYSTEM_PROMPT
    # Platform tools (issue 10): core memory and the skill index, in every system prompt.
    system += platform_prompt(
        user_id=turn.user_id,
        conversation_id=turn.conversation_id,
        offered={t.tool_name for t in tools},
    )
    images = provider.image_input and selectors.images_to_model_enabled()
    try:
        try:
            reply = _stream_reply(
                turn, message, client, tools, system=system, native=native, images=images
            )
        except ToolsNotSupported:
            if provider.native_tools != Provider.NativeTools.AUTO:
                raise
            logger.info("provider %s rejects native tools; switching to text fallback", provider)
            provider_remember_no_tools(provider)
            native = False
            Message.objects.filter(pk=message.pk).update(fallback=True)
            message.fallback = True
            reply = _stream_reply(
                turn, message, client, tools, system=system, native=False, images=images
            )
    except _Cancelled:
        _close_message(message, state=Message.State.CANCELLED)
        turn_finish(turn, status=Turn.Status.CANCELLED)
        return
    except ProviderError as exc:
        _close_message(message, state=Message.State.ERROR)
        turn_finish(turn, status=Turn.Status.FAILED, error=exc.message, notice=f"⚠ {exc.message}")
        return
    message.content = reply.text
    _close_message(message, state=Message.State.COMPLETE)
    requests = _tool_requests(reply, native=native)
    if not requests:
        turn_finish(turn, status=Turn.Status.SUCCEEDED)
        return
    _bind_and_dispatch(turn, message, requests, tools, agent)


def _tool_requests(reply: ModelReply, *, native: bool) -> list[CallRequest]:
    if native:
        return [
            CallRequest(tool=c.name, arguments=c.arguments, call_id=c.id, index=i)
            for i, c in enumerate(reply.tool_calls)
        ]
    return [
        CallRequest(
            tool=p.name,
            arguments=p.arguments if p.arguments is not None else p.raw,
            call_id=f"text_{i}",
            index=i,
            parse_error=p.error,
        )
        for i, p in enumerate(parse_tool_calls(reply.text))
    ]


def _bind_and_dispatch(
    turn: Turn,
    message: Message,
    requests: list[CallRequest],
    tools: list[type[BaseTool]],
    agent: Agent,
) -> None:
    ctx = BindContext(user_id=turn.user_id, conversation_id=turn.conversation_id, source="chat")
    offered = [t.tool_name for t in tools]
    limits = CallLimits(
        per_turn=agent.max_calls_per_turn, per_conversation=agent.max_calls_per_conversation
    )
    with transaction.atomic():
        Turn.objects.filter(pk=turn.pk).update(phase=Turn.Phase.TOOLS, round=F("round") + 1)
        calls = []
        for request in requests:
            call = toolcall_bind(
                request=request,
                ctx=ctx,
                turn_id=turn.pk,
                message_id=message.pk,
                allowed_tools=offered,
                limits=limits,
            )
            if call.status == call.Status.QUEUED:
                toolcall_dispatch(call)
            calls.append(call)
    from tools_app.events import toolcall_publish

    for call in calls:
        toolcall_publish(call, wait=False)  # in order with what follows; the call goes on
    turn_advance(turn.pk)  # every call may already be finished (all refused)


def _close_message(message: Message, *, state: str) -> None:
    Message.objects.filter(pk=message.pk).update(
        content=message.content, state=state, version=F("version") + 1
    )
    message.refresh_from_db()
    message_publish(message)


def _stream_reply(
    turn: Turn,
    message: Message,
    client: LLMProvider,
    tools: list[type[BaseTool]],
    *,
    system: str,
    native: bool,
    images: bool = False,
) -> ModelReply:
    specs = tool_specs(tools, strict=True) if tools else []
    if not native and tools:
        system = f"{system}\n\n{fallback_prompt_block(tool_specs(tools, strict=False))}"
    history = build_history(
        turn.conversation,
        native=native,
        exclude_message_id=message.pk,
        images=images,
    )
    state = _Stream(turn_id=turn.pk, conversation_id=turn.conversation_id, message_id=message.pk)
    message.content = ""
    try:
        reply = asyncio.run(
            _consume(
                client,
                state,
                system=system,
                history=history,
                tools=specs if native and specs else None,
            )
        )
    finally:
        close_old_connections()
    message.content = state.text
    return reply


async def _consume(
    client: LLMProvider,
    state: _Stream,
    *,
    system: str,
    history: list[ChatMessage],
    tools: list[ToolSpec] | None,
) -> ModelReply:
    async def read() -> ModelReply:
        async for event in client.stream(system=system, messages=history, tools=tools):
            if isinstance(event, TextDelta):
                state.text += event.text
                state.pending.append(event.text)
            elif isinstance(event, ModelReply):
                return event
        raise ProviderError("the model's stream ended without a reply")

    stopped = asyncio.Event()

    async def flush_tokens() -> None:
        # Never cancelled mid-publish (a cancelled group_send loses its message): it is
        # asked to stop and does one last flush.
        last_persist = time.monotonic()
        while not stopped.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopped.wait(), TOKEN_FLUSH_SECONDS)
            await _flush(state)
            if time.monotonic() - last_persist >= PERSIST_SECONDS and state.persisted < len(
                state.text
            ):
                last_persist = time.monotonic()
                await _persist(state)

    async def watch_cancel() -> None:
        while not await _cancel_requested(state.turn_id):
            await asyncio.sleep(CANCEL_POLL_SECONDS)

    reader = asyncio.create_task(read())
    flusher = asyncio.create_task(flush_tokens())
    watcher = asyncio.create_task(watch_cancel())
    try:
        done, _ = await asyncio.wait({reader, watcher}, return_when=asyncio.FIRST_COMPLETED)
        if watcher in done and reader not in done:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
            raise _Cancelled()
        return reader.result()
    finally:
        watcher.cancel()
        stopped.set()
        await asyncio.gather(flusher, watcher, return_exceptions=True)


async def _flush(state: _Stream) -> None:
    # Only the flusher task calls this, so chunks go out in order with exact offsets.
    if not state.pending:
        return
    text = "".join(state.pending)
    state.pending.clear()

    offset = state.sent
    state.sent += len(text)
    await token_publish(
        conversation_id=state.conversation_id, message_id=state.message_id, offset=offset, text=text
    )


@sync_to_async(thread_sensitive=False)
def _persist(state: _Stream) -> None:
    Message.objects.filter(pk=state.message_id).update(content=state.text)
    state.persisted = len(state.text)
    close_old_connections()


@sync_to_async(thread_sensitive=False)
def _cancel_requested(turn_id: int) -> bool:
    try:
        return Turn.objects.filter(pk=turn_id, cancel_requested=True).exists()
    finally:
        close_old_connections()
