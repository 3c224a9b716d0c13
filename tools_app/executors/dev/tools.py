from __future__ import annotations

import shlex

from pydantic import Field

from tools_app import selectors
from tools_app.executors.dev.settings import DevSettings
from tools_app.executors.file.paths import check_allowed, workspace_parts
from tools_app.executors.file.settings import FileSettings
from tools_app.executors.shell.policy import check_command
from tools_app.executors.shell.settings import ShellSettings
from tools_app.registry import BaseTool
from tools_app.runtime import BindContext


def pytest_command(path: str, pattern: str | None) -> str:
    command = f"python3 -m pytest -q {shlex.quote(path or '.')}"
    if pattern:
        command += f" -k {shlex.quote(pattern)}"
    return command


class RunTests(BaseTool[DevSettings], group="dev"):
    """Run the workspace's tests with pytest and return the exit code and output."""

    path: str = Field(
        ".", description="Test file or directory, relative to the workspace.", examples=["."]
    )
    pattern: str | None = Field(None, description="Only tests matching this -k expression.")

    def check_policy(self, settings: DevSettings, ctx: BindContext) -> None:
        workspace_parts(self.path)
        shell = selectors.group_settings("shell", ShellSettings)
        check_command(
            pytest_command(self.path, self.pattern),
            allowed=shell.allowed_commands,
            blocked=shell.blocked_commands,
        )


class GitStatus(BaseTool[DevSettings], group="dev"):
    """Show the workspace repository's status (a repository is created if there is none)."""


class GitAdd(BaseTool[DevSettings], group="dev"):
    """Stage files for the next commit."""

    files: list[str] = Field(
        min_length=1, description="Paths to stage, relative to the workspace.", examples=[["."]]
    )

    def check_policy(self, settings: DevSettings, ctx: BindContext) -> None:
        for path in self.files:
            workspace_parts(path)


class GitCommit(BaseTool[DevSettings], group="dev"):
    """Commit the staged changes with a message."""

    message: str = Field(
        min_length=1,
        max_length=5000,
        description="The commit message.",
        examples=["Fix the failing test"],
    )


class ReadFile(BaseTool[DevSettings], group="dev", activity="file_read"):
    """Read a file of the workspace."""

    path: str = Field(description="Path relative to the workspace.", examples=["README.md"])

    def check_policy(self, settings: DevSettings, ctx: BindContext) -> None:
        check_allowed(self.path, selectors.group_settings("file", FileSettings).allowed_paths)


class WriteFile(BaseTool[DevSettings], group="dev", activity="file_write"):
    """Write a file of the workspace (created with its directories, or overwritten)."""

    path: str = Field(description="Path relative to the workspace.", examples=["notes.txt"])
    content: str = Field(description="The full new content of the file.", examples=["hi\n"])

    def check_policy(self, settings: DevSettings, ctx: BindContext) -> None:
        from tools_app.executors.file.tools import FileWrite

        file_settings = selectors.group_settings("file", FileSettings)
        FileWrite(path=self.path, content=self.content, mode="overwrite").check_policy(
            file_settings, ctx
        )


class ListDirectory(BaseTool[DevSettings], group="dev", activity="file_list"):
    """List a directory of the workspace."""

    path: str = Field(".", description="Directory relative to the workspace.", examples=["."])

    def check_policy(self, settings: DevSettings, ctx: BindContext) -> None:
        check_allowed(self.path, selectors.group_settings("file", FileSettings).allowed_paths)


class SearchCode(BaseTool[DevSettings], group="dev"):
    """Search the workspace's files for a regular expression (ripgrep)."""

    pattern: str = Field(
        min_length=1, description="Regular expression to look for.", examples=["def test_"]
    )
    path: str = Field(".", description="Where to search, relative to the workspace.")
    glob: str | None = Field(None, description="Only files matching this glob, e.g. *.py.")

    def check_policy(self, settings: DevSettings, ctx: BindContext) -> None:
        workspace_parts(self.path)
