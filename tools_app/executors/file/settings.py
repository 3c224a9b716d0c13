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

    upload_max_mb: int = Field(
        0,
        ge=0,
        le=1024,
        description="Largest file a person may upload into a conversation's workspace (MB); "
        "0: the UPLOAD_MAX_MB setting. Never above MAX_REQUEST_BODY_BYTES.",
    )
    upload_allowed_types: list[str] = Field(
        default_factory=list,
        description="File extensions people may upload, one per line ('*': any); "
        "empty: the UPLOAD_ALLOWED_TYPES setting.",
    )

    @field_validator("upload_allowed_types")
    @classmethod
    def _extensions(cls, value: list[str]) -> list[str]:
        out = []
        for raw in value:
            ext = raw.strip().lower().lstrip(".")
            if not ext:
                continue
            if ext != "*" and not ext.replace("-", "").replace("_", "").isalnum():
                raise ValueError(f"{raw!r} is not a file extension (e.g. csv, or * for any)")
            out.append(ext)
        return out

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
        limits=("timeout_seconds", "allowed_paths", "max_file_bytes"),
        order=20,
        sandboxed=True,
    )
)
