from __future__ import annotations

import threading
import time
from datetime import datetime
from typing import Any

from tools_app.errors import ToolCancelled, ToolError, ToolTimeout
from tools_app.executors.docker import managed
from tools_app.executors.docker.engine import client_for, container_allowed, get_container
from tools_app.executors.docker.settings import DockerSettings
from tools_app.executors.docker.tools import (
    ContainerCreate,
    ContainerRemove,
    ContainerRun,
    ContainerStop,
    DockerExec,
    DockerInspect,
    DockerListContainers,
    DockerLogs,
    DockerRestart,
    DockerStart,
    DockerStop,
)
from tools_app.executors.shell.policy import split_argv
from tools_app.registry import activity
from tools_app.runtime import ActivityContext

REDACTED = "[redacted]"


def _settings(ctx: ActivityContext[DockerSettings]) -> DockerSettings:
    return ctx.settings


def _summary(container: Any) -> dict[str, Any]:
    attrs = container.attrs
    state = attrs.get("State", {})
    health = (state.get("Health") or {}).get("Status")
    return {
        "id": container.short_id,
        "name": container.name,
        "image": (attrs.get("Config") or {}).get("Image", ""),
        "status": state.get("Status", container.status),
        "health": health,
        "restart_count": attrs.get("RestartCount", 0),
        "exit_code": state.get("ExitCode"),
        "started_at": state.get("StartedAt"),
    }


def env_shown(env: list[str], *, values: bool) -> dict[str, str]:
    """A container's ``NAME=value`` list as a dict; values often hold passwords and keys,
    so they are redacted unless the admin setting ``show_env`` allows them."""
    shown: dict[str, str] = {}
    for entry in env:
        name, _, value = entry.partition("=")
        shown[name] = value if values else REDACTED
    return dict(sorted(shown.items()))


@activity("docker_list_containers")
def docker_list_containers(
    args: DockerListContainers, ctx: ActivityContext[DockerSettings]
) -> dict[str, Any]:
    from docker.errors import DockerException

    settings = _settings(ctx)
    client = client_for(settings)
    filters = {"name": args.name} if args.name else None
    try:
        found = client.containers.list(all=args.all, filters=filters)
    except DockerException as exc:
        raise ToolError(f"Docker engine error: {exc}", permanent=False) from None
    visible = [
        c for c in found if container_allowed(c.name, c.labels or {}, settings.allowed_containers)
    ]
    rows = [_summary(c) for c in visible]
    for row in rows:
        ctx.emit_output(f"{row['name']:30} {row['status']:10} restarts={row['restart_count']}\n")
    return {"containers": rows, "count": len(rows)}


@activity("docker_inspect")
def docker_inspect(args: DockerInspect, ctx: ActivityContext[DockerSettings]) -> dict[str, Any]:
    settings = _settings(ctx)
    container = get_container(client_for(settings), args.container_id, settings)
    attrs = container.attrs
    config = attrs.get("Config") or {}
    host = attrs.get("HostConfig") or {}
    state = attrs.get("State") or {}
    return {
        **_summary(container),
        "state": {
            k: state.get(k)
            for k in (
                "Status",
                "Running",
                "Restarting",
                "OOMKilled",
                "Dead",
                "ExitCode",
                "Error",
                "StartedAt",
                "FinishedAt",
            )
        },
        "health_log": [
            h.get("Output", "")[-300:] for h in (state.get("Health") or {}).get("Log", [])
        ][-3:],
        "command": config.get("Cmd"),
        "entrypoint": config.get("Entrypoint"),
        "env": env_shown(config.get("Env") or [], values=settings.show_env),
        "labels": config.get("Labels") or {},
        "restart_policy": (host.get("RestartPolicy") or {}).get("Name"),
        "ports": (attrs.get("NetworkSettings") or {}).get("Ports"),
        "mounts": [
            {"source": m.get("Source"), "destination": m.get("Destination"), "rw": m.get("RW")}
            for m in attrs.get("Mounts") or []
        ],
        "created": attrs.get("Created"),
    }


def _since(value: str | None) -> datetime | int | None:
    if not value:
        return None
    if value.isdigit():
        return int(time.time()) - int(value)
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ToolError(f"since must be seconds or an ISO timestamp, got {value!r}") from None


@activity("docker_logs")
def docker_logs(args: DockerLogs, ctx: ActivityContext[DockerSettings]) -> dict[str, Any]:
    from docker.errors import DockerException

    settings = _settings(ctx)
    container = get_container(client_for(settings), args.container_id, settings)
    try:
        raw = container.logs(tail=args.tail, since=_since(args.since), timestamps=True)
    except DockerException as exc:
        raise ToolError(f"Docker engine error: {exc}", permanent=False) from None
    truncated = len(raw) > settings.max_log_bytes
    text = raw[-settings.max_log_bytes :].decode("utf-8", errors="replace")
    ctx.emit_output(text[-4000:])
    out: dict[str, Any] = {"container": container.name, "logs": text, "truncated": truncated}
    if truncated:
        out["notice"] = f"only the last {settings.max_log_bytes} bytes are shown"
    return out


@activity("docker_exec")
def docker_exec(args: DockerExec, ctx: ActivityContext[DockerSettings]) -> dict[str, Any]:
    from docker.errors import APIError

    settings = _settings(ctx)
    client = client_for(settings)
    container = get_container(client, args.container_id, settings)
    timeout = min(args.timeout or settings.timeout_seconds, settings.timeout_seconds)
    argv = split_argv(args.command)
    api = client.api
    try:
        exec_id = api.exec_create(container.id, argv, stdout=True, stderr=True)["Id"]
        stream = api.exec_start(exec_id, stream=True, demux=True)
    except APIError as exc:
        raise ToolError(f"docker exec failed: {exc.explanation or exc}") from None
    out: dict[str, list[str]] = {"stdout": [], "stderr": []}
    done = threading.Event()

    def pump() -> None:
        try:
            for stdout, stderr in stream:
                for name, chunk in (("stdout", stdout), ("stderr", stderr)):
                    if chunk:
                        text = chunk.decode("utf-8", errors="replace")
                        out[name].append(text)
                        ctx.emit_output(text, name)
        finally:
            done.set()

    threading.Thread(target=pump, name="docker-exec-pump", daemon=True).start()
    deadline = time.monotonic() + timeout
    while not done.wait(0.1):
        if ctx.cancel.is_set() or time.monotonic() >= deadline:
            # The engine has no "kill this exec" call; the process keeps running inside the
            # container until it ends. Say so instead of pretending it was killed.
            note = "the command may still be running inside the container"
            if ctx.cancel.is_set():
                raise ToolCancelled(f"cancelled by the user; {note}")
            raise ToolTimeout(timeout)
    exit_code = api.exec_inspect(exec_id).get("ExitCode")
    data = {
        "container": container.name,
        "argv": argv,
        "exit_code": exit_code,
        "stdout": "".join(out["stdout"])[-settings.max_log_bytes :],
        "stderr": "".join(out["stderr"])[-settings.max_log_bytes :],
    }
    if exit_code != 0:
        raise ToolError(f"command exited with status {exit_code}", data=data)
    return data


def _lifecycle(ctx: ActivityContext[DockerSettings], ident: str, action: str) -> dict[str, Any]:
    from docker.errors import DockerException

    settings = _settings(ctx)
    container = get_container(client_for(settings), ident, settings)
    try:
        if action == "start":
            container.start()
        elif action == "stop":
            container.stop(timeout=min(10, settings.timeout_seconds))
        else:
            container.restart(timeout=min(10, settings.timeout_seconds))
        container.reload()
    except DockerException as exc:
        raise ToolError(f"docker {action} failed: {exc}") from None
    ctx.emit_output(f"{container.name}: {container.status}\n")
    return {"action": action, **_summary(container)}


@activity("docker_start")
def docker_start(args: DockerStart, ctx: ActivityContext[DockerSettings]) -> dict[str, Any]:
    return _lifecycle(ctx, args.container_id, "start")


@activity("docker_stop")
def docker_stop(args: DockerStop, ctx: ActivityContext[DockerSettings]) -> dict[str, Any]:
    return _lifecycle(ctx, args.container_id, "stop")


@activity("docker_restart")
def docker_restart(args: DockerRestart, ctx: ActivityContext[DockerSettings]) -> dict[str, Any]:
    return _lifecycle(ctx, args.container_id, "restart")


# --- containers the tool creates ----------------------------------------------------------
@activity("container_create")
def container_create(args: ContainerCreate, ctx: ActivityContext[DockerSettings]) -> dict[str, Any]:
    container = managed.container_make(args, ctx, start=False)
    return {"action": "create", **managed.describe(container)}


@activity("container_run")
def container_run(args: ContainerRun, ctx: ActivityContext[DockerSettings]) -> dict[str, Any]:
    container = managed.container_make(args, ctx, start=True)
    if not args.detach:
        return {"action": "run", **managed.run_to_end(container, ctx)}
    return {"action": "run", **managed.describe(container)}


@activity("container_stop")
def container_stop(args: ContainerStop, ctx: ActivityContext[DockerSettings]) -> dict[str, Any]:
    return managed.container_act(args.container_id, ctx, "stop")


@activity("container_remove")
def container_remove(args: ContainerRemove, ctx: ActivityContext[DockerSettings]) -> dict[str, Any]:
    return managed.container_act(args.container_id, ctx, "remove", force=args.force)
