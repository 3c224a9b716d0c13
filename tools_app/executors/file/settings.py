from __future__ import annotations

from pathlib import Path

from django.conf import settings as django_settings
from django.utils.translation import gettext as _
from pydantic import Field, field_validator

from tools_app.executors.file.paths import HostFolder, normalise_allowed, parse_host_folder
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

    host_folders: list[str] = Field(
        default_factory=list,
        description="Folders of the worker host the file tools may use, one per line: "
        "name=/absolute/path (read-only) or name=/absolute/path rw. Each appears in the "
        "sandbox as /mnt/<name>; links in it never lead out, and nothing is written through "
        "one. The sandbox user (SANDBOX_UID) must be able to read (and for rw, write) it.",
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

    @field_validator("host_folders")
    @classmethod
    def _folders(cls, value: list[str]) -> list[str]:
        forbidden = tuple(
            Path(p).resolve() for p in (django_settings.VAR_DIR, django_settings.WORKSPACES_DIR)
        )
        out, names = [], set()
        for raw in value:
            if not raw.strip():
                continue
            folder = parse_host_folder(raw, forbidden=forbidden)
            if folder.name in names:
                raise ValueError(f"{raw!r}: the name {folder.name!r} is used twice")
            names.add(folder.name)
            out.append(folder.entry())
        return out

    @field_validator("allowed_paths")
    @classmethod
    def _relative_paths(cls, value: list[str]) -> list[str]:
        return normalise_allowed(value)


def host_folders(settings: FileSettings) -> list[HostFolder]:
    return [parse_host_folder(entry) for entry in settings.host_folders]


GROUP = register_group(
    ToolGroup(
        name="file",
        label=_("File"),
        description="Read, write, delete and list files in the conversation's workspace.",
        settings_model=FileSettings,
        limits=("timeout_seconds", "allowed_paths", "host_folders", "max_file_bytes"),
        order=20,
        sandboxed=True,
    )
)
