from __future__ import annotations

import re
from typing import Literal

from django.utils.translation import gettext as _
from pydantic import Field, field_validator

from infra.env import parse_size
from tools_app.errors import ToolError
from tools_app.executors.docker.engine import client_for, engine_url, forget_client
from tools_app.registry import GroupSettings, ToolGroup, register_group

Operation = Literal[
    "list", "inspect", "logs", "exec", "start", "stop", "restart", "create", "remove"
]  # fmt: skip
READ_ONLY: list[Operation] = ["list", "inspect", "logs"]
# Capabilities an admin may give back to the containers the tool creates (all are dropped).
CAPABILITIES = (
    "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID", "SETPCAP",
    "NET_BIND_SERVICE", "NET_RAW", "SYS_CHROOT", "AUDIT_WRITE", "SETFCAP",
)  # fmt: skip
_PORTS = re.compile(r"^(\d{1,5})(?:-(\d{1,5}))?$")
_NETWORK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def port_ranges(entries: list[str]) -> list[tuple[int, int]]:
    """``8080`` and ``8000-8099`` as (first, last) host ports."""
    ranges = []
    for entry in entries:
        match = _PORTS.match(entry.strip())
        if not match:
            raise ValueError(f"{entry!r} is not a port or a range (8080, 8000-8099)")
        first = int(match.group(1))
        last = int(match.group(2) or first)
        if not 1 <= first <= last <= 65535:
            raise ValueError(f"{entry!r}: ports go from 1 to 65535, the first one first")
        ranges.append((first, last))
    return ranges


class DockerSettings(GroupSettings):
    timeout_seconds: int = Field(30, ge=1, le=600, description="Longest an operation may run (s).")
    staff_only: bool = Field(
        True,
        description="Only admins (staff) may use the Docker tools; off: every user, within the "
        "allowed operations and containers.",
    )
    show_env: bool = Field(
        False,
        description="docker_inspect shows the values of a container's environment variables "
        "(they often hold passwords and keys); off: their names, values redacted.",
    )
    engine: str = Field(
        "",
        description="Engine address: a socket path (/var/run/docker.sock) or URL "
        "(tcp://host:2376). Empty: DOCKER_HOST or the default socket.",
    )
    allowed_operations: list[Operation] = Field(
        default_factory=lambda: list(READ_ONLY),
        description="Operations the tools may perform, one per line (list, inspect, logs, "
        "exec, start, stop, restart; create and remove for the containers the tool makes).",
    )
    allowed_containers: list[str] = Field(
        default_factory=lambda: ["*"],
        description="Container names (globs like web-*) or labels (label:app=web), one per "
        "line. Sandbox containers only match when named exactly.",
    )
    max_log_bytes: int = Field(
        100_000, ge=1_000, le=10_000_000, description="Log output kept per call (bytes)."
    )
    # Containers the tool creates (container_create / container_run; operations "create"
    # and "remove", off by default).
    allowed_images: list[str] = Field(
        default_factory=list,
        description="Images container_create and container_run may use, one per line; globs "
        "like nginx:* or registry.example/team/* (an image without a tag is :latest). Empty: "
        "none.",
    )
    allowed_ports: list[str] = Field(
        default_factory=list,
        description="Host ports the created containers may publish, one per line: 8080 or "
        "8000-8099. Empty: none.",
    )
    publish_address: str = Field(
        "127.0.0.1",
        description="Host address published ports listen on (0.0.0.0: every interface).",
    )
    container_network: str = Field(
        "none",
        description="Network the created containers join: none (no network), or the name of "
        "a Docker network (bridge, or one of your own). Publishing ports needs one.",
    )
    container_memory: str = Field("256m", description="Memory limit of each created container.")
    container_cpus: float = Field(
        1.0, ge=0.1, le=64, description="CPUs each created container may use."
    )
    container_pids: int = Field(
        128, ge=8, le=4096, description="Processes each created container may run."
    )
    container_capabilities: list[str] = Field(
        default_factory=list,
        description="Capabilities given back to created containers (all are dropped), one per "
        "line, e.g. CHOWN, SETUID, SETGID, NET_BIND_SERVICE for a stock nginx.",
    )
    max_containers: int = Field(
        5,
        ge=0,
        le=1000,
        description="Containers the tool may have created at once (running "
        "or not); container_remove frees a place.",
    )

    @field_validator("allowed_images")
    @classmethod
    def _images(cls, value: list[str]) -> list[str]:
        return [v.strip() for v in value if v.strip()]

    @field_validator("allowed_ports")
    @classmethod
    def _ports(cls, value: list[str]) -> list[str]:
        entries = [v.strip() for v in value if v.strip()]
        port_ranges(entries)
        return entries

    @field_validator("container_network")
    @classmethod
    def _network(cls, value: str) -> str:
        value = value.strip() or "none"
        if value == "host" or not _NETWORK.match(value):
            raise ValueError(f"{value!r}: a Docker network name (not host), or none")
        return value

    @field_validator("container_memory")
    @classmethod
    def _memory(cls, value: str) -> str:
        if parse_size(value.strip()) < 4 << 20:
            raise ValueError("at least 4m")
        return value.strip()

    @field_validator("container_capabilities")
    @classmethod
    def _capabilities(cls, value: list[str]) -> list[str]:
        out = []
        for raw in value:
            cap = raw.strip().upper().removeprefix("CAP_")
            if not cap:
                continue
            if cap not in CAPABILITIES:
                raise ValueError(
                    f"{raw!r} cannot be given back (allowed: {', '.join(CAPABILITIES)})"
                )
            out.append(cap)
        return list(dict.fromkeys(out))

    @field_validator("allowed_containers")
    @classmethod
    def _entries(cls, value: list[str]) -> list[str]:
        return [v.strip() for v in value if v.strip()]

    @field_validator("allowed_operations")
    @classmethod
    def _unique(cls, value: list[Operation]) -> list[Operation]:
        return list(dict.fromkeys(value))


def _engine_status(settings: DockerSettings) -> tuple[str, str, str]:
    where = engine_url(settings) or "default engine"
    try:
        version = client_for(settings).version().get("Version", "?")
    except ToolError as exc:
        return "bad", "engine unreachable", exc.message
    except Exception as exc:  # the cached client lost its engine
        forget_client(settings)
        return "bad", "engine unreachable", f"{where}: {exc}"
    return "ok", f"Docker {version}", where


GROUP = register_group(
    ToolGroup(
        name="docker",
        label=_("Docker"),
        description="List, inspect and read logs of containers on a Docker engine; exec, start, "
        "stop and restart, and creating containers from allowed images, only when an admin "
        "allows them.",
        settings_model=DockerSettings,
        limits=(
            "engine",
            "allowed_operations",
            "allowed_containers",
            "allowed_images",
            "staff_only",
        ),
        order=50,
        status=lambda settings: _engine_status(settings),
    )
)
