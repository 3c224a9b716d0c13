from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _
from pydantic import Field

from tools_app.registry import GroupSettings, ToolGroup, register_group


class AgentToolSettings(GroupSettings):
    timeout_seconds: int = Field(15, ge=1, le=120, description="Longest a call may run (s).")
    max_report_bytes: int = Field(
        1_000_000,
        ge=1_000,
        le=20_000_000,
        description="Largest report create_report may write (UTF-8 bytes of its content).",
    )
    max_reports_per_user: int = Field(
        200,
        ge=1,
        le=100_000,
        description="Reports one user may keep across their conversations; create_report is "
        "refused above it until old ones are deleted.",
    )
    max_report_bytes_per_user: int = Field(
        50_000_000,
        ge=1_000,
        le=10_000_000_000,
        description="Bytes of reports one user may keep across their conversations.",
    )
    reports_folder: str = Field(
        "reports",
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$",
        description="Folder of the conversation's workspace that holds its reports.",
    )


def agent_status(settings: Any) -> tuple[str, str, str]:
    return (
        "ok",
        "no sandbox",
        f"runs in the worker; reports go to <workspace>/{settings.reports_folder}/",
    )


GROUP = register_group(
    ToolGroup(
        name="agent",
        label=_("Agent"),
        description="System tools of schema-guided agents: reasoning, plan, clarification "
        "(pauses the turn), final answer (ends it) and report (a Markdown file per "
        "conversation). Offered to agent profiles of kind sgr / sgr_tool_calling, or when "
        "a profile lists them.",
        settings_model=AgentToolSettings,
        limits=("max_report_bytes", "max_reports_per_user"),
        order=88,
        status=agent_status,
    )
)
