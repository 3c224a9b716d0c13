from __future__ import annotations

from typing import Any

from tools_app.errors import ToolError
from tools_app.executors.sandboxing import run_in_sandbox
from tools_app.executors.shell.settings import ShellSettings
from tools_app.executors.shell.tools import ShellExec
from tools_app.registry import activity
from tools_app.runtime import ActivityContext


def effective_timeout(requested: int | None, settings: ShellSettings) -> int:
    return min(requested or settings.timeout_seconds, settings.timeout_seconds)


@activity("shell_exec")
def shell_exec(args: ShellExec, ctx: ActivityContext[ShellSettings]) -> dict[str, Any]:
    settings = ctx.settings
    result = run_in_sandbox(
        ctx,
        settings,
        ["bash", "-c", args.command],
        timeout=effective_timeout(args.timeout, settings),
        max_output=settings.max_output_bytes,
        network=settings.allow_network,
        cwd=args.cwd,
    )
    data = {
        "exit_code": result.exit_code,
        "stdout": result.stdout,
        "stderr": result.stderr,
        "truncated": result.truncated,
    }
    if result.truncated:
        data["notice"] = f"output truncated to {settings.max_output_bytes} bytes per stream"
    if result.exit_code != 0:
        reason = f" ({result.killed_reason})" if result.killed_reason else ""
        raise ToolError(f"command exited with status {result.exit_code}{reason}", data=data)
    return data
