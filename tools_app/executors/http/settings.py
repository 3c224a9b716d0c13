from __future__ import annotations

from django.utils.translation import gettext as _
from pydantic import Field, field_validator

from tools_app.registry import GroupSettings, ToolGroup, register_group


class HttpSettings(GroupSettings):
    timeout_seconds: int = Field(30, ge=1, le=600, description="Longest a request may take (s).")
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Hosts the tool may reach, one per line; globs like *.github.com "
        "(empty: any public host).",
    )
    private_allowed: list[str] = Field(
        default_factory=list,
        description="Private or loopback hosts, IPs or CIDRs explicitly allowed despite the "
        "SSRF guard (e.g. an intranet service), one per line.",
    )
    max_response_bytes: int = Field(
        1_000_000, ge=1_000, le=50_000_000, description="Body kept per response (bytes)."
    )
    follow_redirects: bool = Field(True, description="Follow redirects (each hop re-checked).")
    max_redirects: int = Field(5, ge=0, le=20, description="Most redirects followed.")

    @field_validator("allowed_hosts", "private_allowed")
    @classmethod
    def _entries(cls, value: list[str]) -> list[str]:
        return [v.strip().lower() for v in value if v.strip()]


GROUP = register_group(
    ToolGroup(
        name="http",
        untrusted_source="web pages",
        label=_("HTTP"),
        description="HTTP requests to allowed hosts, behind an SSRF guard (no private, loopback "
        "or metadata addresses unless an admin allows them).",
        settings_model=HttpSettings,
        limits=("timeout_seconds", "allowed_hosts", "max_response_bytes"),
        order=40,
    )
)
