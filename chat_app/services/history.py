"""The conversation as the provider sees it, rebuilt from what is stored.

Tool results are not separate rows: they are the results of the ToolCalls attached to each
assistant message, so the history can be rendered for native tool calling (assistant
``tool_calls`` + ``tool`` messages) or for text fallback (results as a user message) from the
same data.

Whatever comes from outside the conversation — results, a subagent's answer — goes between
untrusted-data markers (``tools_app.untrusted``).
"""

from __future__ import annotations

import base64
import json
from typing import Any

from django.db.models import Q

from chat_app.fallback import format_tool_results
from chat_app.models import Conversation, Message
from chat_app.providers import ChatMessage, ImagePart, ToolCallRequest
from chat_app.selectors import turn_tree
from chat_app.services import uploads
from infra.prepared import Prepared
from tools_app import selectors
from tools_app.models import ToolCall
from tools_app.untrusted import marker_id, untrusted

_MESSAGE_FIELDS = (
    "id",
    "role",
    "origin",
    "content",
    "state",
    "fallback",
    "attachments",
    "created_at",
)
_CALL_FIELDS = ("id", "message_id", "index", "tool", "raw_arguments", "call_id", "result")
UNFINISHED = {"success": False, "error": "this call did not finish (the turn was stopped)"}


# What the call's card and the audit show but the model has no use for. A call's duration
# also differs from run to run, so leaving it in made the same conversation a different
# request each time (and a greedy model's next step with it).
_NOT_FOR_THE_MODEL = frozenset({"duration_ms"})


def _result(call: ToolCall) -> dict[str, Any]:
    if call.result is None:
        return UNFINISHED
    return {k: v for k, v in call.result.items() if k not in _NOT_FOR_THE_MODEL}


def call_request_id(call: ToolCall) -> str:
    return call.call_id or f"call_{call.pk}"


def _messages(conversation_id: int) -> Any:
    return (
        Message.objects.filter(conversation_id=conversation_id)
        .exclude(role=Message.Role.NOTICE)
        .only(*_MESSAGE_FIELDS)
        .order_by("created_at", "id")
    )


# Every model round reads these: compiled once per process (infra.prepared).
_MESSAGES = Prepared(_messages, conversation_id=int)
_CALLS = Prepared(
    lambda conversation_id: (
        ToolCall.objects.filter(conversation_id=conversation_id, message_id__isnull=False)
        .only(*_CALL_FIELDS)
        .order_by()
    ),
    conversation_id=int,
)


def build_history(
    conversation: Conversation,
    *,
    native: bool,
    exclude_message_id: int | None = None,
    images: bool = False,
    upload_images: bool = False,
) -> list[ChatMessage]:
    """``images``: attach the images of the latest tool round (screenshots) for a model with
    image input; older ones stay paths in their results, to keep requests small.
    ``upload_images``: attach the images people uploaded with their messages (the newest
    few, ``uploads.MAX_IMAGES_TO_MODEL``); every model reads the uploaded files' names."""
    # Every model round runs this: only the columns the history needs, and the calls in one
    # unordered query grouped here (Django's prefetch machinery and an ORDER BY over
    # ToolCall's many columns cost more Python than the queries take).
    # Only the shown branch (an edited or regenerated message left the others behind); the
    # messages of no turn (a subagent's answer) belong to every branch.
    tree = turn_tree(conversation.pk)
    if tree.is_linear():
        messages = _MESSAGES.rows(conversation_id=conversation.pk)
    else:
        found = _messages(conversation.pk).filter(Q(turn_id__in=tree.path) | Q(turn__isnull=True))
        messages = list(found)
    by_message: dict[int, list[ToolCall]] = {}
    for call in _CALLS.rows(conversation_id=conversation.pk):
        by_message.setdefault(call.message_id, []).append(call)
    out: list[ChatMessage] = []
    latest_calls = next(
        (
            [c.pk for c in by_message.get(m.pk, ())]
            for m in reversed(messages)
            if m.role == Message.Role.ASSISTANT and m.pk != exclude_message_id
        ),
        [],
    )

    marker = marker_id(conversation.pk)
    # The newest uploaded images go to the model; older ones stay names in the text.
    uploaded = _newest_uploaded_images(messages) if upload_images else set()

    def data(text: str, source: str) -> str:
        return untrusted(text, source=source, marker=marker)

    def pictures(call: ToolCall) -> list[ImagePart]:
        if not images or call.pk not in latest_calls:
            return []
        return [ImagePart(mime_type=m, data=d) for m, d in selectors.call_images(call.pk)]

    for message in messages:
        if message.pk == exclude_message_id:
            continue
        calls = sorted(by_message.get(message.pk, ()), key=lambda c: (c.index, c.pk))
        if message.role == Message.Role.USER:
            content = message.content
            if message.origin == Message.Origin.SUBAGENT:
                # Written by another model that read who knows what: data, not the user.
                content = "A subagent's answer arrived:\n" + data(content, "a subagent's answer")
            files = message.attachments or []
            content += uploads.attachment_note(files)
            shown = []
            for a in files:
                if (message.pk, a.get("name", "")) in uploaded:
                    mime, raw = uploads.attachment_image(conversation, a)
                    if mime:
                        shown.append(ImagePart(mime_type=mime, data=base64.b64encode(raw).decode()))
            out.append(ChatMessage(role="user", content=content, images=shown))
            if calls:  # a slash command: tell the model what the user ran and what came back
                lines = [
                    f"[I ran the tool {c.tool} directly with arguments "
                    f"{c.raw_arguments or '{}'}; result:]\n"
                    + data(json.dumps(_result(c), ensure_ascii=False), f"result of {c.tool}")
                    for c in calls
                ]
                out.append(ChatMessage(role="user", content="\n".join(lines)))
            continue
        content = message.content
        if message.state == Message.State.CANCELLED:
            content = (content + "\n\n[interrupted by the user]").strip()
        if native:
            out.append(
                ChatMessage(
                    role="assistant",
                    content=content,
                    tool_calls=[
                        ToolCallRequest(
                            id=call_request_id(c), name=c.tool, arguments=c.raw_arguments or "{}"
                        )
                        for c in calls
                    ],
                )
            )
            for c in calls:
                result = _result(c)
                out.append(
                    ChatMessage(
                        role="tool",
                        content=data(json.dumps(result, ensure_ascii=False), f"result of {c.tool}"),
                        tool_call_id=call_request_id(c),
                        name=c.tool,
                        is_error=not result.get("success", False),
                        images=pictures(c),
                    )
                )
        else:
            if calls and not message.fallback:
                content += "".join(
                    f"\n[called {c.tool} with {c.raw_arguments or '{}'}]" for c in calls
                )
            if content:
                out.append(ChatMessage(role="assistant", content=content))
            if calls:
                out.append(
                    ChatMessage(
                        role="user",
                        content=format_tool_results(
                            [(c.tool, _result(c)) for c in calls], marker=marker
                        ),
                        images=[p for c in calls for p in pictures(c)],
                    )
                )
    return _merge_consecutive_users(out)


def _newest_uploaded_images(messages: list[Message]) -> set[tuple[int, str]]:
    """(message id, name) of the newest images people uploaded with their messages,
    ``uploads.MAX_IMAGES_TO_MODEL`` at most."""
    chosen: list[tuple[int, str]] = []
    for m in reversed(messages):
        if m.role != Message.Role.USER:
            continue
        for a in reversed(m.attachments or []):
            if str(a.get("mime", "")).startswith("image/"):
                chosen.append((m.pk, str(a.get("name", ""))))
    return set(chosen[: uploads.MAX_IMAGES_TO_MODEL])


def _merge_consecutive_users(messages: list[ChatMessage]) -> list[ChatMessage]:
    # Some servers (and Anthropic) reject two user messages in a row.
    merged: list[ChatMessage] = []
    for m in messages:
        if merged and m.role == "user" and merged[-1].role == "user":
            merged[-1] = ChatMessage(
                role="user",
                content=f"{merged[-1].content}\n\n{m.content}",
                images=merged[-1].images + m.images,
            )
        else:
            merged.append(m)
    return merged
