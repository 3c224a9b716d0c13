from __future__ import annotations

from typing import ClassVar

from django.contrib.auth import get_user_model
from pydantic import Field

from tools_app.errors import PolicyDenied
from tools_app.executors.docker.settings import DockerSettings
from tools_app.executors.shell.policy import split_argv
from tools_app.registry import BaseTool
from tools_app.runtime import BindContext


def is_staff(user_id: int | None) -> bool:
    if user_id is None:
        return False
    users = get_user_model().objects.filter(pk=user_id, is_active=True, is_staff=True)
    return users.exists()


class _DockerTool(BaseTool[DockerSettings], abstract=True):
    docker_operation: ClassVar[str] = "list"

    def check_policy(self, settings: DockerSettings, ctx: BindContext) -> None:
        # The engine sees every container of the host, the app's own included: admins only
        # unless an admin decides otherwise.
        if settings.staff_only and not is_staff(ctx.user_id):
            raise PolicyDenied(
                "the Docker tool is for admins only (an admin can open it to everyone in the "
                "Tools Manager)"
            )
        op = type(self).docker_operation
        if op not in settings.allowed_operations:
            raise PolicyDenied(
                f"docker operation '{op}' is not allowed (allowed: "
                f"{', '.join(settings.allowed_operations) or 'none'}); an admin can enable it "
                "in the Tools Manager under Docker → allowed operations"
            )


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
