from __future__ import annotations

import fnmatch
import re
from typing import ClassVar

from pydantic import Field

from tools_app.errors import PolicyDenied
from tools_app.executors.docker.settings import DockerSettings, port_ranges
from tools_app.executors.shell.policy import split_argv
from tools_app.registry import BaseTool
from tools_app.runtime import BindContext, Caller


def is_staff(user_id: int | None) -> bool:
    return Caller(user_id).is_staff


class _DockerTool(BaseTool[DockerSettings], abstract=True):
    docker_operation: ClassVar[str] = "list"

    @classmethod
    def caller_refusal(cls, settings: DockerSettings, caller: Caller) -> str | None:
        # The engine sees every container of the host, the app's own included: admins only
        # unless an admin decides otherwise.
        if settings.staff_only and not caller.is_staff:
            return (
                "the Docker tool is for admins only (an admin can open it to everyone in the "
                "Tools Manager)"
            )
        op = cls.docker_operation
        if op not in settings.allowed_operations:
            return (
                f"docker operation '{op}' is not allowed (allowed: "
                f"{', '.join(settings.allowed_operations) or 'none'}); an admin can enable it "
                "in the Tools Manager under Docker → allowed operations"
            )
        return None

    def check_policy(self, settings: DockerSettings, ctx: BindContext) -> None:
        refusal = self.caller_refusal(settings, Caller(ctx.user_id))
        if refusal is not None:
            raise PolicyDenied(refusal)


class DockerListContainers(_DockerTool, group="docker"):
    """List containers (running only unless all=true), with state, health and restarts."""

    all: bool = Field(False, description="Include stopped containers.")
    name: str | None = Field(None, description="Only containers whose name contains this.")
    docker_operation: ClassVar[str] = "list"


class _OneContainer(_DockerTool, abstract=True):
    container_id: str = Field(
        min_length=1, max_length=200, description="Container name or id.", examples=["web"]
    )


class DockerInspect(_OneContainer, group="docker"):
    """Show a container's state, health, restart count, image, ports, mounts, labels and
    environment variable names (values only when an admin allows it)."""

    docker_operation: ClassVar[str] = "inspect"


class DockerLogs(_OneContainer, group="docker"):
    """Read a container's recent logs."""

    tail: int = Field(200, ge=1, le=10_000, description="Lines from the end.")
    since: str | None = Field(
        None, description="Only logs newer than this: seconds (e.g. 600) or an ISO timestamp."
    )
    docker_operation: ClassVar[str] = "logs"


class DockerExec(_OneContainer, group="docker"):
    """Run a command in a container (split like a shell would, run without a shell)."""

    command: str = Field(
        min_length=1,
        description="The command, e.g. `cat /etc/hostname`.",
        examples=["cat /etc/hostname"],
    )
    timeout: int | None = Field(None, ge=1, description="Seconds (capped by the admin).")
    docker_operation: ClassVar[str] = "exec"

    def check_policy(self, settings: DockerSettings, ctx: BindContext) -> None:
        super().check_policy(settings, ctx)
        try:
            split_argv(self.command)
        except ValueError as exc:
            raise PolicyDenied(f"cannot split the command: {exc}") from None


class DockerStart(_OneContainer, group="docker"):
    """Start a stopped container."""

    docker_operation: ClassVar[str] = "start"


class DockerStop(_OneContainer, group="docker"):
    """Stop a running container."""

    docker_operation: ClassVar[str] = "stop"


class DockerRestart(_OneContainer, group="docker"):
    """Restart a container."""

    docker_operation: ClassVar[str] = "restart"


# --- containers the tool creates (seed 003: "start an nginx container") --------------------
NAME = r"^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,40}$"
_PORT = re.compile(r"^(?:(\d{1,5}):)?(\d{1,5})(?:/(tcp|udp))?$")


def image_ref(image: str) -> str:
    """``repo[:tag]`` with the tag made explicit (``nginx`` is ``nginx:latest``)."""
    image = image.strip()
    last = image.rsplit("/", 1)[-1]
    return image if ":" in last or "@" in last else f"{image}:latest"


def image_allowed(image: str, patterns: list[str]) -> bool:
    ref = image_ref(image)
    return any(
        fnmatch.fnmatchcase(ref, image_ref(p)) or fnmatch.fnmatchcase(ref, p) for p in patterns
    )


def parse_ports(entries: list[str]) -> dict[str, int]:
    """``HOST:CONTAINER[/tcp|udp]`` (as ``docker run -p``) → {"CONTAINER/proto": HOST}."""
    out: dict[str, int] = {}
    for entry in entries:
        match = _PORT.match(entry.strip())
        if not match or match.group(1) is None:
            raise PolicyDenied(f"{entry!r}: write a published port as HOST:CONTAINER, e.g. 8080:80")
        host, inner = int(match.group(1)), int(match.group(2))
        if not (1 <= host <= 65535 and 1 <= inner <= 65535):
            raise PolicyDenied(f"{entry!r}: ports go from 1 to 65535")
        key = f"{inner}/{match.group(3) or 'tcp'}"
        if key in out:
            raise PolicyDenied(f"container port {key} is published twice")
        out[key] = host
    return out


class ContainerCreate(_DockerTool, group="docker"):
    """Create a container (not started) from an image an admin allows, with the admin's
    resource limits, no host files and no privileges. Its name starts with cctool-; start it
    with docker_start, or use container_run to create and start at once."""

    image: str = Field(
        min_length=1,
        max_length=300,
        description="Image, e.g. nginx:1.27 (must be on the admin's list of images).",
        examples=["controlcenter-sandbox-mini:latest"],
    )
    name: str | None = Field(
        None, pattern=NAME, description="A short name; the container is called cctool-<name>."
    )
    command: str | None = Field(
        None,
        max_length=4000,
        description="Command to run instead of the image's default (split like a shell, run "
        "without one).",
        examples=["sleep 300"],
    )
    env: list[str] = Field(
        default_factory=list, max_length=50, description="Environment variables, NAME=value."
    )
    ports: list[str] = Field(
        default_factory=list,
        max_length=10,
        description="Published ports, HOST:CONTAINER (as docker run -p), e.g. 8080:80; the "
        "host port must be in the admin's ranges.",
    )
    docker_operation: ClassVar[str] = "create"

    def check_policy(self, settings: DockerSettings, ctx: BindContext) -> None:
        super().check_policy(settings, ctx)
        if not settings.allowed_images:
            raise PolicyDenied(
                "no image may be used: an admin lists the allowed images under Docker → "
                "allowed images"
            )
        if not image_allowed(self.image, settings.allowed_images):
            allowed = ", ".join(settings.allowed_images)
            raise PolicyDenied(f"image {self.image!r} is not allowed (allowed: {allowed})")
        for entry in self.env:
            name, sep, _ = entry.partition("=")
            if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise PolicyDenied(f"{entry[:60]!r}: write environment variables as NAME=value")
        if self.command is not None:
            try:
                split_argv(self.command)
            except ValueError as exc:
                raise PolicyDenied(f"cannot split the command: {exc}") from None
        published = parse_ports(self.ports)
        if published and settings.container_network == "none":
            raise PolicyDenied(
                "publishing ports needs a network; an admin sets Docker → container network"
            )
        ranges = port_ranges(settings.allowed_ports)
        for host in published.values():
            if not any(first <= host <= last for first, last in ranges):
                allowed = ", ".join(settings.allowed_ports) or "none"
                raise PolicyDenied(f"host port {host} is not allowed (allowed: {allowed})")


class ContainerRun(ContainerCreate, group="docker"):
    """Create and start a container from an allowed image (as docker run). With
    detach=false, wait for it to end (within the call's timeout) and return its exit code and
    logs, then remove it."""

    detach: bool = Field(True, description="Leave it running; false: wait, return, remove.")
    docker_operation: ClassVar[str] = "create"

    def sink(self, settings: DockerSettings) -> str:
        return f"a container started from {self.image}"

    def check_policy(self, settings: DockerSettings, ctx: BindContext) -> None:
        super().check_policy(settings, ctx)
        if "start" not in settings.allowed_operations:
            raise PolicyDenied(
                "docker operation 'start' is not allowed, and container_run starts what it "
                "creates; use container_create, or an admin allows start"
            )


class ContainerStop(_OneContainer, group="docker"):
    """Stop a container this tool created (container_create / container_run)."""

    docker_operation: ClassVar[str] = "stop"


class ContainerRemove(_OneContainer, group="docker"):
    """Remove a container this tool created (stopped first when force=true)."""

    force: bool = Field(False, description="Stop it first if it is running.")
    docker_operation: ClassVar[str] = "remove"
