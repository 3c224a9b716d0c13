"""The containers the Docker tool creates itself (seed 003: "create an nginx container and
check its status"): made from an image an admin allows, with the admin's resource limits,
no host files, devices or privileges, and labels that say they are the tool's — so
``container_stop`` and ``container_remove`` act on those and nothing else.

Labels: ``controlcenter.tool`` (the deployment's namespace, as the sandbox pool's label:
two deployments on one engine never touch each other's), ``controlcenter.tool.user`` (who
created it: a non-admin may stop and remove only their own) and the conversation and call.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from django.conf import settings as django_settings

from tools_app.errors import PolicyDenied, ToolCancelled, ToolError, ToolTimeout
from tools_app.executors.docker.engine import client_for
from tools_app.executors.docker.settings import DockerSettings
from tools_app.executors.docker.tools import ContainerCreate, image_ref, is_staff, parse_ports
from tools_app.executors.shell.policy import split_argv
from tools_app.runtime import ActivityContext

LABEL = "controlcenter.tool"
LABEL_USER = "controlcenter.tool.user"
LABEL_CONVERSATION = "controlcenter.tool.conversation"
LABEL_CALL = "controlcenter.tool.call"
PREFIX = "cctool-"


def namespace() -> str:
    """This deployment's label value (the sandbox pool's, so the same rule holds)."""
    from tools_app.sandbox.selection import deployment_label

    return str(django_settings.SANDBOX_POOL_LABEL or deployment_label())


def _engine_error(action: str, exc: Exception) -> ToolError:
    explanation = getattr(exc, "explanation", None) or str(exc)
    return ToolError(f"docker {action} failed: {explanation}", permanent=False)


def managed_count(client: Any) -> int:
    return len(client.containers.list(all=True, filters={"label": f"{LABEL}={namespace()}"}))


def container_spec(
    args: ContainerCreate, settings: DockerSettings, *, labels: dict[str, str]
) -> dict[str, Any]:
    """The arguments of ``containers.create`` for this call: what runs, and the limits an
    admin set (the approval preview shows exactly this)."""
    from infra.env import parse_size

    memory = parse_size(settings.container_memory)
    ports = parse_ports(args.ports)
    kwargs: dict[str, Any] = {
        "image": image_ref(args.image),
        "command": split_argv(args.command) if args.command else None,
        "environment": list(args.env),
        "labels": labels,
        "detach": True,
        # What keeps a created container from reaching the host: no privileges, nothing of
        # the host's mounted, every capability dropped but those an admin gives back.
        "privileged": False,
        "cap_drop": ["ALL"],
        "cap_add": list(settings.container_capabilities) or None,
        "security_opt": ["no-new-privileges"],
        "mem_limit": memory,
        "memswap_limit": memory,
        "nano_cpus": int(settings.container_cpus * 1e9),
        "pids_limit": settings.container_pids,
        "ulimits": [{"name": "nofile", "soft": 1024, "hard": 1024}],
        "network_mode": settings.container_network,
        "init": True,
        "restart_policy": {"Name": "no"},
    }
    if args.name:
        kwargs["name"] = PREFIX + args.name
    if ports:
        kwargs["ports"] = {inner: (settings.publish_address, host) for inner, host in ports.items()}
    return kwargs


def container_make(
    args: ContainerCreate, ctx: ActivityContext[DockerSettings], *, start: bool
) -> Any:
    from docker.errors import APIError, DockerException, ImageNotFound

    settings = ctx.settings
    client = client_for(settings)
    if settings.max_containers and managed_count(client) >= settings.max_containers:
        raise PolicyDenied(
            f"the Docker tool has {settings.max_containers} containers already (the limit); "
            "remove one with container_remove first"
        )
    from docker.types import Ulimit

    labels = {
        LABEL: namespace(),
        LABEL_USER: str(ctx.user_id or ""),
        LABEL_CONVERSATION: str(ctx.conversation_id or ""),
        LABEL_CALL: str(ctx.call_id),
    }
    kwargs = container_spec(args, settings, labels=labels)
    kwargs["ulimits"] = [Ulimit(**limit) for limit in kwargs["ulimits"]]
    try:
        container = client.containers.create(**kwargs)
    except ImageNotFound:
        raise ToolError(
            f"image {image_ref(args.image)!r} is not on the Docker engine (the tool never "
            "pulls images: an admin loads them)"
        ) from None
    except (APIError, DockerException) as exc:
        raise _engine_error("create", exc) from None
    ctx.emit_output(f"created {container.name} from {image_ref(args.image)}\n")
    if start:
        try:
            container.start()
        except (APIError, DockerException) as exc:
            _quietly_remove(container)
            raise _engine_error("start", exc) from None
        ctx.emit_output(f"started {container.name}\n")
    container.reload()
    return container


def _quietly_remove(container: Any) -> None:
    from docker.errors import DockerException

    with contextlib.suppress(DockerException):
        container.remove(force=True)


def describe(container: Any) -> dict[str, Any]:
    attrs = container.attrs
    state = attrs.get("State") or {}
    ports = (attrs.get("NetworkSettings") or {}).get("Ports") or {}
    published = {
        inner: [f"{b.get('HostIp')}:{b.get('HostPort')}" for b in bindings or []]
        for inner, bindings in ports.items()
        if bindings
    }
    return {
        "id": container.short_id,
        "name": container.name,
        "image": (attrs.get("Config") or {}).get("Image", ""),
        "status": state.get("Status", container.status),
        "exit_code": state.get("ExitCode"),
        "ports": published,
    }


def run_to_end(container: Any, ctx: ActivityContext[DockerSettings]) -> dict[str, Any]:
    """container_run with detach=false: wait for the end, return its code and logs, remove."""
    settings = ctx.settings
    deadline = time.monotonic() + ctx.timeout - 1.0
    try:
        while True:
            container.reload()
            if container.status in ("exited", "dead"):
                break
            if ctx.cancel.is_set():
                raise ToolCancelled()
            if time.monotonic() >= deadline:
                raise ToolTimeout(ctx.timeout)
            time.sleep(0.1)
        logs = container.logs(stdout=True, stderr=True)[-settings.max_log_bytes :]
        out = {**describe(container), "logs": logs.decode("utf-8", errors="replace")}
    finally:
        _quietly_remove(container)
    out["removed"] = True
    if out["exit_code"] != 0:
        raise ToolError(f"the container exited with status {out['exit_code']}", data=out)
    return out


def managed_get(ident: str, ctx: ActivityContext[DockerSettings]) -> Any:
    """A container this tool created, of this deployment, and — for a non-admin — of the
    caller; anything else is refused in the same words as a missing one."""
    from docker.errors import DockerException, NotFound

    client = client_for(ctx.settings)
    container = None
    for name in (ident, PREFIX + ident):
        try:
            container = client.containers.get(name)
            break
        except NotFound:
            continue
        except DockerException as exc:
            raise _engine_error("inspect", exc) from None
    labels = (container.labels or {}) if container is not None else {}
    mine = labels.get(LABEL) == namespace()
    owner = labels.get(LABEL_USER, "")
    if not mine or (owner != str(ctx.user_id or "") and not is_staff(ctx.user_id)):
        raise PolicyDenied(
            f"{ident!r} is not a container the Docker tool created for you; container_stop "
            "and container_remove manage only those"
        )
    return container


def container_act(
    ident: str, ctx: ActivityContext[DockerSettings], action: str, *, force: bool = False
) -> dict[str, Any]:
    from docker.errors import APIError, DockerException, NotFound

    container = managed_get(ident, ctx)
    try:
        if action == "stop":
            container.stop(timeout=min(10, ctx.settings.timeout_seconds))
            container.reload()
            out = describe(container)
        else:
            if container.status == "running" and not force:
                raise ToolError(
                    f"{container.name} is running; stop it first (container_stop) or pass "
                    "force=true"
                )
            out = describe(container)
            container.remove(force=force)
            out["removed"] = True
    except NotFound:
        raise ToolError(f"{ident!r} was removed meanwhile") from None
    except (APIError, DockerException) as exc:
        raise _engine_error(action, exc) from None
    ctx.emit_output(f"{action} {out['name']}: done\n")
    return {"action": action, **out}
