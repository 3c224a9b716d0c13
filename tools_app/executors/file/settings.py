from __future__ import annotations

from pydantic import Field, field_validator

from tools_app.executors.file.paths import normalise_allowed
from tools_app.executors.sandboxing import SandboxedSettings
from tools_app.registry import ToolGroup, register_group


class FileSettings(SandboxedSettings):
    timeout_seconds: int = Field(30, ge=1, le=600, description="Longest an operation may run (s).")
    allowed_paths: list[str] = Field(
        default_factory=lambda: ["."],
        description="Workspace-relative paths the file tools may touch, one per line "
        "('.' = the whole workspace).",
    )
    max_file_bytes: int = Field(
        1_000_000,
        ge=1,
        le=100_000_000,
        description="Larger writes are refused; larger reads are cut with a notice (bytes).",
    )

    @field_validator("allowed_paths")
    @classmethod
    def _relative_paths(cls, value: list[str]) -> list[str]:
        return normalise_allowed(value)


GROUP = register_group(
    ToolGroup(
        name="file",
        label="File",
        description="Read, write, delete and list files in the conversation's workspace.",
        settings_model=FileSettings,
        order=20,
        sandboxed=True,
    )
)
