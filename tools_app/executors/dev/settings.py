from __future__ import annotations

from django.utils.translation import gettext as _
from pydantic import Field

from tools_app.executors.sandboxing import SandboxedSettings
from tools_app.registry import ToolGroup, register_group


class DevSettings(SandboxedSettings):
    timeout_seconds: int = Field(300, ge=1, le=3600, description="Longest a call may run (s).")
    max_output_bytes: int = Field(
        200_000, ge=1_000, le=50_000_000, description="Output kept per stream (bytes)."
    )
    git_author_name: str = Field("Control Center agent", description="Author of agent commits.")
    git_author_email: str = Field("agent@controlcenter.local", description="Their e-mail.")
    max_search_results: int = Field(
        200, ge=1, le=10_000, description="Matches search_code returns."
    )


GROUP = register_group(
    ToolGroup(
        name="dev",
        label=_("Dev"),
        description="A coding agent's toolset: run tests, git, code search, read/write files. "
        "run_tests obeys the Shell allow/block lists; the file tools obey the File settings.",
        settings_model=DevSettings,
        order=30,
        sandboxed=True,
    )
)
