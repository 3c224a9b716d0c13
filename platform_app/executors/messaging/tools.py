from __future__ import annotations

from typing import Literal

from pydantic import Field

from platform_app.executors.messaging.settings import MessagingSettings
from platform_app.messaging import conversation_check, telegram_chat_check, webhook_targets
from tools_app.errors import PolicyDenied
from tools_app.registry import BaseTool
from tools_app.runtime import BindContext


class SendMessage(BaseTool[MessagingSettings], group="messaging"):
    """Send a message. channel "conversation": post it into another of the user's
    conversations (chat_id = that conversation's id). channel "webhook": send it to a target
    an admin configured (chat_id = the target's name). channel "telegram": send it through the
    team's Telegram bot to a chat an admin allowed (chat_id = that chat's id or @name, or "me"
    for the chat linked to the user)."""

    channel: Literal["conversation", "webhook", "telegram"] = Field(
        description="Where to send it.", examples=["conversation"]
    )
    chat_id: str = Field(
        min_length=1,
        max_length=64,
        description='A conversation id, a webhook target\'s name, or a Telegram chat id (or "me").',
        examples=["1"],
    )
    text: str = Field(min_length=1, description="The message (Markdown).", examples=["Done!"])

    def sink(self, settings: MessagingSettings) -> str:
        if self.channel == "telegram":
            return f"a message to Telegram chat {self.chat_id}"
        return f"a message to {self.channel} {self.chat_id}"

    def check_policy(self, settings: MessagingSettings, ctx: BindContext) -> None:
        if len(self.text) > settings.max_text_chars:
            raise PolicyDenied(
                f"the text is {len(self.text):,} characters; "
                f"the limit is {settings.max_text_chars:,}"
            )
        if self.channel == "conversation":
            if not settings.conversation_channel:
                raise PolicyDenied("the conversation channel is switched off")
            conversation_check(
                chat_id=self.chat_id, user_id=ctx.user_id, from_conversation_id=ctx.conversation_id
            )
            return
        if self.channel == "telegram":
            if not settings.telegram_bot_token.get_secret_value():
                raise PolicyDenied("no Telegram bot token is configured")
            telegram_chat_check(
                chat_id=self.chat_id,
                chats=settings.telegram_chats,
                people=settings.telegram_people,
                user_id=ctx.user_id,
            )
            return
        targets = webhook_targets(settings.webhooks)
        if self.chat_id.strip() not in targets:
            allowed = ", ".join(sorted(targets)) or "none are configured"
            raise PolicyDenied(
                f"{self.chat_id!r} is not a webhook target an admin allowed (targets: {allowed})"
            )
