from __future__ import annotations

import re

from django.utils.translation import gettext as _
from pydantic import ConfigDict, Field, SecretStr, field_validator

from tools_app.registry import GroupSettings, ToolGroup, register_group

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
# A Telegram chat: a numeric id (groups and channels are negative) or a public @username.
TELEGRAM_CHAT = re.compile(r"^(-?[0-9]{1,20}|@[A-Za-z][A-Za-z0-9_]{3,31})$")
_TELEGRAM_TOKEN = re.compile(r"^[0-9]{1,20}:[A-Za-z0-9_-]{20,100}$")
TELEGRAM_API = "https://api.telegram.org"


class MessagingSettings(GroupSettings):
    # A mistyped bot token is still a secret: errors name the field, never the value typed.
    model_config = ConfigDict(hide_input_in_errors=True)

    timeout_seconds: int = Field(15, ge=1, le=120, description="Longest a call may run (s).")
    conversation_channel: bool = Field(
        True, description="Allow posting into another conversation of the same user."
    )
    webhooks: list[str] = Field(
        default_factory=list,
        description="Webhook targets, one per line: name=https://host/path. The model names a "
        'target, never a URL; the text is POSTed as JSON {"text": ...}.',
    )
    private_allowed: list[str] = Field(
        default_factory=list,
        description="Private or loopback hosts, IPs or CIDRs a webhook may reach despite the "
        "SSRF guard, one per line.",
    )
    max_text_chars: int = Field(4000, ge=1, le=100_000, description="Longest message sent.")
    telegram_bot_token: SecretStr = Field(
        SecretStr(""),
        description="The Telegram bot's token (from @BotFather). Stored encrypted; the model, "
        "the audit log and the cards never see it.",
    )
    telegram_chats: list[str] = Field(
        default_factory=list,
        description="Telegram chats the model may send to, one per line: a chat id "
        "(-1001234567890) or a public @channel. Nothing else is reachable.",
    )
    telegram_people: list[str] = Field(
        default_factory=list,
        description="A person's own Telegram chat, one per line: username=chat id. That person's "
        'calls may send to chat_id "me"; nobody else\'s may.',
    )
    telegram_api_url: str = Field(
        TELEGRAM_API,
        description="Bot API base URL. Another one (a local Bot API server) on a private or "
        "loopback address must also be listed under private hosts.",
    )

    @field_validator("webhooks")
    @classmethod
    def _webhooks(cls, value: list[str]) -> list[str]:
        out, names = [], set()
        for raw in value:
            entry = raw.strip()
            if not entry:
                continue
            name, sep, url = entry.partition("=")
            name, url = name.strip(), url.strip()
            if not sep or not _NAME.match(name):
                raise ValueError(
                    f"{entry!r}: write name=https://host/path (name: letters, digits, _ . -)"
                )
            if not url.lower().startswith(("https://", "http://")):
                raise ValueError(f"{entry!r}: the URL must start with https:// or http://")
            if name in names:
                raise ValueError(f"{entry!r}: the name {name!r} is used twice")
            names.add(name)
            out.append(f"{name}={url}")
        return out

    @field_validator("telegram_bot_token")
    @classmethod
    def _token(cls, value: SecretStr) -> SecretStr:
        plain = value.get_secret_value().strip()
        if plain and not _TELEGRAM_TOKEN.match(plain):
            # The value is not repeated: it is a secret even when it is mistyped.
            raise ValueError("a bot token looks like 123456789:AAE… (digits, a colon, the key)")
        return SecretStr(plain)

    @field_validator("telegram_chats")
    @classmethod
    def _chats(cls, value: list[str]) -> list[str]:
        out: list[str] = []
        for raw in value:
            entry = raw.strip()
            if not entry:
                continue
            if not TELEGRAM_CHAT.match(entry):
                raise ValueError(f"{entry!r}: write a chat id (-1001234567890) or an @channel")
            if entry not in out:
                out.append(entry)
        return out

    @field_validator("telegram_people")
    @classmethod
    def _people(cls, value: list[str]) -> list[str]:
        out, names = [], set()
        for raw in value:
            entry = raw.strip()
            if not entry:
                continue
            name, sep, chat = (part.strip() for part in entry.partition("="))
            if not sep or not name or not TELEGRAM_CHAT.match(chat):
                raise ValueError(f"{entry!r}: write username=chat id (username=123456789)")
            if name in names:
                raise ValueError(f"{entry!r}: {name!r} is listed twice")
            names.add(name)
            out.append(f"{name}={chat}")
        return out

    @field_validator("telegram_api_url")
    @classmethod
    def _api_url(cls, value: str) -> str:
        url = value.strip().rstrip("/") or TELEGRAM_API
        if not url.lower().startswith(("https://", "http://")):
            raise ValueError("the Bot API URL must start with https:// or http://")
        if "?" in url or "#" in url or "@" in url.split("//", 1)[1].split("/", 1)[0]:
            raise ValueError("the Bot API URL takes no query, fragment or user name")
        return url

    @field_validator("private_allowed")
    @classmethod
    def _entries(cls, value: list[str]) -> list[str]:
        return [v.strip().lower() for v in value if v.strip()]


GROUP = register_group(
    ToolGroup(
        name="messaging",
        label=_("Messaging"),
        description="send_message: into another conversation of the same user, to webhook "
        "targets an admin names (behind the SSRF guard), or to Telegram chats on an allow-list.",
        settings_model=MessagingSettings,
        limits=("webhooks", "telegram_chats", "max_text_chars"),
        order=85,
    )
)
