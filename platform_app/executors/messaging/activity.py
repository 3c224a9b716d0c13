"""send_message: checked again here (binding may be minutes old when approval is required)."""

from __future__ import annotations

from typing import Any

from platform_app import messaging
from platform_app.executors.messaging.settings import MessagingSettings
from platform_app.executors.messaging.tools import SendMessage
from tools_app.errors import PolicyDenied
from tools_app.registry import activity
from tools_app.runtime import ActivityContext


@activity("send_message")
def send_message(args: SendMessage, ctx: ActivityContext[MessagingSettings]) -> dict[str, Any]:
    settings = ctx.settings
    if args.channel == "conversation":
        if not settings.conversation_channel or ctx.user_id is None:
            raise PolicyDenied("the conversation channel is switched off")
        target = messaging.conversation_check(
            chat_id=args.chat_id, user_id=ctx.user_id, from_conversation_id=ctx.conversation_id
        )
        out = messaging.message_post(
            conversation_id=target,
            text=args.text,
            user_id=ctx.user_id,
            from_conversation_id=ctx.conversation_id,
        )
        ctx.emit_output(f"posted into conversation {target}\n")
        return {"channel": "conversation", **out}
    if args.channel == "telegram":
        chat = messaging.telegram_chat_check(
            chat_id=args.chat_id,
            chats=settings.telegram_chats,
            people=settings.telegram_people,
            user_id=ctx.user_id,
        )
        ctx.emit_output(f"sendMessage to Telegram chat {chat}\n")
        out = messaging.telegram_post(
            token=settings.telegram_bot_token.get_secret_value(),
            base_url=settings.telegram_api_url,
            chat_id=chat,
            text=args.text,
            private_allowed=settings.private_allowed,
            timeout=float(settings.timeout_seconds),
            cancel=ctx.cancel,
        )
        ctx.emit_output(f"delivered, message {out['message_id']}\n")
        return {"channel": "telegram", **out}
    name = args.chat_id.strip()
    url = messaging.webhook_targets(settings.webhooks).get(name)
    if url is None:
        raise PolicyDenied(f"{name!r} is not a webhook target an admin allowed")
    ctx.emit_output(f"POST to webhook {name}\n")
    out = messaging.webhook_post(
        name=name,
        url=url,
        text=args.text,
        private_allowed=settings.private_allowed,
        timeout=float(settings.timeout_seconds),
        cancel=ctx.cancel,
    )
    ctx.emit_output(f"HTTP {out['status']}\n")
    return {"channel": "webhook", **out}
