"""The database side of ``/v1``: which agent profiles a token may use as models, turning a
chat-completions request into a turn of the token's owner, and reading the turn's outcome.

A request's messages become a conversation owned by the token's owner: a new one (the
client's earlier messages stored as its history, nothing run again), or one the request names
(``conversation_id`` in the body or the ``X-Conversation-Id`` header), which keeps its own
history: only the last message of the request is new. That last message is the user's and
starts a turn through ``turn_start`` — the chat's own path — with ``source=api``: binding,
grants, allow-lists, limits, approvals and the audit log apply to every call it makes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from chat_app.models import Agent, Conversation, Message, Turn
from chat_app.services.agents import agent_default, agents_for
from chat_app.services.titles import DEFAULT_TITLE, title_from
from chat_app.services.turns import TurnError, turn_start
from platform_app.api.errors import ApiError
from platform_app.api.v1.schemas import ChatCompletionRequest
from platform_app.api_tokens import api_token_turn_scope
from tools_app.models import ApiToken, ToolCall

NOT_A_MODEL = "The model `{name}` does not exist or you do not have access to it."
# What the client's own system messages become in a new conversation's history: the agent
# profile's prompt stays the system prompt; the client's words reach the model as theirs.
CLIENT_INSTRUCTIONS = "Instructions from the API client:\n\n"


def token_load(token_id: int) -> ApiToken:
    return ApiToken.objects.select_related("user", "agent").get(pk=token_id)


def models_for(token: ApiToken) -> list[Agent]:
    """The agent profiles the token may use as models: those its owner may pick, or only its
    own profile when it was made for one."""
    agent_default()  # made on first use (a fresh install has no profile until a chat opens)
    agents = agents_for(token.user)
    if token.scoped:
        agents = agents.filter(pk=token.agent_id or 0)
    return list(agents.order_by("-is_default", "name"))


def model_object(agent: Agent) -> dict[str, Any]:
    return {
        "id": agent.name,
        "object": "model",
        "created": int(agent.created_at.timestamp()),
        "owned_by": "controlcenter",
    }


def model_named(token: ApiToken, name: str) -> Agent:
    """The agent profile called ``name`` if the token may use it (one query), else 404."""

    def find() -> Agent | None:
        agents = agents_for(token.user).filter(name=name)
        if token.scoped:
            agents = agents.filter(pk=token.agent_id or 0)
        return agents.order_by().first()

    agent = find()
    if agent is None and not Agent.objects.filter(is_default=True).exists():
        agent_default()  # a fresh install: the default profile is made on first use
        agent = find()
    if agent is None:
        raise ApiError(404, NOT_A_MODEL.format(name=name), code="model_not_found", param="model")
    return agent


@dataclass
class Prepared:
    """A request made ready to start: its conversation exists (made now, or the caller's)."""

    conversation: Conversation
    created_conversation: bool
    model: str
    text: str
    trace: bool
    scope: list[str] | None
    user_id: int

    @property
    def conversation_id(self) -> int:
        return self.conversation.pk


def _text_messages(request: ChatCompletionRequest) -> tuple[list[tuple[str, str]], str]:
    """(earlier messages as (role, text), the last user message's text), or a 400 that says
    which message cannot be taken."""
    if request.n not in (None, 1):
        raise ApiError(400, "n must be 1: one reply per request", code="unsupported", param="n")
    if request.tools or request.functions:
        raise ApiError(
            400,
            "caller-supplied tools are not supported: this endpoint runs the tools your agent "
            "profile may use, on the server, under its governance; send no 'tools'",
            code="tools_not_supported",
            param="tools",
        )
    earlier: list[tuple[str, str]] = []
    for i, message in enumerate(request.messages):
        where = f"messages[{i}]"
        if message.role in ("tool", "function") or message.tool_calls or message.function_call:
            raise ApiError(
                400,
                f"{where}: tool calls and tool results belong to caller-supplied tools, which "
                "this endpoint does not take",
                code="tools_not_supported",
                param="messages",
            )
        earlier.append((message.role, message.text(where)))
    role, last = earlier.pop()
    if role != "user":
        raise ApiError(
            400, "the last message must be the user's", code="invalid_messages", param="messages"
        )
    if not last.strip():
        raise ApiError(400, "the last message is empty", code="invalid_messages", param="messages")
    return earlier, last


def chat_prepare(
    *,
    token_id: int,
    request: ChatCompletionRequest,
    conversation_header: str,
    trace_header: str,
) -> Prepared:
    """Check the request and make or find its conversation; nothing runs yet."""
    token = token_load(token_id)
    agent = model_named(token, request.model)
    earlier, text = _text_messages(request)
    trace = token.trace if request.trace is None else request.trace
    if trace_header.strip().lower() in ("0", "false", "off", "no"):
        trace = False
    elif trace_header.strip().lower() in ("1", "true", "on", "yes"):
        trace = True
    conversation_id = requested_conversation(request, conversation_header)
    scope = api_token_turn_scope(token)
    if conversation_id is not None:
        conversation = Conversation.objects.filter(pk=conversation_id, owner=token.user).first()
        if conversation is None:  # someone else's or gone: the same answer
            raise ApiError(
                404,
                "conversation not found",
                code="conversation_not_found",
                param="conversation_id",
            )
        # The model asked for is the conversation's profile from now on (no profile: the
        # default one, which needs no write).
        if conversation.agent_id != agent.pk and not (
            conversation.agent_id is None and agent.is_default
        ):
            conversation.agent = agent
            conversation.save(update_fields=["agent"])
        return Prepared(conversation, False, agent.name, text, trace, scope, token.user_id)
    with transaction.atomic():
        conversation = Conversation.objects.create(
            owner=token.user,
            agent=agent,
            title=_title(earlier, text),
            source=Conversation.Source.API,
        )
        Message.objects.bulk_create(
            [
                Message(
                    conversation=conversation,
                    role=Message.Role.ASSISTANT if role == "assistant" else Message.Role.USER,
                    content=CLIENT_INSTRUCTIONS + body if role in ("system", "developer") else body,
                )
                for role, body in earlier
                if body.strip()
            ]
        )
    return Prepared(conversation, True, agent.name, text, trace, scope, token.user_id)


def requested_conversation(request: ChatCompletionRequest, header: str) -> int | None:
    """The conversation the request goes on in (its ``conversation_id``, else the
    ``X-Conversation-Id`` header), or None for a new one."""
    return request.conversation_id or _header_id(header)


def _header_id(value: str) -> int | None:
    value = value.strip()
    if not value:
        return None
    if not value.isascii() or not value.isdigit() or len(value) > 15:
        raise ApiError(
            400,
            "X-Conversation-Id must be a conversation id (a number)",
            code="invalid_conversation_id",
            param="conversation_id",
        )
    return int(value)


def _title(earlier: list[tuple[str, str]], text: str) -> str:
    first = next((body for role, body in earlier if role == "user" and body.strip()), text)
    return title_from(first) or DEFAULT_TITLE


def chat_start(*, prepared: Prepared) -> int | None:
    """Start the turn (``turn_start``, source api); its id, or None when the message was a
    command that answered at once (``/help``, an unknown one)."""
    conversation = prepared.conversation
    try:
        turn = turn_start(
            conversation=conversation,
            user_id=prepared.user_id,
            text=prepared.text,
            source=Turn.Source.API,
            scope=prepared.scope,
        )
    except TurnError as exc:
        if prepared.created_conversation:
            conversation.delete()  # nothing of it ran: leave no empty conversation behind
        busy = "still working" in str(exc)
        raise ApiError(
            409 if busy else 400,
            str(exc),
            code="conversation_busy" if busy else "invalid_message",
            param=None if busy else "messages",
        ) from None
    return turn.pk if turn is not None else None


def chat_prepare_and_start(**request: Any) -> tuple[Prepared, int | None]:
    """Both steps at once, for a request that names its conversation (the caller listens to
    it already)."""
    prepared = chat_prepare(**request)
    return prepared, chat_start(prepared=prepared)


def turn_stop_for_client(turn_id: int) -> None:
    """The client went away before the end: stop its turn (calls are cancelled, as Stop)."""
    from chat_app.services.turns import turn_stop

    turn = Turn.objects.filter(pk=turn_id, status=Turn.Status.RUNNING).first()
    if turn is not None:
        turn_stop(turn=turn)


# --- the outcome ---------------------------------------------------------------------------


def call_info(call: ToolCall) -> dict[str, Any]:
    """A call as the documented ``controlcenter.tool_calls`` entries show it."""
    info: dict[str, Any] = {
        "id": call.pk,
        "tool": call.tool,
        "status": call.status,
        "arguments": call.arguments if call.arguments is not None else call.raw_arguments,
    }
    if call.error:
        info["error"] = call.error
    if call.status == ToolCall.Status.AWAITING_APPROVAL:
        info["approvers"] = call.approvers_label or "you"
    return info


def call_info_of(call_id: int) -> dict[str, Any] | None:
    call = ToolCall.objects.filter(pk=call_id).first()
    return call_info(call) if call is not None else None


def trace_line(info: dict[str, Any]) -> str:
    """One markdown line about a call, as a plain chat client shows it."""
    arguments = info.get("arguments")
    shown = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    if len(shown) > 120:
        shown = shown[:117] + "…"
    head = f"`{info['tool']}` `{shown}`"
    status = info["status"]
    if status == ToolCall.Status.AWAITING_APPROVAL:
        return f"> ⏳ {head} waits for approval by {info.get('approvers')} (call {info['id']})"
    icon = "🔧" if status == ToolCall.Status.SUCCEEDED else "⚠️"
    words = ToolCall.Status(status).label if status in ToolCall.Status.values else status
    error = str(info.get("error") or "").strip().splitlines()
    reason = f": {error[0][:200]}" if error and status != ToolCall.Status.SUCCEEDED else ""
    return f"> {icon} {head} → {words}{reason}"


@dataclass
class Outcome:
    status: str
    error: str
    # The turn's messages in order: (role, id, text) — the model's replies, the notices it
    # left ("stopped at the round limit"), and for a ``/`` command its result (id 0).
    parts: list[tuple[str, int, str]] = field(default_factory=list)
    calls: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # by message id
    usage: dict[str, int] = field(default_factory=dict)
    llm_model: str = ""

    @property
    def all_calls(self) -> list[dict[str, Any]]:
        return [info for infos in self.calls.values() for info in infos]


def turn_outcome(turn_id: int) -> Outcome:
    turn = Turn.objects.filter(pk=turn_id).first()
    if turn is None:
        return Outcome(status=Turn.Status.FAILED, error="the turn no longer exists")
    outcome = Outcome(status=turn.status, error=turn.error)
    replies = {}
    messages = Message.objects.filter(turn_id=turn_id).exclude(role=Message.Role.USER)
    for message in messages.order_by("created_at", "id"):
        replies[message.pk] = message
        outcome.parts.append((message.role, message.pk, message.content))
        if message.usage.get("model"):
            outcome.llm_model = str(message.usage["model"])
    outcome.usage = _usage([m.usage for m in replies.values() if m.role == Message.Role.ASSISTANT])
    calls = list(ToolCall.objects.filter(turn_id=turn_id).order_by("index", "id"))
    for call in calls:
        # A command's call hangs on the person's message: it leads the reply.
        key = call.message_id if call.message_id in replies else 0
        outcome.calls.setdefault(key, []).append(call_info(call))
    if turn.kind == Turn.Kind.SLASH:
        results = [json.dumps(c.result, ensure_ascii=False, indent=2) for c in calls if c.result]
        text = "\n\n".join(f"```json\n{result}\n```" for result in results)
        outcome.parts.insert(0, ("command", 0, text))
    elif 0 in outcome.calls:
        outcome.parts.insert(0, ("command", 0, ""))
    return outcome


class Writer:
    """The reply's content as one markdown text, piece by piece: the model's text of each
    round, and between them a line per tool call (the trace), blank lines where the kind of
    piece changes. The stream and the whole reply are written by the same rules."""

    def __init__(self) -> None:
        self.last: tuple[str, int] | None = None  # ("text", message id) or ("block", 0)

    def text(self, message_id: int, text: str) -> str:
        if not text:
            return ""
        gap = self.last is not None and self.last != ("text", message_id)
        self.last = ("text", message_id)
        return ("\n\n" if gap else "") + text

    def block(self, line: str) -> str:
        gap = self.last is not None
        self.last = ("block", 0)
        return ("\n\n" if gap else "") + line


def compose(outcome: Outcome, *, trace: bool) -> str:
    """The whole reply of a finished turn (a request that did not stream)."""
    writer = Writer()
    out = ""
    for role, message_id, text in outcome.parts:
        if role == Message.Role.NOTICE:
            out += writer.block(text.strip())
            continue
        if role == "command":  # what a ``/`` command ran, then what it returned
            for info in outcome.calls.get(0, []) if trace else []:
                out += writer.block(trace_line(info))
            out += writer.text(0, text)
            continue
        out += writer.text(message_id, text)
        if trace:
            for info in outcome.calls.get(message_id, []):
                out += writer.block(trace_line(info))
    return out


def _usage(reported: list[dict[str, Any]]) -> dict[str, int]:
    """The turn's token counts, as the providers reported them for each model round."""
    prompt = sum(int((usage or {}).get("input_tokens") or 0) for usage in reported)
    completion = sum(int((usage or {}).get("output_tokens") or 0) for usage in reported)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def answered_at_once(conversation_id: int) -> str:
    """What a command that ran no turn answered (``/help``, an unknown command): the newest
    notice of the conversation."""
    notice = (
        Message.objects.filter(conversation_id=conversation_id, role=Message.Role.NOTICE)
        .order_by("-created_at", "-id")
        .values_list("content", flat=True)
        .first()
    )
    return notice or ""
