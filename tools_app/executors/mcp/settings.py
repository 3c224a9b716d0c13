from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from tools_app.executors.sandboxing import SandboxedSettings
from tools_app.registry import ToolGroup

STARTUP_TIMEOUT_MAX = 600  # seconds; also bounds how long a refresh may run (services)


class McpSettings(SandboxedSettings):
    timeout_seconds: int = Field(60, ge=1, le=3600, description="Longest a call may run (s).")
    workspace: Literal["shared", "conversation"] = Field(
        "shared",
        description="stdio servers: the files they see at /workspace — one workspace shared "
        "by every call of this server, or the calling conversation's own.",
    )
    network: bool = Field(
        False, description="stdio servers: network access for the server (Docker sandbox only)."
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="HTTP servers: hosts the server URL may use, one per line.",
    )
    private_allowed: list[str] = Field(
        default_factory=list,
        description="HTTP servers: private or loopback hosts/IPs allowed despite the SSRF "
        "guard, one per line.",
    )
    startup_timeout_seconds: int = Field(
        60,
        ge=1,
        le=STARTUP_TIMEOUT_MAX,
        description="Longest a server may take to start and answer (s).",
    )
    max_result_chars: int = Field(
        15_000,
        ge=500,
        le=1_000_000,
        description="Characters of a tool result the model gets (text, resources and "
        "structured content together); the rest is cut with a 'truncated, N more' marker, so "
        "one answer cannot fill a small model's context.",
    )
    idle_shutdown_seconds: int = Field(
        600, ge=0, le=86_400, description="Stop a worker's session after this idle time (0: never)."
    )

    @field_validator("allowed_hosts", "private_allowed")
    @classmethod
    def _entries(cls, value: list[str]) -> list[str]:
        return [v.strip().lower() for v in value if v.strip()]


def mcp_group(source: Any) -> ToolGroup:
    transport = (source.config or {}).get("transport", "stdio")

    def status(settings: Any) -> tuple[str, str, str]:
        url = (source.config or {}).get("url", "")
        return "ok", f"MCP {transport}", url

    return ToolGroup(
        name=source.group_name,
        untrusted_source="an imported MCP server",
        label=source.label or source.name,
        description=source.description or f"Tools of the MCP server {source.name!r}.",
        settings_model=McpSettings,
        limits=("timeout_seconds", "max_result_chars", "network"),
        order=250,
        sandboxed=transport == "stdio",
        status=None if transport == "stdio" else status,
    )
