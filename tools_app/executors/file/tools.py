from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from tools_app.errors import PolicyDenied
from tools_app.executors.file.paths import check_allowed
from tools_app.executors.file.settings import FileSettings, host_folders
from tools_app.registry import BaseTool
from tools_app.runtime import BindContext


class _PathTool(BaseTool[FileSettings], abstract=True):
    path: str = Field(description="Path relative to the workspace, e.g. src/app.py.")
    writes: ClassVar[bool] = False

    def check_policy(self, settings: FileSettings, ctx: BindContext) -> None:
        check_allowed(
            self.path, settings.allowed_paths, host_folders(settings), write=type(self).writes
        )


class FileRead(_PathTool, group="file"):
    """Read a text file from the workspace (optionally a range of lines), or from a host
    folder an admin granted (/mnt/<name>/...)."""

    path: str = Field(
        description="Path relative to the workspace, or /mnt/<folder>/... in a host folder.",
        examples=["README.md"],
    )
    start_line: int = Field(1, ge=1, description="First line to return (1-based).")
    max_lines: int | None = Field(None, ge=1, description="How many lines (default: all).")


class FileWrite(_PathTool, group="file"):
    """Write (or append to) a text file in the workspace, or in a host folder an admin granted
    for writing (/mnt/<name>/...); parent directories are created."""

    writes: ClassVar[bool] = True
    path: str = Field(
        description="Path relative to the workspace, or /mnt/<folder>/... in a writable host "
        "folder.",
        examples=["notes.txt"],
    )
    content: str = Field(description="The text to write.", examples=["hello\n"])
    mode: Literal["overwrite", "append"] = Field("overwrite", description="overwrite or append.")

    def sink(self, settings: FileSettings) -> str:
        # The workspace stays in the conversation's sandbox; a host folder is outside it.
        return f"a write to the host folder {self.path}" if self.path.startswith("/mnt/") else ""

    def check_policy(self, settings: FileSettings, ctx: BindContext) -> None:
        super().check_policy(settings, ctx)
        size = len(self.content.encode("utf-8"))
        if size > settings.max_file_bytes:
            raise PolicyDenied(
                f"content is {size} bytes; the limit is {settings.max_file_bytes} bytes"
            )


class FileDelete(_PathTool, group="file"):
    """Delete a file (or an empty directory) in the workspace or a writable host folder."""

    def sink(self, settings: FileSettings) -> str:
        return f"a deletion in the host folder {self.path}" if self.path.startswith("/mnt/") else ""

    writes: ClassVar[bool] = True
    path: str = Field(description="Path relative to the workspace.", examples=["notes.txt"])


class FileList(_PathTool, group="file"):
    """List a directory of the workspace (optionally recursively); /mnt lists the host folders
    an admin granted."""

    path: str = Field(
        ".",
        description="Directory relative to the workspace, /mnt, or /mnt/<folder>/...",
        examples=["."],
    )
    recursive: bool = Field(False, description="Include subdirectories.")
