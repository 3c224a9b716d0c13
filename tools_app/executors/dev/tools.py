from __future__ import annotations

import shlex
from typing import Any

from pydantic import Field, model_validator

from tools_app import selectors
from tools_app.errors import PolicyDenied
from tools_app.executors.dev.settings import DevSettings
from tools_app.executors.file.paths import check_allowed, workspace_parts
from tools_app.executors.file.settings import FileSettings, host_folders
from tools_app.executors.shell.policy import check_command, split_argv
from tools_app.executors.shell.settings import ShellSettings
from tools_app.registry import BaseTool
from tools_app.runtime import BindContext

DEFAULT_TEST_COMMAND = "pytest -q --tb=short"
# Words a shell would treat as operators: run_tests runs one command without a shell, so a
# model writing them means something run_tests cannot do (shell_exec can).
_SHELL_WORDS = frozenset({";", "&&", "||", "|", "&", ">", ">>", "<", "<<", "2>", "2>&1"})


def pytest_command(path: str, pattern: str | None) -> str:
    """The command today's-schema arguments (``path``, ``pattern``) stood for."""
    command = f"pytest -q --tb=short {shlex.quote(path or '.')}"
    if pattern:
        command += f" -k {shlex.quote(pattern)}"
    return command


def test_argv(command: str, allowed: list[str]) -> list[str]:
    """The command as argv, or PolicyDenied when it is not one of the test commands an admin
    allows (compared word by word at its start: ``pytest``, ``python3 -m pytest``)."""
    try:
        argv = split_argv(command)
    except ValueError as exc:
        raise PolicyDenied(f"cannot split the command: {exc}") from None
    if not argv:
        raise PolicyDenied("the command is empty")
    operators = [w for w in argv if w in _SHELL_WORDS or "$(" in w or "`" in w]
    if operators:
        raise PolicyDenied(
            f"run_tests runs one test command without a shell; {operators[0]!r} would need "
            "one (use shell_exec for pipelines and lists)"
        )
    for entry in allowed:
        prefix = split_argv(entry)
        if prefix and argv[: len(prefix)] == prefix:
            return argv
    raise PolicyDenied(
        f"{command!r} is not one of the test commands an admin allows "
        f"({'; '.join(allowed) or 'none'}); an admin can add one under Dev → test commands"
    )


class RunTests(BaseTool[DevSettings], group="dev"):
    """Run the project's tests (pytest by default) and return their output, errors and
    return code."""

    command: str = Field(
        DEFAULT_TEST_COMMAND,
        min_length=1,
        max_length=2000,
        description="The full test command. Default: 'pytest -q --tb=short'.",
        examples=[DEFAULT_TEST_COMMAND],
    )
    cwd: str = Field(
        ".",
        description="Working directory, relative to the workspace (default: its root).",
        examples=["."],
    )

    @model_validator(mode="before")
    @classmethod
    def _old_arguments(cls, data: Any) -> Any:
        # Before the seed's schema: path (a test file or folder) and pattern (-k).
        if isinstance(data, dict) and ("path" in data or "pattern" in data):
            data = dict(data)
            path, pattern = data.pop("path", None), data.pop("pattern", None)
            if "command" not in data:
                data["command"] = pytest_command(str(path or "."), pattern)
        return data

    def check_policy(self, settings: DevSettings, ctx: BindContext) -> None:
        workspace_parts(self.cwd)
        test_argv(self.command, settings.test_commands)
        shell = selectors.group_settings("shell", ShellSettings)
        seen = check_command(
            self.command, allowed=shell.allowed_commands, blocked=shell.blocked_commands
        )
        if len(seen.programs) != 1:  # "pytest -q; id", "pytest $(id)": read as a shell would
            raise PolicyDenied(
                "run_tests runs one test command without a shell; this line runs "
                f"{', '.join(seen.programs) or 'nothing'} (use shell_exec for that)"
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
        files = selectors.group_settings("file", FileSettings)
        check_allowed(self.path, files.allowed_paths, host_folders(files))


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
    """List the files and folders of a directory of the workspace."""

    path: str = Field(".", description="Directory relative to the workspace.", examples=["."])
    recursive: bool = Field(False, description="Include subdirectories.")

    def check_policy(self, settings: DevSettings, ctx: BindContext) -> None:
        files = selectors.group_settings("file", FileSettings)
        check_allowed(self.path, files.allowed_paths, host_folders(files))


class SearchCode(BaseTool[DevSettings], group="dev"):
    """Search the workspace's files for a regular expression (ripgrep)."""

    pattern: str = Field(
        min_length=1, description="Regular expression to look for.", examples=["def test_"]
    )
    path: str = Field(".", description="Where to search, relative to the workspace.")
    glob: str | None = Field(None, description="Only files matching this glob, e.g. *.py.")

    def check_policy(self, settings: DevSettings, ctx: BindContext) -> None:
        workspace_parts(self.path)
