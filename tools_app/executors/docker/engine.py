"""The engine connection and the container allowlist.

It reads the few settings it needs through ``EngineSettings`` (the Docker group's settings
satisfy it), so ``settings.py`` can report the engine's status without the two importing each
other.
"""

from __future__ import annotations

import fnmatch
import threading
from typing import Any, Protocol

from tools_app.errors import PolicyDenied, ToolError

# The docker SDK (with requests and urllib3, ~18 MiB) is imported by the functions that talk to
# an engine, here and in activity.py and managed.py: a server that never runs a docker tool
# should not carry it.

SANDBOX_LABEL = "controlcenter.sandbox"
_clients: dict[str, Any] = {}
_lock = threading.Lock()


class EngineSettings(Protocol):
    """What the engine connection and the allowlist read of the group's settings."""

    @property
    def engine(self) -> str: ...

    @property
    def timeout_seconds(self) -> int: ...

    @property
    def allowed_containers(self) -> list[str]: ...


def engine_url(settings: EngineSettings) -> str:
    engine = settings.engine.strip()
    if engine.startswith("/"):
        return f"unix://{engine}"
    return engine


def client_for(settings: EngineSettings) -> Any:
    import docker
    from docker.errors import DockerException

    url = engine_url(settings)
    with _lock:
        client = _clients.get(url)
        if client is None:
            try:
                # (mypy takes the repo's docker/ folder for the SDK: hence the ignores)
                if url:
                    client = docker.DockerClient(  # type: ignore[attr-defined]
                        base_url=url, timeout=settings.timeout_seconds
                    )
                else:
                    client = docker.from_env(  # type: ignore[attr-defined]
                        timeout=settings.timeout_seconds
                    )
                client.ping()
            except DockerException as exc:
                where = url or "the default engine (DOCKER_HOST or /var/run/docker.sock)"
                raise ToolError(
                    f"cannot reach the Docker engine at {where}: {exc}", permanent=False
                ) from None
            _clients[url] = client
    return client


def forget_client(settings: EngineSettings) -> None:
    with _lock:
        _clients.pop(engine_url(settings), None)


def _is_glob(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


def container_allowed(name: str, labels: dict[str, str], patterns: list[str]) -> bool:
    """Name globs and ``label:key=value`` entries. Sandbox containers only match an exact
    name or an explicit label entry, never a glob: the admin must mean them."""
    sandbox = SANDBOX_LABEL in labels
    for pattern in patterns:
        if pattern.startswith("label:"):
            key, _, value = pattern[len("label:") :].partition("=")
            matches = key in labels and (not value or labels[key] == value)
            if matches and (not sandbox or key == SANDBOX_LABEL or not _is_glob(value)):
                return True
            continue
        if sandbox and _is_glob(pattern):
            continue
        if fnmatch.fnmatchcase(name, pattern):
            return True
    return False


def get_container(client: Any, ident: str, settings: EngineSettings) -> Any:
    from docker.errors import DockerException, NotFound

    try:
        container = client.containers.get(ident)
    except NotFound:
        raise ToolError(f"no container named or with id {ident!r}") from None
    except DockerException as exc:
        raise ToolError(f"Docker engine error: {exc}", permanent=False) from None
    name = container.name
    if not container_allowed(name, container.labels or {}, settings.allowed_containers):
        # Same words as "not found" for names, so the allowlist does not leak what exists.
        raise PolicyDenied(f"container {ident!r} is not in the allowed containers")
    return container
