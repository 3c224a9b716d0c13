from __future__ import annotations

import shlex

from django.utils.translation import gettext as _
from pydantic import Field, field_validator

from tools_app.executors.sandboxing import SandboxedSettings
from tools_app.registry import ToolGroup, register_group


class DevSettings(SandboxedSettings):
    timeout_seconds: int = Field(300, ge=1, le=3600, description="Longest a call may run (s).")
    max_output_bytes: int = Field(
        200_000, ge=1_000, le=50_000_000, description="Output kept per stream (bytes)."
    )
    git_author_name: str = Field("Control Center agent", description="Author of agent commits.")
    git_author_email: str = Field("agent@controlcenter.local", description="Their e-mail.")
    test_commands: list[str] = Field(
        default_factory=lambda: ["pytest", "python3 -m pytest", "python -m pytest"],
        description="Commands run_tests may run, one per line: a call's command must start "
        "with one of them, word by word (pytest -q tests/ starts with pytest). The Shell "
        "group's allow/block lists apply too.",
    )
    max_search_results: int = Field(
        200, ge=1, le=10_000, description="Matches search_code returns."
    )

    @field_validator("test_commands")
    @classmethod
    def _commands(cls, value: list[str]) -> list[str]:
        out = []
        for raw in value:
            entry = " ".join(raw.split())
            if not entry:
                continue
            try:
                words = shlex.split(entry)
            except ValueError as exc:
                raise ValueError(f"{raw!r}: {exc}") from None
            out.append(shlex.join(words))
        return list(dict.fromkeys(out))


GROUP = register_group(
    ToolGroup(
        name="dev",
        label=_("Dev"),
        description="A coding agent's toolset: run tests, git, code search, read/write files. "
        "run_tests obeys the Shell allow/block lists; the file tools obey the File settings.",
        settings_model=DevSettings,
        limits=("timeout_seconds", "test_commands", "max_output_bytes"),
        order=30,
        sandboxed=True,
    )
)
