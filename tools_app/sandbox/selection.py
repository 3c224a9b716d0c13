"""Which sandbox backend runs commands, as the settings say (``controlcenter/settings.py``).

``SANDBOX_BACKEND=auto`` (the default) picks docker when an engine is reachable and the sandbox
image exists, else bubblewrap when it works on this host, else refuses: running tools with no
isolation is never a silent fallback, only an explicit ``SANDBOX_BACKEND=none``.

Other settings: SANDBOX_IMAGE, SANDBOX_UID, SANDBOX_MEMORY, SANDBOX_PIDS, SANDBOX_CPUS,
SANDBOX_IDLE_SECONDS, SANDBOX_POOL_LABEL, SANDBOX_DOCKER_RUNNER (on: commands go to a runner
kept inside the warm container; off: one ``docker exec`` per command). DOCKER_HOST and the
other DOCKER_* variables are the Docker SDK's own: it reads them itself.
"""

from __future__ import annotations

import hashlib
import logging
import threading

from django.conf import settings

from tools_app.sandbox.base import Sandbox, SandboxError

logger = logging.getLogger(__name__)

BACKENDS = ("docker", "bubblewrap", "none")
_ALIASES = {"bwrap": "bubblewrap", "": "auto"}

_lock = threading.Lock()
_instances: dict[str, Sandbox] = {}
_auto_choice: str | None = None


def idle_seconds() -> float:
    return float(settings.SANDBOX_IDLE_SECONDS)


def deployment_label() -> str:
    """Containers belong to one deployment: its workspaces directory. Two deployments (or two
    test runs) on one engine then never reuse, reap or remove each other's containers."""
    try:
        root = str(settings.WORKSPACES_DIR)
    except Exception:  # used without Django settings (scripts, some tests)
        return "1"
    return hashlib.sha256(root.encode()).hexdigest()[:10]


def _build(name: str) -> Sandbox:
    # Imported here so a host without the docker SDK can still use bubblewrap.
    if name == "docker":
        from tools_app.sandbox.docker_backend import DockerSandbox

        return DockerSandbox(
            image=settings.SANDBOX_IMAGE,
            uid=settings.SANDBOX_UID,
            memory=settings.SANDBOX_MEMORY,
            pids=settings.SANDBOX_PIDS,
            cpus=settings.SANDBOX_CPUS,
            pool_label=settings.SANDBOX_POOL_LABEL or deployment_label(),
            runner=settings.SANDBOX_DOCKER_RUNNER,
            runner_idle=idle_seconds(),
        )
    if name == "bubblewrap":
        from tools_app.sandbox.bwrap_backend import BubblewrapSandbox

        return BubblewrapSandbox(
            uid=settings.SANDBOX_UID, memory=settings.SANDBOX_MEMORY, pids=settings.SANDBOX_PIDS
        )
    from tools_app.sandbox.none_backend import NoSandbox

    return NoSandbox()


def _instance(name: str) -> Sandbox:
    with _lock:
        if name not in _instances:
            _instances[name] = _build(name)
        return _instances[name]


def _normalize(name: str | None) -> str:
    if name is None:
        name = str(settings.SANDBOX_BACKEND)
    name = name.strip().lower()
    name = _ALIASES.get(name, name)
    if name != "auto" and name not in BACKENDS:
        raise SandboxError(
            f"unknown sandbox backend {name!r}: use auto, docker, bubblewrap or none"
        )
    return name


def get_sandbox(name: str | None = None) -> Sandbox:
    """The backend named (or configured by SANDBOX_BACKEND); backends are process singletons."""
    global _auto_choice
    name = _normalize(name)
    if name != "auto":
        return _instance(name)
    if _auto_choice is not None:
        # Decided once per process: a backend that later breaks raises SandboxError on use
        # rather than commands silently moving to a weaker sandbox mid-conversation.
        return _instance(_auto_choice)
    reasons = []
    for candidate in ("docker", "bubblewrap"):
        ok, detail = _instance(candidate).health()
        if ok:
            with _lock:
                _auto_choice = _auto_choice or candidate
            logger.info("sandbox backend: %s (%s)", candidate, detail)
            return _instance(_auto_choice)
        reasons.append(f"{candidate}: {detail}")
    raise SandboxError(
        "no sandbox available (" + "; ".join(reasons) + "). Start Docker and run "
        "`make sandbox-image`, install bubblewrap, or set SANDBOX_BACKEND=none to run tools "
        "without isolation"
    )


def configured_backend_health() -> tuple[str, bool, str]:
    """(backend, healthy, detail) of the backend ``get_sandbox()`` would use, found the same way
    but without settling this process's automatic choice (``manage.py check`` asks this)."""
    name = _normalize(None)
    candidates = ("docker", "bubblewrap") if name == "auto" else (name,)
    reasons = []
    for candidate in candidates:
        try:
            ok, detail = _instance(candidate).health()
        except SandboxError as exc:
            ok, detail = False, str(exc)
        if ok:
            return candidate, True, detail
        reasons.append(f"{candidate}: {detail}" if name == "auto" else detail)
    return name, False, "; ".join(reasons)


def available_backends() -> dict[str, tuple[bool, str]]:
    """Health of every backend, for the Tools Manager."""
    result: dict[str, tuple[bool, str]] = {}
    for name in BACKENDS:
        try:
            result[name] = _instance(name).health()
        except SandboxError as exc:
            result[name] = (False, str(exc))
    return result


def reap_idle_sandboxes() -> int:
    """Maintenance hook: reap warm resources of the backends this process has used."""
    max_idle = idle_seconds()
    with _lock:
        backends = list(_instances.values())
    removed = 0
    for backend in backends:
        try:
            removed += backend.reap_idle(max_idle)
        except SandboxError as exc:
            logger.warning("could not reap idle %s sandboxes: %s", backend.name, exc)
    return removed


def shutdown_sandboxes() -> int:
    """The process is stopping (SIGTERM/SIGINT): remove the warm containers it holds, so none
    keeps running after the app stops. Never raises."""
    with _lock:
        backends = list(_instances.values())
    removed = 0
    for backend in backends:
        try:
            removed += backend.shutdown()
        except SandboxError as exc:
            logger.warning("could not remove the %s sandboxes at shutdown: %s", backend.name, exc)
    if removed:
        logger.info("removed %d warm sandbox container(s) at shutdown", removed)
    return removed


def reap_orphaned_sandboxes() -> int:
    """The process is starting: remove the warm containers of this deployment whose maker is
    gone (killed before it could remove them). Asked whatever SANDBOX_BACKEND says, as a tool
    group may choose docker itself. Never raises."""
    try:
        # Not kept as this process's backend: "auto" may settle on another one.
        removed = _build("docker").reap_orphans()
    except (SandboxError, ImportError) as exc:  # no engine here: nothing of ours runs on it
        logger.debug("no orphaned docker sandboxes reaped: %s", exc)
        return 0
    if removed:
        logger.info("removed %d sandbox container(s) left by a stopped process", removed)
    return removed


def reset_for_tests() -> None:
    """Forget cached backends and the auto choice (tests change the settings)."""
    global _auto_choice
    with _lock:
        _instances.clear()
        _auto_choice = None


def docker_container_name(workspace_id: str, network: bool = False) -> str:
    """The name of a workspace's warm container in this deployment (for operators' tooling
    and tests: ``docker exec <name> ps``)."""
    from tools_app.sandbox.docker_containers import container_name

    return container_name(workspace_id, network, deployment_label())
