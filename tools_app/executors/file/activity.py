"""File activities: each runs ``sandbox_helper.py`` inside the sandbox, so paths are resolved
where the command runs (the sandbox is the boundary if a check here ever misses)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from tools_app.errors import PolicyDenied, ToolError
from tools_app.executors.file.settings import FileSettings, host_folders
from tools_app.executors.sandboxing import run_in_sandbox, sandbox_for
from tools_app.registry import activity
from tools_app.runtime import ActivityContext
from tools_app.sandbox.base import Mount, SandboxError


@cache
def _helper_source() -> str:
    return (Path(__file__).with_name("sandbox_helper.py")).read_text()


def _host_folders(
    settings: FileSettings,
) -> tuple[dict[str, dict[str, Any]], tuple[Mount, ...]]:
    """What the helper is told of the granted host folders (where each is, whether it is
    writable), and the mounts that put them at /mnt/<name> in the sandbox. Without a
    sandbox ("none") the helper runs on the host and opens them where they are."""
    folders = host_folders(settings)
    if not folders:
        return {}, ()
    try:
        direct = sandbox_for(settings).name == "none"
    except SandboxError:
        direct = False  # run_in_sandbox says why
    for folder in folders:
        if not folder.path.is_dir():
            raise ToolError(
                f"host folder {folder.target} ({folder.path}) is not there on this worker"
            )
    described = {
        f.name: {"path": str(f.path) if direct else f.target, "rw": f.writable} for f in folders
    }
    mounts = () if direct else tuple(Mount(f.path, f.target, f.writable) for f in folders)
    return described, mounts


def run_file_op(ctx: ActivityContext[FileSettings], op: str, **request: Any) -> dict[str, Any]:
    settings = ctx.settings
    folders, mounts = _host_folders(settings)
    payload = {
        "op": op,
        "allowed": settings.allowed_paths,
        "max_bytes": settings.max_file_bytes,
        "folders": folders,
        **request,
    }
    result = run_in_sandbox(
        ctx,
        settings,
        ["python3", "-I", "-S", "-c", _helper_source()],
        timeout=float(settings.timeout_seconds),
        stdin=json.dumps(payload).encode("utf-8"),
        max_output=settings.max_file_bytes * 2 + 1_000_000,
        stream=False,
        mounts=mounts,
    )
    try:
        answer = json.loads(result.stdout)
    except json.JSONDecodeError:
        detail = (result.stderr or result.stdout).strip()[-500:]
        raise ToolError(f"file operation failed (exit {result.exit_code}): {detail}") from None
    if not answer.pop("ok"):
        if answer.get("kind") == "denied":
            raise PolicyDenied(answer["error"])
        raise ToolError(answer["error"])
    return answer


@activity("file_read")
def file_read(args: Any, ctx: ActivityContext[FileSettings]) -> dict[str, Any]:
    out = run_file_op(
        ctx,
        "read",
        path=args.path,
        start_line=getattr(args, "start_line", 1),
        max_lines=getattr(args, "max_lines", None),
    )
    ctx.emit_output(f"read {out['path']} ({out['size']} bytes)\n")
    return out


@activity("file_write")
def file_write(args: Any, ctx: ActivityContext[FileSettings]) -> dict[str, Any]:
    out = run_file_op(
        ctx, "write", path=args.path, content=args.content, mode=getattr(args, "mode", "overwrite")
    )
    ctx.emit_output(f"wrote {out['size_bytes']} bytes to {out['path']}\n")
    return out


@activity("file_delete")
def file_delete(args: Any, ctx: ActivityContext[FileSettings]) -> dict[str, Any]:
    out = run_file_op(ctx, "delete", path=args.path)
    ctx.emit_output(f"deleted {out['deleted']} {out['path']}\n")
    return out


@activity("file_list")
def file_list(args: Any, ctx: ActivityContext[FileSettings]) -> dict[str, Any]:
    out = run_file_op(
        ctx,
        "list",
        path=getattr(args, "path", ".") or ".",
        recursive=getattr(args, "recursive", False),
    )
    ctx.emit_output(f"{out['count']} entries in {out['path']}\n")
    return out
