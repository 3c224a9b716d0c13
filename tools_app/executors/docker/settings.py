from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from tools_app.errors import ToolError
from tools_app.executors.docker.engine import client_for, engine_url, forget_client
from tools_app.registry import GroupSettings, ToolGroup, register_group

Operation = Literal["list", "inspect", "logs", "exec", "start", "stop", "restart"]
READ_ONLY: list[Operation] = ["list", "inspect", "logs"]


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
        "exec, start, stop, restart).",
    )
    allowed_containers: list[str] = Field(
        default_factory=lambda: ["*"],
        description="Container names (globs like web-*) or labels (label:app=web), one per "
        "line. Sandbox containers only match when named exactly.",
    )
    max_log_bytes: int = Field(
        100_000, ge=1_000, le=10_000_000, description="Log output kept per call (bytes)."
    )

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
        label="Docker",
        description="List, inspect and read logs of containers on a Docker engine; exec, start, "
        "stop and restart only when an admin allows them.",
        settings_model=DockerSettings,
        limits=("engine", "allowed_operations", "allowed_containers", "staff_only"),
        order=50,
        status=lambda settings: _engine_status(settings),
    )
)
