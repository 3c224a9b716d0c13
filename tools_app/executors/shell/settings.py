from __future__ import annotations

from django.utils.translation import gettext as _
from pydantic import Field, field_validator

from tools_app.executors.sandboxing import SandboxedSettings
from tools_app.executors.shell.patterns import is_pattern, parse_pattern
from tools_app.registry import ToolGroup, register_group


class ShellSettings(SandboxedSettings):
    timeout_seconds: int = Field(60, ge=1, le=3600, description="Longest a command may run (s).")
    allowed_commands: list[str] = Field(
        default_factory=list,
        description="Programs a command line may run, one per line (empty: any program; "
        "the sandbox still applies).",
    )
    blocked_commands: list[str] = Field(
        default_factory=list,
        description="Programs never allowed, one per line; an entry with arguments is a "
        "command pattern (rm -rf: rm with -r and -f, however written).",
    )
    allow_network: bool = Field(False, description="Give commands network access.")
    max_output_bytes: int = Field(
        200_000, ge=1_000, le=50_000_000, description="Output kept per stream (bytes)."
    )
    max_command_chars: int = Field(
        10_000, ge=100, le=100_000, description="Longest command line accepted (characters)."
    )

    @field_validator("allowed_commands")
    @classmethod
    def _program_names(cls, value: list[str]) -> list[str]:
        names = [v.strip() for v in value if v.strip()]
        bad = [n for n in names if any(c.isspace() for c in n)]
        if bad:
            raise ValueError(f"entries are program names without spaces: {', '.join(bad)}")
        return names

    @field_validator("blocked_commands")
    @classmethod
    def _names_or_patterns(cls, value: list[str]) -> list[str]:
        out = []
        for entry in (v.strip() for v in value if v.strip()):
            if not is_pattern(entry):
                out.append(entry)
                continue
            try:
                out.append(parse_pattern(entry).text)
            except ValueError as exc:
                raise ValueError(f"not a program name or a command pattern: {exc}") from None
        return list(dict.fromkeys(out))


GROUP = register_group(
    ToolGroup(
        name="shell",
        label=_("Shell"),
        description="Run command lines in the conversation's sandboxed workspace.",
        settings_model=ShellSettings,
        limits=("timeout_seconds", "allowed_commands", "blocked_commands", "allow_network"),
        order=10,
        sandboxed=True,
    )
)
