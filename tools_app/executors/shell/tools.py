from __future__ import annotations

from typing import Any

from pydantic import Field

from tools_app.errors import PolicyDenied
from tools_app.executors.shell.policy import check_command
from tools_app.executors.shell.settings import ShellSettings
from tools_app.registry import BaseTool
from tools_app.runtime import BindContext


class ShellExec(BaseTool[ShellSettings], group="shell", slash="shell"):
    """Run a shell command line (bash) in the workspace and return its exit code and output."""

    command: str = Field(
        description="The command line, e.g. `ls -la` or `pytest -q`.", examples=["ls -la"]
    )
    timeout: int | None = Field(
        None, ge=1, description="Seconds before the command is killed (capped by the admin)."
    )
    cwd: str = Field(".", description="Working directory, relative to the workspace.")

    @classmethod
    def from_shorthand(cls, text: str) -> dict[str, Any]:
        return {"command": text}

    def sink(self, settings: ShellSettings) -> str:
        return "a shell command with network access" if settings.allow_network else ""

    def check_policy(self, settings: ShellSettings, ctx: BindContext) -> None:
        if len(self.command) > settings.max_command_chars:
            raise PolicyDenied(
                f"the command line is {len(self.command)} characters; the limit is "
                f"{settings.max_command_chars}"
            )
        check_command(
            self.command, allowed=settings.allowed_commands, blocked=settings.blocked_commands
        )
