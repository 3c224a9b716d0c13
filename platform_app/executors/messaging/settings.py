from __future__ import annotations

import re

from django.utils.translation import gettext as _
from pydantic import Field, field_validator

from tools_app.registry import GroupSettings, ToolGroup, register_group

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class MessagingSettings(GroupSettings):
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

    @field_validator("private_allowed")
    @classmethod
    def _entries(cls, value: list[str]) -> list[str]:
        return [v.strip().lower() for v in value if v.strip()]


GROUP = register_group(
    ToolGroup(
        name="messaging",
        label=_("Messaging"),
        description="send_message: into another conversation of the same user, or to webhook "
        "targets an admin names (behind the SSRF guard).",
        settings_model=MessagingSettings,
        limits=("webhooks", "max_text_chars"),
        order=85,
    )
)
