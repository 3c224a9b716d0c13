"""One model round of a chat turn: stream the reply, then bind and dispatch its tool calls.

A round is a coroutine on the agent runner's event loop (``chat_app.runner``), so a reply that
takes thirty seconds to stream costs a coroutine, not a worker slot: one runner streams
hundreds of rounds at once. Database work is short and runs on the runner's small thread pool
(``RoundSupervisor.db``); only the model I/O stays on the loop. The round's three steps:

1. ``round_prepare`` (a thread): claim the turn (``model → streaming``, a conditional UPDATE, so
   a round queued twice runs once), create the streaming message, build the request.
2. ``_stream_reply`` (the loop): stream the reply with retries on transient failures; text goes
   to the browser in small batches (``LiveRound``). Stop cancels this task (the supervisor polls
   the turn's flag for every live round in one query).
3. ``round_complete`` (a thread): store the reply and bind and dispatch its tool calls, or
   finish the turn — cancelled, failed (with the provider's words) or succeeded.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone, translation
from django.utils.translation import gettext, gettext_noop

from chat_app.agent_kinds import AgentKind, RoundOffer, kind_for
from chat_app.events import message_publish
from chat_app.fallback import data_text, fallback_prompt_block, parse_tool_calls, repeats_data
from chat_app.fallback_grammar import fallback_grammar
from chat_app.models import Agent, Message, Provider, Turn
from chat_app.providers import (
    ChatMessage,
    ClientCache,
    LLMProvider,
    ModelReply,
    ProviderError,
    TextDelta,
    ToolCallStarted,
    ToolsNotSupported,
    ToolSpec,
)
from chat_app.services.agents import agent_for_conversation
from chat_app.services.history import build_history
from chat_app.services.live import LiveRound, RoundSupervisor, Stopped
from chat_app.services.prompt_blocks import prompt_blocks
from chat_app.services.providers import (
    conversation_model_in_force,
    provider_client,
    provider_for_conversation,
    provider_remember_no_tools,
)
from chat_app.services.retry import RetryNotice, RetryPolicy, call_with_retries
from chat_app.services.tool_offer import round_shown, turn_offer
from chat_app.services.tool_specs import tool_specs
from chat_app.services.turns import conversation_language, turn_advance, turn_finish
from chat_app.services.usage import round_gate, round_record
from infra import tracing
from infra.prepared import Prepared
from tools_app import selectors
from tools_app.events import toolcall_publish
from tools_app.models import ToolCall
from tools_app.registry import BaseTool
from tools_app.runtime import BindContext
from tools_app.services.binding import (
    CallLimits,
    CallRequest,
    toolcall_check,
    toolcall_dispatch,
    toolcall_store,
)
from tools_app.untrusted import UNTRUSTED_RULE

logger = logging.getLogger(__name__)

DEFAULT_SYSTEM_PROMPT = (
    "You are the assistant of Control Center. You can call tools to act for the user; every "
    "call is shown to the user and may be refused by policy. When a tool returns "
    '{"success": false, "error": ...}, read the error and correct the call or explain. '
    "Give the reason for each tool call in one short sentence: in its _reasoningForCall "
    "argument when the tool has one (the user sees it on the call), else just before the call. "
    "Be concise."
)

NO_PROVIDER = gettext_noop(
    "No LLM provider is configured, so I cannot answer. An admin can add one under "
    "**Agents → Providers** (`/agents/providers/new/`) or start the app with "
    "`LLM_PROVIDER`, `LLM_BASE_URL`, `LLM_API_KEY` and `LLM_MODEL` set. "
    "Slash commands work without one: type `/help`."
)

RUNNER_SHUTDOWN = gettext_noop(
    "The agent runner was shut down while it was writing this reply, so the turn ended. "
    "Send your message again to continue."
)


@dataclass
class RoundPlan:
    """Everything the loop needs to stream one reply and act on it."""

    turn_id: int
    conversation_id: int
    user_id: int | None
    message_id: int
    provider: Provider
    agent: Agent
    client: LLMProvider
    kind: AgentKind  # the profile's kind: what each round offers, what a call does to the turn
    offer: RoundOffer  # what this round offers, and why not the rest
    tools: list[type[BaseTool]]  # the tools whose schemas the request carries
    # The tools the round's calls may name: the offer's, loaded or not (tool search shows
    # fewer; binding is the authority over what runs, not the list the model saw).
    callable: list[str]
    native: bool
    # The tool list the turn's calls bind within: the agent's, narrowed by what started the
    # turn (Turn.tool_scope). None: every enabled tool.
    scope: list[str] | None
    policy: RetryPolicy
    # What the turn's calls are audited as: "api" for a turn an API client started, "chat"
    # for the rest (the chat page, a schedule, a subagent).
    call_source: str = ToolCall.Source.CHAT
    system: str = ""
    history: list[ChatMessage] | None = None
    specs: list[ToolSpec] | None = None
    # Text fallback with Provider.fallback_grammar: the GBNF grammar the reply must follow.
    grammar: str | None = None
    # The streaming message as this round last wrote it: every write to it while it streams is
    # this round's own (the reaper and a crash close it), so it is kept here, not read back.
    message: Message | None = None
    # The turn as this round claimed it. While the round streams only the reaper ends the
    # turn, and it closes the streaming message first: whether the turn still runs when the
    # reply ends is told by the message's close, not by reading the turn again.
    turn: Turn | None = None
    model: str = ""  # the model name asked for (the provider's when empty)
    # For the usage record and the trace: what started the turn, whose it is, its span; when
    # the reply's stream started, its first token arrived and it ended (time.monotonic()).
    source: str = Turn.Source.CHAT
    username: str = ""
    trace: str = ""
    round_trace: str = ""
    stream_started: float = 0.0
    first_token_at: float | None = None
    stream_ended: float = 0.0
    trace_attributes: dict[str, Any] = field(default_factory=dict)
    # The conversation's language (its notices) and the language of the tool descriptions the
    # model reads (the conversation's, unless the agent profile fixes one).
    language: str = ""
    tool_language: str = ""


# --- 1. prepare (a database thread) ------------------------------------------------------


# The statements every round runs, compiled once per process (infra.prepared).
_CLAIM = Prepared(
    lambda pk, runner, now: (
        Turn.objects.filter(pk=pk, status=Turn.Status.RUNNING, phase=Turn.Phase.MODEL),
        {"phase": Turn.Phase.STREAMING, "runner": runner, "heartbeat_at": now},
    ),
    pk=int,
    runner=str,
    now=dt.datetime,
)
_CLAIMED = Prepared(
    lambda pk: Turn.objects.select_related("conversation", "user").filter(pk=pk).order_by(),
    pk=int,
)
_CLOSE = Prepared(
    lambda pk, content, state, usage: (
        Message.objects.filter(pk=pk, state=Message.State.STREAMING),
        {
            "content": content,
            "state": state,
            "note": "",
            "version": F("version") + 1,
            "usage": usage,
        },
    ),
    pk=int,
    content=str,
    state=str,
    usage=dict,
)
_TO_TOOLS = Prepared(
    lambda pk: (
        Turn.objects.filter(
            pk=pk,
            status=Turn.Status.RUNNING,
            phase=Turn.Phase.STREAMING,
            cancel_requested=False,
        ),
        {"phase": Turn.Phase.TOOLS, "round": F("round") + 1},
    ),
    pk=int,
)


def round_prepare(
    turn_id: int, *, runner: str, clients: ClientCache | None = None
) -> RoundPlan | None:
    """Claim the turn and build the request; None when there is nothing to stream."""
    # The conversation's language is switched on once the turn is read (_round_prepare);
    # leaving this block switches it off again.
    with selectors.config_pinned(), translation.override(settings.LANGUAGE_CODE):
        return _round_prepare(turn_id, runner=runner, clients=clients)


def _round_prepare(turn_id: int, *, runner: str, clients: ClientCache | None) -> RoundPlan | None:
    claimed = _CLAIM.update(pk=turn_id, runner=runner, now=timezone.now())
    if not claimed:  # finished, stopped, or already taken by another runner
        return None
    turn = _CLAIMED.one(pk=turn_id)
    if turn is None:
        raise Turn.DoesNotExist(f"turn {turn_id} is gone")
    language = conversation_language(turn.conversation)
    translation.activate(language)  # its notices are written in it
    if turn.cancel_requested:
        turn_finish(turn, status=Turn.Status.CANCELLED)
        return None
    if turn.round >= turn.max_rounds:
        turn_finish(
            turn,
            status=Turn.Status.LIMITED,
            error=f"round limit of {turn.max_rounds} reached",
            notice=gettext(
                "Stopped after %(rounds)s rounds of tool calls (the round limit). "
                "Send a message to let the agent continue."
            )
            % {"rounds": turn.max_rounds},
        )
        return None
    refusal = round_gate(turn)  # quotas (the platform's): the same for every way in
    if refusal is not None:
        turn_finish(turn, status=Turn.Status.FAILED, error=refusal, notice=f"⚠ {refusal}")
        return None
    agent = agent_for_conversation(turn.conversation)
    provider = agent.provider or provider_for_conversation(turn.conversation)
    # turn.model: a schedule's or a subagent's own model, for this turn only; otherwise the
    # chat's model switcher, then the agent's.
    model = turn.model or agent.model
    picked = None if turn.model else conversation_model_in_force(turn.conversation)
    if picked is not None:
        provider, model = picked
    if provider is None:
        turn_finish(
            turn, status=Turn.Status.FAILED, error="no LLM provider", notice=gettext(NO_PROVIDER)
        )
        return None
    native = provider.uses_native_tools()
    message = Message(
        conversation_id=turn.conversation_id,
        turn=turn,
        role=Message.Role.ASSISTANT,
        state=Message.State.STREAMING,
        fallback=not native,
    )
    message.save()
    # Not waiting for it: the model's request goes out now; its tokens queue behind it.
    message_publish(message, calls=[], wait=False)
    kind = kind_for(agent)
    offer, scope = turn_offer(turn, agent, kind)
    tool_language = agent.tool_language or language
    # A turn's first round has no calls yet: nothing tool_search loaded to look up.
    searched = turn.pk if turn.round else None
    shown = round_shown(offer, agent, turn_id=searched, language=tool_language)
    plan = RoundPlan(
        turn_id=turn.pk,
        conversation_id=turn.conversation_id,
        user_id=turn.user_id,
        message_id=message.pk,
        provider=provider,
        agent=agent,
        client=provider_client(
            provider,
            model=model,
            clients=clients,
            shard=turn.conversation_id,
        ),
        kind=kind,
        offer=offer,
        tools=shown.tools,
        callable=[t.tool_name for t in offer.tools],
        native=native,
        scope=scope,
        policy=RetryPolicy(
            max_retries=provider.max_retries, backoff_seconds=provider.retry_backoff_seconds
        ),
        message=message,
        turn=turn,
        model=model or provider.model,
        source=turn.source,
        username=turn.user.get_username() if turn.user else "",
        trace=turn.trace_context,
        call_source=call_source_of(turn),
        language=language,
        tool_language=tool_language,
    )
    _build_request(plan, turn)
    return plan


def call_source_of(turn: Turn) -> str:
    """The audit source of the calls a turn's model asks for (``ToolCall.Source``)."""
    return ToolCall.Source.API if turn.source == Turn.Source.API else ToolCall.Source.CHAT


def _build_request(plan: RoundPlan, turn: Turn) -> None:
    system = plan.agent.system_prompt.strip() or DEFAULT_SYSTEM_PROMPT
    system = f"{system}\n\n{UNTRUSTED_RULE}"
    # What the apps above add (the platform: core memory and the skill index).
    system += prompt_blocks(
        user_id=plan.user_id,
        conversation_id=plan.conversation_id,
        offered={t.tool_name for t in plan.tools},
    )
    if plan.offer.note:
        system = f"{system}\n\n{plan.offer.note}"
    plan.grammar = None
    if not plan.native and plan.tools:
        specs = tool_specs(plan.tools, strict=False, language=plan.tool_language)
        system = f"{system}\n\n{fallback_prompt_block(specs)}"
        if plan.provider.fallback_grammar and plan.provider.kind == Provider.Kind.OPENAI:
            plan.grammar = fallback_grammar(specs)
    plan.system = system
    plan.specs = (
        tool_specs(plan.tools, strict=True, language=plan.tool_language)
        if plan.native and plan.tools
        else None
    )
    images = plan.provider.image_input and selectors.images_to_model_enabled()
    plan.history = build_history(
        turn.conversation,
        native=plan.native,
        exclude_message_id=plan.message_id,
        images=images,
        upload_images=plan.provider.image_input,
    )


def round_use_fallback(plan: RoundPlan) -> None:
    """The endpoint refused native tools (``native_tools=auto``): remember it on the provider
    and rebuild this round's request in text-fallback mode."""
    logger.info("provider %s rejects native tools; switching to text fallback", plan.provider)
    provider_remember_no_tools(plan.provider)
    Message.objects.filter(pk=plan.message_id).update(fallback=True)
    if plan.message is not None:
        plan.message.fallback = True
    plan.native = False
    _build_request(plan, Turn.objects.select_related("conversation").get(pk=plan.turn_id))


def round_announce_retry(plan: RoundPlan, notice: RetryNotice) -> None:
    """Start the reply over, and say why on the message while we wait."""
    with translation.override(plan.language or settings.LANGUAGE_CODE):
        Message.objects.filter(pk=plan.message_id).update(
            content="", note=notice.text()[:500], version=F("version") + 1
        )
        plan.message = Message.objects.get(pk=plan.message_id)
        message_publish(plan.message, calls=[])


# --- 2. stream (the event loop) ------------------------------------------------------------


async def _stream_reply(
    plan: RoundPlan, live: LiveRound, supervisor: RoundSupervisor
) -> ModelReply:
    assert plan.history is not None

    # In text fallback the offer's note asks for the tool instead.
    forced = plan.offer.tool_choice if plan.native and plan.specs else None

    async def attempt(number: int) -> ModelReply:
        plan.stream_started, plan.first_token_at = time.monotonic(), None
        # Passed only when there is one: test doubles of the client need not know the option.
        extra: dict[str, Any] = {"grammar": plan.grammar} if plan.grammar else {}
        events = plan.client.stream(
            system=plan.system,
            messages=plan.history or [],
            tools=plan.specs,
            tool_choice=forced,
            **extra,
        )
        async with contextlib.aclosing(events):  # type: ignore[type-var]
            async for event in events:
                if isinstance(event, TextDelta):
                    if plan.first_token_at is None:
                        plan.first_token_at = time.monotonic()
                    live.add_text(event.text)
                elif isinstance(event, ToolCallStarted):
                    if plan.first_token_at is None:
                        plan.first_token_at = time.monotonic()
                elif isinstance(event, ModelReply):
                    return event
        raise ProviderError("the model's stream ended without a reply", retryable=True)

    async def on_retry(notice: RetryNotice) -> None:
        logger.info("turn %s: %s", plan.turn_id, notice.text())
        await live.restart()
        await supervisor.db(round_announce_retry, plan, notice)

    return await call_with_retries(attempt, policy=plan.policy, on_retry=on_retry)


async def round_run(turn_id: int, supervisor: RoundSupervisor) -> None:
    """The whole round, as the runner schedules it for one message on the ``agent`` queue."""
    taken_at = tracing.now()
    try:
        plan = await supervisor.db(
            round_prepare, turn_id, runner=supervisor.name, clients=supervisor.clients
        )
    except Exception as exc:
        logger.exception("turn %s: preparing the round failed", turn_id)
        await supervisor.db(round_crashed, turn_id, exc)
        return
    if plan is None:
        return
    span = tracing.span_start(
        "model round",
        parent=plan.trace,
        start_time=taken_at,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.system": plan.provider.kind,
            "gen_ai.request.model": plan.model,
            "cc.turn.id": turn_id,
        },
    )
    plan.round_trace = tracing.traceparent_of(span)
    try:
        await _round_stream_and_complete(plan, supervisor)
    finally:
        tracing.span_finish(span, attributes=plan.trace_attributes)


async def _round_stream_and_complete(plan: RoundPlan, supervisor: RoundSupervisor) -> None:
    turn_id = plan.turn_id
    live = supervisor.track(
        turn_id=turn_id, conversation_id=plan.conversation_id, message_id=plan.message_id
    )
    outcome: ModelReply | BaseException
    try:
        while True:
            task = live.start(_stream_reply(plan, live, supervisor))
            await asyncio.wait({task})
            if task.cancelled():
                outcome = Stopped(live.stop_reason or "cancelled")
            elif isinstance(task.exception(), ToolsNotSupported) and (
                plan.provider.native_tools == Provider.NativeTools.AUTO and plan.native
            ):
                await live.restart()
                await supervisor.db(round_use_fallback, plan)
                continue
            else:
                outcome = task.exception() or task.result()
            break
        plan.stream_ended = time.monotonic()
        await live.drain()
    finally:
        supervisor.untrack(live)
    try:
        await supervisor.db(round_complete, plan, live.text, outcome)
    except Exception as exc:
        logger.exception("turn %s: completing the round failed", turn_id)
        await supervisor.db(round_crashed, turn_id, exc)


# --- 3. complete (a database thread) ------------------------------------------------------


def round_complete(plan: RoundPlan, text: str, outcome: ModelReply | BaseException) -> None:
    with (
        selectors.config_pinned(),
        tracing.activated(plan.round_trace),
        translation.override(plan.language or settings.LANGUAGE_CODE),
    ):
        _round_complete(plan, text, outcome)


def _round_complete(plan: RoundPlan, text: str, outcome: ModelReply | BaseException) -> None:
    turn = plan.turn if plan.turn is not None else Turn.objects.get(pk=plan.turn_id)

    # The usage record: two INSERTs, each its own commit (bench/usage_record.py measured a
    # shared transaction, with the savepoint it needs, as dearer: more round trips). Written
    # even when the turn ended meanwhile: what the round cost was spent all the same.
    def record() -> dict[str, Any]:
        return round_record(plan, text, outcome)

    def close(state: str, reply: str = text, *, shown: bool = False) -> bool:
        if _close_message(plan, reply, state=state, record=record, shown=shown):
            return True
        # The reaper ended the turn meanwhile (this runner looked dead: a long pause, a lost
        # database connection), closing the reply first; what it told the person stands.
        logger.warning("turn %s ended while its reply streamed; dropping the reply", turn.pk)
        return False

    if isinstance(outcome, Stopped):
        if outcome.reason == "shutdown":
            if close(Message.State.ERROR):
                turn_finish(
                    turn,
                    status=Turn.Status.FAILED,
                    error="agent runner shut down",
                    notice=gettext(RUNNER_SHUTDOWN),
                )
        elif close(Message.State.CANCELLED):
            turn_finish(turn, status=Turn.Status.CANCELLED)
        return
    if isinstance(outcome, ProviderError):
        if close(Message.State.ERROR):
            turn_finish(
                turn,
                status=Turn.Status.FAILED,
                error=outcome.message,
                notice=f"⚠ {outcome.message}",
            )
        return
    if isinstance(outcome, BaseException):
        logger.error("turn %s: the model round crashed", plan.turn_id, exc_info=outcome)
        if close(Message.State.ERROR):
            error = f"internal error while streaming the reply: {type(outcome).__name__}: {outcome}"
            notice = gettext("internal error while streaming the reply: %(error)s") % {
                "error": f"{type(outcome).__name__}: {outcome}"
            }
            turn_finish(turn, status=Turn.Status.FAILED, error=error, notice=f"⚠ {notice}")
        return
    if not close(Message.State.COMPLETE, outcome.text, shown=True):
        return
    requests = _tool_requests(
        outcome,
        native=plan.native,
        turn_id=plan.turn_id,
        offered=plan.callable,
    )
    if not requests:
        turn_finish(turn, status=Turn.Status.SUCCEEDED)
        return
    _bind_and_dispatch(plan, requests)


def round_crashed(turn_id: int, exc: BaseException) -> None:
    """Something unexpected broke the round (a bug, the database): end the turn clearly
    rather than leave it to the reaper."""
    turn = Turn.objects.select_related("conversation").filter(pk=turn_id).first()
    if turn is None:
        return
    Message.objects.filter(turn_id=turn_id, state=Message.State.STREAMING).update(
        state=Message.State.ERROR, version=F("version") + 1
    )
    error = f"internal error in the agent runner: {type(exc).__name__}: {exc}"
    with translation.override(conversation_language(turn.conversation)):
        notice = gettext("internal error in the agent runner: %(error)s") % {
            "error": f"{type(exc).__name__}: {exc}"
        }
        turn_finish(turn, status=Turn.Status.FAILED, error=error, notice=f"⚠ {notice}")


def _tool_requests(
    reply: ModelReply, *, native: bool, turn_id: int, offered: list[str]
) -> list[CallRequest]:
    if native:
        return [
            CallRequest(tool=c.name, arguments=c.arguments, call_id=c.id, index=i)
            for i, c in enumerate(reply.tool_calls)
        ]
    parsed = parse_tool_calls(reply.text, offered)
    if parsed:
        # A block the model copied from a result (a page saying ">>> RUN COMMAND: …") is a
        # quotation, not a call.
        results = ToolCall.objects.filter(turn_id=turn_id).values_list("result", "output")
        data = data_text(results)
        kept = [p for p in parsed if not repeats_data(p, data)]
        if len(kept) < len(parsed):
            logger.warning(
                "turn %s: %d call block(s) repeat text of a tool result; left as text",
                turn_id,
                len(parsed) - len(kept),
            )
        parsed = kept
    return [
        CallRequest(
            tool=p.name,
            arguments=p.arguments if p.arguments is not None else p.raw,
            call_id=f"text_{i}",
            index=i,
            parse_error=p.error,
        )
        for i, p in enumerate(parsed)
    ]


def _bind_and_dispatch(plan: RoundPlan, requests: list[CallRequest]) -> None:
    ctx = BindContext(
        user_id=plan.user_id,
        conversation_id=plan.conversation_id,
        source=plan.call_source,
        scope=plan.scope,
        untrusted_sinks=plan.agent.untrusted_sinks,
    )
    offered = plan.callable
    limits = CallLimits(
        per_turn=plan.agent.max_calls_per_turn,
        per_conversation=plan.agent.max_calls_per_conversation,
    )
    # Checked first, outside the transaction: schema and policy read only the configuration,
    # and on SQLite a write transaction holds every other writer of the process back.
    checked = [
        toolcall_check(
            request=request,
            ctx=ctx,
            turn_id=plan.turn_id,
            message_id=plan.message_id,
            allowed_tools=offered,
            unavailable=plan.offer.unavailable,
        )
        for request in requests
    ]
    calls: list[Any] = []
    dispatched = False
    with transaction.atomic():
        moved = _TO_TOOLS.update(pk=plan.turn_id)
        for one in checked if moved else ():
            call = toolcall_store(one, limits=limits, unavailable=plan.offer.unavailable)
            plan.offer.bound(call)
            if call.status == call.Status.QUEUED and not plan.kind.hold(call):
                toolcall_dispatch(call)
                dispatched = True
            calls.append(call)
    if not moved:
        # Stop arrived between the last token and now, or the turn ended meanwhile (the
        # reaper): run nothing it asked for; a stopped turn ends here as cancelled.
        turn = Turn.objects.get(pk=plan.turn_id)
        if turn.is_running and turn.cancel_requested:
            turn_finish(turn, status=Turn.Status.CANCELLED)
        return
    for call in calls:
        toolcall_publish(call, wait=False)  # in order with what follows; the call goes on
    if not dispatched:  # all refused or held: nothing will finish to move the turn on
        turn_advance(plan.turn_id)


def _close_message(
    plan: RoundPlan,
    text: str,
    *,
    state: str,
    record: Callable[[], dict[str, Any]] | None = None,
    shown: bool = False,
) -> bool:
    """Store the reply's end; ``record``: the round's usage record, written first (``shown``:
    what it returns is kept on the message, for the page). False: the reply was no longer
    streaming (the reaper closed it), so nothing was stored."""
    usage = record() if record is not None else {}
    usage = usage if shown else {}
    closed = _CLOSE.update(pk=plan.message_id, content=text, state=state, usage=usage)
    if not closed:
        return False  # closed meanwhile (the reaper): what it wrote stands
    message = plan.message
    if message is None:
        message = Message.objects.get(pk=plan.message_id)
    else:  # as the UPDATE left it: it was still streaming, so no one else wrote it since
        message.content, message.state, message.note = text, state, ""
        message.usage = usage
        message.version += 1
    # None bound yet. Queued, not waited for: the calls' cards and the turn's end follow it.
    message_publish(message, calls=[], wait=False)
    return True
