"""send_message: post into another conversation of the same user, or to a webhook an admin
named. Nothing else is reachable: a conversation must belong to the caller, a webhook must be
on the Messaging group's list, and webhook requests go through the HTTP tool's SSRF-guarded
client (no loopback, private, link-local or metadata address unless an admin allows it)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from tools_app.errors import PolicyDenied, ToolError


def webhook_targets(entries: list[str]) -> dict[str, str]:
    out = {}
    for entry in entries:
        name, _, url = entry.partition("=")
        out[name.strip()] = url.strip()
    return out


def conversation_check(
    *, chat_id: str, user_id: int | None, from_conversation_id: int | None
) -> int:
    """The conversation id ``chat_id`` names, if the caller owns it; PolicyDenied otherwise
    (with the same words whether it exists or not: another user's ids are not revealed)."""
    from chat_app.models import Conversation

    text = chat_id.strip()
    # isdigit() alone also admits "²" and other digits int() refuses.
    if not (text.isascii() and text.isdigit()) or len(text) > 18:
        raise PolicyDenied(f"chat_id must be a conversation id (a number), not {chat_id!r}")
    target = int(text)
    if user_id is None or not Conversation.objects.filter(pk=target, owner_id=user_id).exists():
        raise PolicyDenied(f"conversation {target} is not one of your conversations")
    if target == from_conversation_id:
        raise PolicyDenied("that is this conversation; answer here instead of sending a message")
    return target


def message_post(
    *, conversation_id: int, text: str, user_id: int, from_conversation_id: int | None
) -> dict[str, Any]:
    from chat_app.events import message_publish
    from chat_app.models import Conversation, Message

    target = conversation_check(
        chat_id=str(conversation_id), user_id=user_id, from_conversation_id=from_conversation_id
    )
    origin = (
        Conversation.objects.filter(pk=from_conversation_id).values_list("title", flat=True).first()
        if from_conversation_id is not None
        else None
    )
    note = f"*Sent from the conversation “{origin}”.*" if origin else "*Sent by a tool call.*"
    with transaction.atomic():
        message = Message.objects.create(
            conversation_id=target, role=Message.Role.ASSISTANT, content=f"{text}\n\n{note}"
        )
        Conversation.objects.filter(pk=target).update(updated_at=timezone.now())
    message_publish(message)
    title = Conversation.objects.filter(pk=target).values_list("title", flat=True).first()
    return {"delivered": True, "conversation": target, "title": title, "message_id": message.pk}


def webhook_post(
    *, name: str, url: str, text: str, private_allowed: list[str], timeout: float, cancel: Any
) -> dict[str, Any]:
    from tools_app.executors.http.client import fetch

    result = fetch(
        "POST",
        url,
        json_body={"text": text},
        timeout=timeout,
        max_bytes=4_000,
        follow_redirects=False,
        private_allowed=private_allowed,
        cancel=cancel,
    )
    if not 200 <= result.status < 300:
        # Redirects are not followed (the URL is the admin's, not the webhook's to change),
        # so a 3xx means the text went nowhere, as a 4xx or 5xx does. Where it points is not
        # shown: like the webhook's own URL, it may carry a token.
        if 300 <= result.status < 400:
            body = "a redirect, which webhooks do not follow; not delivered"
        else:
            body = " ".join((result.text or "").split())[:200]
        raise ToolError(f"webhook {name!r} answered HTTP {result.status}: {body}")
    return {"delivered": True, "webhook": name, "status": result.status}
