from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from tools_app.registry import GroupSettings, ToolGroup


class OpenApiSettings(GroupSettings):
    timeout_seconds: int = Field(30, ge=1, le=600, description="Longest a request may take (s).")
    base_url: str = Field("", description="Where the API is served (from the document's servers).")
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Hosts these functions may reach, one per line (the base URL's host).",
    )
    private_allowed: list[str] = Field(
        default_factory=list,
        description="Private or loopback hosts, IPs or CIDRs allowed despite the SSRF guard "
        "(e.g. an API on this machine), one per line.",
    )
    max_response_bytes: int = Field(
        1_000_000, ge=1_000, le=50_000_000, description="Body kept per response (bytes)."
    )
    follow_redirects: bool = Field(False, description="Follow redirects (each hop re-checked).")

    @field_validator("allowed_hosts", "private_allowed")
    @classmethod
    def _entries(cls, value: list[str]) -> list[str]:
        return [v.strip().lower() for v in value if v.strip()]

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        value = value.strip()
        if value and not value.startswith(("http://", "https://")):
            raise ValueError("the base URL must start with http:// or https://")
        return value.rstrip("/")


def openapi_group(source: Any) -> ToolGroup:
    def status(settings: Any) -> tuple[str, str, str]:
        base = getattr(settings, "base_url", "") or "no base URL"
        return ("ok" if settings.base_url else "bad"), "OpenAPI", base

    return ToolGroup(
        name=source.group_name,
        untrusted_source="an imported API",
        label=source.label or source.name,
        description=source.description or "Operations imported from an OpenAPI document.",
        settings_model=OpenApiSettings,
        limits=("timeout_seconds", "allowed_hosts", "max_response_bytes"),
        order=300,
        status=status,
    )
