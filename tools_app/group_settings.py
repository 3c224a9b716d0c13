"""The base of every tool group's admin-editable settings.

Its own module so that ``tools_app.runtime`` (whose contexts carry a group's settings) and
``tools_app.registry`` (whose groups name their settings model) both build on it without
importing each other. Executors import it from the registry, next to ``ToolGroup``.
"""

from __future__ import annotations

from typing import Literal, TypeVar
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

# What a guard does with what it found (tools_app.guards): let it through, blank it out, have a
# person decide (arguments only: a result has nobody to wait for), or refuse the call.
GuardAction = Literal["allow", "redact", "approval", "block"]
OutputGuardAction = Literal["allow", "redact", "block"]


class GroupSettings(BaseModel):
    """Settings every tool group has. Executors subclass it and add their own fields."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    timeout_seconds: int = Field(
        30, ge=1, le=3600, description="Longest a call may run before it is killed (s)."
    )
    calls_per_minute: int = Field(
        0, ge=0, le=10_000, description="Per-tool calls allowed per minute (0 = unlimited)."
    )
    explain_why: bool = Field(
        False,
        description="Explain why: every function of this group asks the model to say why it "
        "calls it (_reasoningForCall, shown on the card); a function's own switch turns it "
        "on for that function alone.",
    )
    # --- guards on the arguments and the result (tools_app.guards) ---
    guard_secrets_arguments: GuardAction = Field(
        "approval",
        description="Secrets (keys, tokens, private keys) in a call's arguments: what to do.",
    )
    guard_secrets_result: OutputGuardAction = Field(
        "redact", description="Secrets in a call's result, before the model reads it."
    )
    guard_pii_arguments: GuardAction = Field(
        "allow", description="Personal data (e-mail, phone, card, IBAN) in the arguments."
    )
    guard_pii_result: OutputGuardAction = Field(
        "allow", description="Personal data in a call's result, before the model reads it."
    )
    filter_url: str = Field(
        "",
        description="Filter webhook: an https:// endpoint asked about every call of this "
        "group (empty: none).",
    )
    filter_secret: SecretStr = Field(
        SecretStr(""), description="Key the filter webhook's requests are signed with."
    )
    filter_timeout_seconds: int = Field(
        5, ge=1, le=60, description="Longest the filter webhook may take to answer (s)."
    )
    filter_on_failure: Literal["closed", "open"] = Field(
        "closed",
        description="When the filter webhook fails or answers nonsense: refuse the call "
        "(closed) or let it through (open).",
    )
    filter_private_hosts: list[str] = Field(
        default_factory=list,
        description="Hosts of the filter webhook that may be on a private address (and may "
        "use http://), one per line.",
    )

    @field_validator("filter_url")
    @classmethod
    def _filter_url_shape(cls, value: str) -> str:
        value = value.strip()
        if not value:
            return value
        parts = urlsplit(value)
        if parts.scheme not in ("https", "http") or not parts.hostname:
            raise ValueError("the filter webhook must be an https:// URL with a host")
        if parts.username or parts.password:
            raise ValueError("credentials in the URL are not allowed; the signature authenticates")
        return value


# A group's own settings model, as tools (``BaseTool[ShellSettings]``) and activities
# (``ActivityContext[ShellSettings]``) name it: their settings are typed where they are used.
SettingsT = TypeVar("SettingsT", bound=GroupSettings)
