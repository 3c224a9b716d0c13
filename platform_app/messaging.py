"""send_message: post into another conversation of the same user, to a webhook an admin
named, or to a Telegram chat an admin allowed. Nothing else is reachable: a conversation must
belong to the caller, a webhook or a Telegram chat must be on the Messaging group's lists (or be
the chat an admin linked to the caller), and webhook and Bot API requests go through the HTTP
tool's SSRF-guarded client (no loopback, private, link-local or metadata address unless an admin
allows it)."""

from __future__ import annotations

import json
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


def telegram_chat_check(
    *, chat_id: str, chats: list[str], people: list[str], user_id: int | None
) -> str:
    """The Telegram chat ``chat_id`` names, if an admin allowed it: a chat on the list, or
    "me", the chat an admin linked to the caller. PolicyDenied otherwise, before anything is
    sent. A "telegram_" prefix (the seed's spelling, telegram_123456) is accepted."""
    text = chat_id.strip()
    if text.lower().startswith("telegram_"):
        text = text[len("telegram_") :]
    if text.lower() == "me":
        linked = telegram_linked_chat(people=people, user_id=user_id)
        if linked is None:
            raise PolicyDenied(
                "no Telegram chat is linked to you; an admin links one in the Messaging "
                "group's Telegram people"
            )
        return linked
    if text not in chats:
        allowed = ", ".join(chats) or "none are configured"
        raise PolicyDenied(
            f"{chat_id!r} is not a Telegram chat an admin allowed (chats: {allowed}; "
            '"me" for your own chat, if an admin linked one)'
        )
    return text


def telegram_linked_chat(*, people: list[str], user_id: int | None) -> str | None:
    if user_id is None or not people:
        return None
    from django.contrib.auth import get_user_model

    username = (
        get_user_model().objects.filter(pk=user_id).values_list("username", flat=True).first()
    )
    for entry in people:
        name, _, chat = entry.partition("=")
        if username is not None and name == username:
            return chat
    return None


def telegram_post(
    *,
    token: str,
    base_url: str,
    chat_id: str,
    text: str,
    private_allowed: list[str],
    timeout: float,
    cancel: Any,
) -> dict[str, Any]:
    """POST {base}/bot{token}/sendMessage with {chat_id, text}; the Bot API's answer, or a
    ToolError in words a person can act on. The token is part of the URL, so it is taken out
    of every message that leaves here, whoever wrote it (the guard, the network, the server)."""
    from tools_app.executors.http.client import fetch

    if not token:
        raise PolicyDenied("no Telegram bot token is configured; an admin sets one in Messaging")
    target: int | str = int(chat_id) if chat_id.lstrip("-").isdigit() else chat_id
    try:
        result = fetch(
            "POST",
            f"{base_url}/bot{token}/sendMessage",
            json_body={"chat_id": target, "text": text},
            timeout=timeout,
            max_bytes=16_000,
            follow_redirects=False,
            private_allowed=private_allowed,
            cancel=cancel,
        )
    except ToolError as exc:
        raise _without(token, exc) from None
    try:
        reply = json.loads(result.text or "")
    except ValueError:
        reply = None
    if not isinstance(reply, dict) or "ok" not in reply:
        if 300 <= result.status < 400:
            raise ToolError("the Bot API answered with a redirect, which is not followed")
        raise ToolError(
            f"the Bot API answered HTTP {result.status} without a Bot API reply; not delivered"
        )
    if reply.get("ok") is True and 200 <= result.status < 300:
        sent = reply.get("result")
        sent = sent if isinstance(sent, dict) else {}
        return {"delivered": True, "chat_id": chat_id, "message_id": sent.get("message_id")}
    code = reply.get("error_code", result.status)
    description = _scrub(token, " ".join(str(reply.get("description") or "").split())[:300])
    parameters = reply.get("parameters")
    parameters = parameters if isinstance(parameters, dict) else {}
    if code == 429 or result.status == 429:
        retry_after = parameters.get("retry_after")
        wait = f"try again in {retry_after} s" if isinstance(retry_after, int) else "try later"
        raise ToolError(
            f"Telegram is limiting this bot's messages (429): {wait}; not delivered",
            permanent=False,
            data={"retry_after": retry_after} if isinstance(retry_after, int) else None,
        )
    raise ToolError(f"Telegram refused the message (error {code}: {description}); not delivered")


def _scrub(token: str, text: str) -> str:
    from urllib.parse import quote

    # Longest first: the key alone is part of the whole token, and replacing it first would
    # leave the bot id in front of "<token>" (a set's order changes from run to run).
    spellings = {token, quote(token, safe=""), token.split(":", 1)[-1]}
    for spelling in sorted(spellings, key=len, reverse=True):
        if spelling:
            text = text.replace(spelling, "<token>")
    return text


def _without(token: str, exc: ToolError) -> ToolError:
    """The same error with the token taken out of its words; its cause (a network error that
    may quote the URL) is dropped, so no traceback in a log carries it."""
    exc.message = _scrub(token, exc.message)
    exc.args = (exc.message,)
    exc.data = json.loads(_scrub(token, json.dumps(exc.data))) if exc.data else exc.data
    exc.__cause__ = exc.__context__ = None
    exc.__traceback__ = None
    return exc
