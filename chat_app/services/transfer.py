"""One conversation out as Markdown or JSON, and a JSON export back in as a new conversation.

The JSON carries the messages in order, and with each message its tool calls: the tool, the
arguments, the result, output and error, the status and the times. An import is validated
strictly (unknown fields, wrong types, oversized texts and lists are refused, with the place
of the first problem) and creates a new conversation owned by the importer; its tool calls
are records only (``ToolCall.imported``) — never queued, never run again, counted in no usage,
quota or call limit.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any, Literal

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from chat_app.models import Conversation, Message
from chat_app.selectors import conversation_messages
from chat_app.services.titles import DEFAULT_TITLE
from tools_app.models import ToolCall

FORMAT = "control-center.conversation"
VERSION = 1
MAX_IMPORT_BYTES = 20 * 1024 * 1024
MAX_MESSAGES = 5000
MAX_CALLS_PER_MESSAGE = 100
MAX_TEXT = 1_000_000
MAX_JSON_DEPTH = 40


class ImportError_(ValueError):
    """A file that is not a conversation export; the message says what is wrong and where."""


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _call_dict(call: ToolCall) -> dict[str, Any]:
    return {
        "tool": call.tool,
        "arguments": call.arguments,
        "raw_arguments": call.raw_arguments,
        "status": call.status,
        "policy_verdict": call.policy_verdict,
        "policy_reason": call.policy_reason,
        "result": call.result,
        "output": call.output,
        "error": call.error,
        "duration_ms": call.duration_ms,
        "created_at": _iso(call.created_at),
        "finished_at": _iso(call.finished_at),
    }


def export_dict(conversation: Conversation, *, include_tools: bool = True) -> dict[str, Any]:
    messages = []
    for message in conversation_messages(conversation):
        calls = list(message.tool_calls.all()) if include_tools else []
        messages.append(
            {
                "role": message.role,
                "origin": message.origin,
                "state": message.state,
                "content": message.content,
                "created_at": _iso(message.created_at),
                "tool_calls": [_call_dict(call) for call in calls],
            }
        )
    return {
        "format": FORMAT,
        "version": VERSION,
        "title": conversation.title,
        "created_at": _iso(conversation.created_at),
        "updated_at": _iso(conversation.updated_at),
        "exported_at": _iso(timezone.now()),
        "messages": messages,
    }


def export_json(conversation: Conversation) -> str:
    return json.dumps(export_dict(conversation), ensure_ascii=False, indent=2)


def _fence(text: str, info: str = "") -> str:
    """``text`` in a code fence longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n{text}\n{ticks}"


def _pretty(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


WHO = {"user": "You", "assistant": "Assistant", "notice": "Control Center"}


def _human(iso: str | None) -> str:
    """An export's ISO time as a person reads it: ``2026-11-29 14:03 UTC`` (the JSON export
    keeps the exact value)."""
    if not iso:
        return ""
    return datetime.fromisoformat(iso).astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def export_markdown(conversation: Conversation) -> str:
    data = export_dict(conversation)
    lines = [f"# {' '.join(conversation.title.split())}", ""]
    lines += [f"Exported from Control Center on {_human(data['exported_at'])}.", ""]
    for message in data["messages"]:
        who = WHO.get(message["role"], message["role"])
        if message["origin"]:
            who += f" ({message['origin']})"
        when = _human(message["created_at"])
        lines += [f"## {who} · {when}" if when else f"## {who}", ""]
        if message["content"]:
            lines += [message["content"], ""]
        for call in message["tool_calls"]:
            took = f", {call['duration_ms']} ms" if call["duration_ms"] is not None else ""
            lines += [f"**Tool call `{call['tool']}`** — {call['status']}{took}", ""]
            arguments = call["arguments"]
            if arguments is None:
                arguments = call["raw_arguments"]
            lines += ["Arguments:", "", _fence(_pretty(arguments), "json"), ""]
            if call["result"] is not None:
                lines += ["Result:", "", _fence(_pretty(call["result"]), "json"), ""]
            if call["output"]:
                lines += ["Output:", "", _fence(call["output"]), ""]
            if call["error"]:
                lines += [f"Error: {call['error']}", ""]
    return "\n".join(lines).rstrip() + "\n"


# ---- import ---------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class CallIn(_Strict):
    tool: str = Field(min_length=1, max_length=64)
    arguments: Any = None
    raw_arguments: str = Field(default="", max_length=MAX_TEXT)
    status: Literal["succeeded", "failed", "denied", "cancelled"]
    policy_verdict: str = Field(default="", max_length=16)
    policy_reason: str = Field(default="", max_length=10_000)
    result: Any = None
    output: str = Field(default="", max_length=MAX_TEXT)
    error: str = Field(default="", max_length=MAX_TEXT)
    duration_ms: int | None = Field(default=None, ge=0, le=2**31 - 1)
    created_at: str | None = None
    finished_at: str | None = None


class MessageIn(_Strict):
    role: Literal["user", "assistant", "notice"]
    origin: Literal["", "schedule", "subagent", "task"] = ""
    state: Literal["complete", "cancelled", "error"] = "complete"
    content: str = Field(default="", max_length=MAX_TEXT)
    created_at: str | None = None
    tool_calls: list[CallIn] = Field(default_factory=list, max_length=MAX_CALLS_PER_MESSAGE)


class ConversationIn(_Strict):
    format: Literal["control-center.conversation"]
    version: Literal[1]
    title: str = Field(default=DEFAULT_TITLE, max_length=200)
    created_at: str | None = None
    updated_at: str | None = None
    exported_at: str | None = None
    messages: list[MessageIn] = Field(max_length=MAX_MESSAGES)


def _depth(value: Any, level: int = 0) -> int:
    if level > MAX_JSON_DEPTH:
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level)
    return level


def _when(text: str | None, where: str) -> datetime | None:
    if text is None:
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise ImportError_(
            _("%(where)s: not an ISO 8601 date and time: %(text)s")
            % {"where": where, "text": f"{text[:40]!r}"}
        ) from None
    if timezone.is_naive(value):
        value = value.replace(tzinfo=UTC)
    return value


def _clean(text: str) -> str:
    """Neither database stores NUL; PostgreSQL refuses lone surrogates (JSON allows both)."""
    return text.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")


def _clean_json(value: Any) -> Any:
    if isinstance(value, str):
        return _clean(value)
    if isinstance(value, list):
        return [_clean_json(v) for v in value]
    if isinstance(value, dict):
        return {_clean(str(k)): _clean_json(v) for k, v in value.items()}
    return value


def parse_export(raw: bytes | str) -> ConversationIn:
    """The validated export, or ImportError_ saying what is wrong."""
    if len(raw) > MAX_IMPORT_BYTES:
        raise ImportError_(
            _("the file is larger than %(value)s MB") % {"value": MAX_IMPORT_BYTES // (1024 * 1024)}
        )
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise ImportError_(_("not valid JSON: %(str)s") % {"str": str(exc)[:200]}) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ImportError_(
            _('not a conversation export (expected "format": "%(FORMAT)s")') % {"FORMAT": FORMAT}
        )
    if _depth(data) > MAX_JSON_DEPTH + 6:
        raise ImportError_(
            _("nested deeper than %(MAX_JSON_DEPTH)s levels") % {"MAX_JSON_DEPTH": MAX_JSON_DEPTH}
        )
    try:
        return ConversationIn.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the file"
        more = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
        raise ImportError_(
            _("%(where)s: %(msg)s%(more)s") % {"where": where, "msg": first["msg"], "more": more}
        ) from None


def import_conversation(*, owner: Any, raw: bytes | str) -> Conversation:
    """A new conversation of ``owner`` from an export (see ``parse_export``)."""
    data = parse_export(raw)
    messages_in = data.messages
    times: list[tuple[datetime | None, list[tuple[datetime | None, datetime | None]]]] = []
    for i, message in enumerate(messages_in):
        call_times = [
            (
                _when(call.created_at, f"messages.{i}.tool_calls.{j}.created_at"),
                _when(call.finished_at, f"messages.{i}.tool_calls.{j}.finished_at"),
            )
            for j, call in enumerate(message.tool_calls)
        ]
        times.append((_when(message.created_at, f"messages.{i}.created_at"), call_times))
    title = " ".join(_clean(data.title).split()) or DEFAULT_TITLE
    with transaction.atomic():
        conversation = Conversation.objects.create(owner=owner, title=title[:200])
        created = Message.objects.bulk_create(
            [
                Message(
                    conversation=conversation,
                    role=m.role,
                    origin=m.origin,
                    state=m.state,
                    content=_clean(m.content),
                )
                for m in messages_in
            ],
            batch_size=500,
        )
        calls: list[ToolCall] = []
        for message, saved in zip(messages_in, created, strict=True):
            for index, call in enumerate(message.tool_calls):
                calls.append(
                    ToolCall(
                        conversation=conversation,
                        message=saved,
                        user=owner,
                        source=ToolCall.Source.CHAT,
                        imported=True,
                        index=index,
                        tool=_clean(call.tool),
                        arguments=_clean_json(call.arguments),
                        raw_arguments=_clean(call.raw_arguments),
                        status=call.status,
                        policy_verdict=_clean(call.policy_verdict),
                        policy_reason=_clean(call.policy_reason),
                        result=_clean_json(call.result),
                        output=_clean(call.output),
                        error=_clean(call.error),
                        duration_ms=call.duration_ms,
                    )
                )
        ToolCall.objects.bulk_create(calls, batch_size=500)
        # The original times (auto_now_add set "now" on create).
        flat_calls = iter(calls)
        dated_messages, dated_calls = [], []
        for saved, (when, call_times) in zip(created, times, strict=True):
            if when is not None:
                saved.created_at = when
                dated_messages.append(saved)
            for started, finished in call_times:
                record = next(flat_calls)
                if started is not None or finished is not None:
                    record.created_at = started or record.created_at
                    record.finished_at = finished
                    dated_calls.append(record)
        Message.objects.bulk_update(dated_messages, ["created_at"], batch_size=500)
        ToolCall.objects.bulk_update(dated_calls, ["created_at", "finished_at"], batch_size=500)
    return conversation
