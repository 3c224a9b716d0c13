"""What every sandboxed executor shares: the backend setting and one way to run a command.

Executors never talk to a backend directly: ``run_in_sandbox`` turns the sandbox's outcome
into the typed errors the rest of the system understands (timeout, cancel, broken sandbox) and
streams output to the card.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from infra import tracing
from tools_app.errors import ToolCancelled, ToolError, ToolTimeout
from tools_app.registry import GroupSettings
from tools_app.runtime import ActivityContext
from tools_app.sandbox import ExecRequest, ExecResult, SandboxError, get_sandbox
from tools_app.sandbox.base import Mount, Sandbox

Backend = Literal["auto", "docker", "bubblewrap", "none"]

# Python writes .pyc files keyed by the source's mtime in whole seconds: an agent that edits a
# module and re-runs it within the same second would run the stale bytecode.
COMMAND_ENV = {"PYTHONDONTWRITEBYTECODE": "1"}


class SandboxedSettings(GroupSettings):
    sandbox_backend: Backend = Field(
        "auto",
        description="Where commands run: auto (Docker if reachable, else bubblewrap), docker, "
        "bubblewrap, or none (directly on the worker host — no isolation).",
    )


def sandbox_for(settings: SandboxedSettings) -> Sandbox:
    """The sandbox the group's settings name (SandboxError when it is not there)."""
    backend = None if settings.sandbox_backend == "auto" else settings.sandbox_backend
    return get_sandbox(backend)


def run_in_sandbox(
    ctx: ActivityContext,
    settings: SandboxedSettings,
    argv: list[str],
    *,
    timeout: float,
    max_output: int = 1_000_000,
    network: bool = False,
    stdin: bytes | None = None,
    env: dict[str, str] | None = None,
    cwd: str = "/workspace",
    stream: bool = True,
    mounts: tuple[Mount, ...] = (),
) -> ExecResult:
    try:
        sandbox = sandbox_for(settings)
        ctx.extra["sandbox_backend"] = sandbox.name
        with tracing.span("sandbox exec", attributes={"cc.sandbox.backend": sandbox.name}) as span:
            # The command may continue the trace (the OTel convention for environment carriers).
            traced = {"TRACEPARENT": tracing.current_traceparent()} if span is not None else {}
            request = ExecRequest(
                argv=argv,
                cwd=cwd,
                env={**COMMAND_ENV, **traced, **(env or {})},
                stdin=stdin,
                timeout=timeout,
                max_output=max_output,
                network=network,
                mounts=mounts if sandbox.name != "none" else (),
            )
            result = sandbox.exec(
                ctx.workspace_id,
                ctx.workspace_dir,
                request,
                # Sandboxes call back with (stream, text); emit_output takes (text, stream).
                on_output=(lambda name, text: ctx.emit_output(text, name)) if stream else None,
                cancel=ctx.cancel,
            )
            if span is not None:
                span.set_attributes(
                    {
                        "cc.sandbox.id": result.sandbox_id,
                        "cc.sandbox.exit_code": -1
                        if result.exit_code is None
                        else result.exit_code,
                        "cc.sandbox.timed_out": result.timed_out,
                    }
                )
    except SandboxError as exc:
        raise ToolError(f"sandbox unavailable: {exc}", permanent=False) from exc
    except ValueError as exc:  # a request the sandbox refuses (e.g. cwd outside /workspace)
        raise ToolError(str(exc)) from exc
    ctx.sandbox_id = result.sandbox_id
    if result.cancelled:
        raise ToolCancelled()
    if result.timed_out:
        raise ToolTimeout(timeout, output=result.stdout + result.stderr)
    return result
