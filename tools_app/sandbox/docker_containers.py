"""The warm sandbox containers: find-or-create (race-safe across processes), reap, release.

Another worker process may create, use or remove the same container at any moment, so the
engine is the source of truth: names are deterministic, a name conflict on create means "use
theirs", and "idle" is judged from the engine's exec events rather than only our own memory.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import logging
import os
import re
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra import metrics
from tools_app.sandbox.base import DEFAULT_PATH, WORKSPACE, Mount, SandboxError, mounts_key
from tools_app.sandbox.hardening import NETWORK, Hardening

logger = logging.getLogger(__name__)

LABEL = "controlcenter.sandbox"
LABEL_WORKSPACE = "controlcenter.workspace"
# The workspace directory's identity (device:inode) when the container was made: a directory
# deleted and created again at the same path must not be served by the old container, whose
# bind mount still holds the deleted one.
LABEL_DIR_ID = "controlcenter.workspace_dir_id"
# Containers of long-lived processes (Sandbox.spawn): never reused, reaped or released as warm
# ones; the engine removes each when its process ends.
LABEL_SPAWNED = "controlcenter.spawned"
# The process that made a warm container (host, pid and the pid's start time): at its next
# start, containers whose maker is gone (killed, so it never removed them) are reaped.
LABEL_OWNER = "controlcenter.owner"


def _started(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot), or None when there is none:
    with the pid it names one process, however often pids are reused."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            # The command name (field 2) may hold spaces; the fields after it may not.
            return stat.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def process_owner() -> str:
    """This process, as the owner label of the containers it makes."""
    return f"{socket.gethostname()}/{os.getpid()}/{_started(os.getpid()) or '?'}"


def _owner_gone(owner: str) -> bool:
    """Whether the process an owner label names is gone. Only processes on this host can be
    judged: another host's, or an unreadable label, are never taken for gone."""
    host, _, rest = owner.partition("/")
    pid, _, started = rest.partition("/")
    if host != socket.gethostname() or not pid.isdigit() or not started:
        return False
    return _started(int(pid)) != started


def _dir_id(path: Path) -> str:
    st = os.stat(path)
    return f"{st.st_dev}:{st.st_ino}"


@dataclass
class _Warm:
    container_id: str
    workspace: Path
    last_used: float  # wall clock, comparable with the engine's event times
    dir_id: str = ""


CREATE_DEADLINE_SECONDS = 30.0


def container_name(
    workspace_id: str, network: bool, namespace: str = "1", mounts: tuple[Mount, ...] = ()
) -> str:
    """Deterministic, docker-safe name; a hash keeps distinct ids distinct after cleaning.
    A namespace other than the default "1" keeps deployments sharing an engine apart (their
    conversation ids overlap). Host folders (``mounts``) make another container: the file
    tools' sandbox sees them, the shell's does not."""
    slug = re.sub(r"[^a-zA-Z0-9_.-]", "-", workspace_id)[:40].strip("-.") or "ws"
    if slug != workspace_id:
        slug += "-" + hashlib.sha256(workspace_id.encode()).hexdigest()[:8]
    prefix = "cc-sbx-" if namespace == "1" else f"cc-sbx-{namespace[:12]}-"
    variant = f"-m{mounts_key(mounts)}" if mounts else ""
    return f"{prefix}{slug}-{'net' if network else 'nonet'}{variant}"


_spawned = itertools.count(1)


def spawned_name(name: str, workspace_id: str) -> str:
    """A name no other container has: this process's id and a counter make it unique."""
    digest = hashlib.sha256(f"{name}:{workspace_id}".encode()).hexdigest()[:8]
    slug = re.sub(r"[^a-zA-Z0-9_.-]", "-", name)[:30]
    return f"cc-{slug}-{os.getpid()}-{digest}-{next(_spawned)}"


class ContainerPool:
    def __init__(
        self,
        *,
        image: str,
        uid: int,
        memory: int,
        pids: int,
        cpus: float,
        tmpfs_size: str,
        label: str = "1",
    ) -> None:
        # Containers carry controlcenter.sandbox=<label>; reap/release/health only ever touch
        # their own label, so a test run cannot remove a live app's containers on a shared engine.
        self.label = f"{LABEL}={label}"
        self.namespace = label
        self.image = image
        self.hardening = Hardening(
            uid=uid, memory=memory, pids=pids, cpus=cpus, tmpfs_size=tmpfs_size
        )
        self._api: Any = None
        self._lock = threading.Lock()
        self._name_locks: dict[str, threading.Lock] = {}
        self._warm: dict[str, _Warm] = {}
        self._network_ready = False

    # -- engine access ----------------------------------------------------------------------

    @property
    def where(self) -> str:
        return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"

    @property
    def api(self) -> Any:
        if self._api is None:
            with self._lock:
                if self._api is None:
                    try:
                        # Imported lazily: processes that never use docker skip its import cost.
                        import docker

                        # mypy may resolve `docker` to the repo's docker/ folder (a namespace
                        # package); at run time the SDK, a regular package, always wins.
                        client = docker.from_env(timeout=30, max_pool_size=32)  # type: ignore[attr-defined,unused-ignore]
                        self._api = client.api
                    except Exception as exc:
                        raise SandboxError(
                            f"Docker engine not reachable at {self.where}: {exc}"
                        ) from exc
        return self._api

    @contextlib.contextmanager
    def errors(self) -> Iterator[None]:
        """Turn SDK/transport failures into SandboxError with words an admin can act on."""
        import docker.errors
        import requests

        try:
            yield
        except docker.errors.ImageNotFound as exc:
            raise SandboxError(
                f"sandbox image {self.image} missing — run `make sandbox-image`"
            ) from exc
        except docker.errors.APIError as exc:
            raise SandboxError(f"Docker engine error: {exc.explanation or exc}") from exc
        except (requests.exceptions.ConnectionError, docker.errors.DockerException) as exc:
            raise SandboxError(f"Docker engine not reachable at {self.where}: {exc}") from exc

    # -- warm containers --------------------------------------------------------------------

    def ensure(
        self, workspace_id: str, workspace: Path, *, network: bool, mounts: tuple[Mount, ...] = ()
    ) -> str:
        name = container_name(workspace_id, network, self.namespace, mounts)
        dir_id = _dir_id(workspace)
        warm = self._warm.get(name)
        if warm is not None and warm.workspace == workspace and warm.dir_id == dir_id:
            return warm.container_id
        with self._lock:
            name_lock = self._name_locks.setdefault(name, threading.Lock())
        with name_lock:
            warm = self._warm.get(name)
            if warm is not None and warm.workspace == workspace and warm.dir_id == dir_id:
                return warm.container_id
            cid = self._find_or_create(name, workspace_id, workspace, network, mounts)
            self._warm[name] = _Warm(cid, workspace, time.time(), dir_id)
            self._count()
            return cid

    def _find_or_create(
        self,
        name: str,
        workspace_id: str,
        workspace: Path,
        network: bool,
        mounts: tuple[Mount, ...] = (),
    ) -> str:
        import docker.errors

        # Other processes may be creating, starting or removing the same name: go round until
        # one container stands (a busy engine takes seconds to remove one), within a deadline.
        deadline = time.monotonic() + CREATE_DEADLINE_SECONDS
        while time.monotonic() < deadline:
            with self.errors():
                try:
                    info = self.api.inspect_container(name)
                except docker.errors.NotFound:
                    info = None
                if info is not None:
                    status = info["State"]["Status"]
                    if self._matches(info, workspace, mounts) and status in ("running", "created"):
                        if status == "created":  # another process is just starting it
                            self._start(info["Id"])
                        return str(info["Id"])
                    if status == "removing":  # someone else is already on it
                        time.sleep(0.1)
                        continue
                    # Dead (e.g. OOM took its init), stopped, or for another directory.
                    self._remove(info["Id"])
                    continue
                if network:
                    self._ensure_network()
                try:
                    cid = self.api.create_container(
                        self.image,
                        **self._container_spec(name, workspace_id, workspace, network, mounts),
                    )["Id"]
                except docker.errors.APIError as exc:
                    if exc.status_code == 409:  # another process won the race: use theirs
                        time.sleep(0.02)
                        continue
                    raise
                self._start(cid)
                return str(cid)
        raise SandboxError(f"could not create sandbox container {name}: it keeps disappearing")

    def _start(self, cid: str) -> None:
        import docker.errors

        try:
            self.api.start(cid)
        except docker.errors.APIError:
            # Two processes starting the same new container: the loser's error is harmless
            # as long as the winner gets it running.
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                state = self.api.inspect_container(cid)["State"]
                if state["Running"]:
                    return
                if state["Status"] != "created":
                    break
                time.sleep(0.05)
            raise

    def _matches(
        self, info: dict[str, Any], workspace: Path, host_folders: tuple[Mount, ...] = ()
    ) -> bool:
        mounts = {
            m.get("Destination"): (m.get("Source"), m.get("RW")) for m in info.get("Mounts") or []
        }
        labels = info["Config"].get("Labels") or {}
        wanted = {m.target: (str(m.source), m.writable) for m in host_folders}
        present = {dest: got for dest, got in mounts.items() if dest != WORKSPACE}
        return (
            info["Config"].get("Image") == self.image
            and mounts.get(WORKSPACE, (None, None))[0] == str(workspace)
            and labels.get(LABEL_DIR_ID) == _dir_id(workspace)
            and present == wanted
        )

    def _container_spec(
        self,
        name: str,
        workspace_id: str,
        workspace: Path,
        network: bool,
        mounts: tuple[Mount, ...] = (),
    ) -> dict[str, Any]:
        return self.hardening.create_kwargs(
            self.api,
            name=name,
            command=["sleep", "infinity"],
            environment={"PATH": DEFAULT_PATH, "HOME": WORKSPACE, "LANG": "C.UTF-8"},
            labels={
                LABEL: self.label.split("=", 1)[1],
                LABEL_WORKSPACE: workspace_id,
                LABEL_DIR_ID: _dir_id(workspace),
                LABEL_OWNER: process_owner(),
            },
            workspace=workspace,
            network=network,
            host_folders=mounts,
        )

    # -- containers of long-lived processes (Sandbox.spawn) ---------------------------------

    def create_spawned(
        self,
        name: str,
        *,
        workspace: Path,
        argv: list[str],
        environment: dict[str, str],
        network: bool,
        ro_binds: list[Path],
    ) -> str:
        """Create (not start) a container running ``argv`` with its stdin open, hardened as
        the warm ones; the engine removes it when the process ends."""
        with self.errors():
            if network:
                self._ensure_network()
            spec = self.hardening.create_kwargs(
                self.api,
                name=name,
                command=argv,
                environment=environment,
                labels={LABEL_SPAWNED: self.namespace},
                workspace=workspace,
                network=network,
                ro_binds=ro_binds,
                auto_remove=True,
            )
            return str(self.api.create_container(self.image, stdin_open=True, **spec)["Id"])

    def remove_spawned(self, cid: str) -> None:
        """Remove a spawned container if it is still there (its process was killed from
        outside, say); never raises: this runs while a session is torn down."""
        try:
            with self.errors():
                self._remove(cid)
        except SandboxError as exc:
            logger.warning("could not remove sandbox container %s: %s", cid[:12], exc)

    def _ensure_network(self) -> None:
        import docker.errors

        if self._network_ready:
            return
        if not self.api.networks(names=[NETWORK]):
            try:
                self.api.create_network(NETWORK, driver="bridge", labels={LABEL: "1"})
            except docker.errors.APIError as exc:
                if exc.status_code != 409:
                    raise
        self._network_ready = True

    def _remove(self, cid: str) -> None:
        import docker.errors

        try:
            self.api.remove_container(cid, force=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as exc:
            if exc.status_code != 409:  # 409: another process is already removing it
                raise
        self._forget(cid)

    def _count(self) -> None:
        """The warm containers this process holds, as the cc_sandbox_pool_size gauge."""
        metrics.SANDBOX_POOL.labels("docker").set(
            len({w.container_id for w in self._warm.values()})
        )

    def _forget(self, cid: str) -> None:
        for name, warm in list(self._warm.items()):
            if warm.container_id == cid:
                self._warm.pop(name, None)
        self._count()

    def forget(self, workspace_id: str, network: bool, mounts: tuple[Mount, ...] = ()) -> None:
        """Drop our cached id so the next ``ensure`` asks the engine again (and recreates a dead
        container, or waits for one another process is starting)."""
        self._warm.pop(container_name(workspace_id, network, self.namespace, mounts), None)
        self._count()

    def kill(self, cid: str) -> bool:
        """Kill the container's init, taking every process in it down; it is recreated later."""
        self._forget(cid)
        try:
            with self.errors():
                self.api.kill(cid)
        except SandboxError:
            return False
        return True

    def touch(self, workspace_id: str, network: bool, mounts: tuple[Mount, ...] = ()) -> None:
        warm = self._warm.get(container_name(workspace_id, network, self.namespace, mounts))
        if warm is not None:
            warm.last_used = time.time()

    def oom_since(self, cid: str, since: float) -> bool:
        filters = {"type": "container", "container": cid, "event": "oom"}
        try:
            with self.errors():
                # `until` in the past (or now): a future one makes the engine wait for it.
                events = self.api.events(
                    since=f"{since:.3f}",
                    until=f"{time.time():.3f}",
                    filters=filters,
                    decode=True,
                )
                return any(True for _ in events)
        except SandboxError:
            return False

    # -- housekeeping -----------------------------------------------------------------------

    def release(self, workspace_id: str) -> None:
        with self.errors():
            filters = {"label": [self.label, f"{LABEL_WORKSPACE}={workspace_id}"]}
            for c in self.api.containers(all=True, filters=filters):
                self._remove(c["Id"])

    def reap_idle(self, max_idle_seconds: float) -> int:
        now = time.time()
        removed = 0
        with self.errors():
            last_exec = self._recent_exec_times(now - max_idle_seconds, now)
            for c in self.api.containers(all=True, filters={"label": self.label}):
                cid = c["Id"]
                # "created": another process is about to start it; judge it by age too.
                if c.get("State") in ("running", "created", "restarting"):
                    ours = [w.last_used for w in self._warm.values() if w.container_id == cid]
                    last = max([float(c.get("Created", 0)), last_exec.get(cid, 0.0), *ours])
                    if now - last <= max_idle_seconds or self._busy(cid):
                        continue
                self._remove(cid)
                removed += 1
        return removed

    def remove_warm(self) -> int:
        """At shutdown: remove the warm containers this process used, except those running
        another process's command (that process removes them, or its next start does)."""
        removed = 0
        with self.errors():
            for cid in {w.container_id for w in self._warm.values()}:
                if self._busy(cid):
                    continue
                self._remove(cid)
                removed += 1
        return removed

    def reap_orphans(self) -> int:
        """At start: remove this deployment's warm containers whose maker is gone (a killed
        process never removed them). Other deployments' containers, and containers of live
        processes or of other hosts, are never touched."""
        removed = 0
        with self.errors():
            for c in self.api.containers(all=True, filters={"label": self.label}):
                owner = (c.get("Labels") or {}).get(LABEL_OWNER, "")
                if not _owner_gone(owner) or self._busy(c["Id"]):
                    continue
                self._remove(c["Id"])
                removed += 1
        return removed

    def _recent_exec_times(self, since: float, until: float) -> dict[str, float]:
        # Other worker processes use these containers too; the engine's event log is the one
        # place that sees all their execs. (It is bounded, so a very busy engine can forget an
        # old exec: then a container is recreated once more than needed, never killed mid-call.)
        latest: dict[str, float] = {}
        filters = {"type": "container", "event": "exec_start", "label": self.label}
        for event in self.api.events(
            since=int(since), until=int(until), filters=filters, decode=True
        ):
            cid = event.get("id") or event.get("Actor", {}).get("ID", "")
            latest[cid] = max(latest.get(cid, 0.0), float(event.get("time", 0)))
        return latest

    def _busy(self, cid: str) -> bool:
        import docker.errors

        try:
            exec_ids = self.api.inspect_container(cid).get("ExecIDs") or []
            return any(self.api.exec_inspect(e).get("Running") for e in exec_ids)
        except docker.errors.NotFound:
            return False

    def health(self) -> tuple[bool, str]:
        import docker.errors

        try:
            with self.errors():
                version = self.api.version().get("Version", "?")
                try:
                    image = self.api.inspect_image(self.image)
                except docker.errors.ImageNotFound:
                    return False, f"sandbox image {self.image} missing — run `make sandbox-image`"
                warm = self.api.containers(filters={"label": self.label})
        except SandboxError as exc:
            return False, str(exc)
        size = int(image.get("Size", 0)) >> 20
        return True, (
            f"Docker {version} at {self.where}; image {self.image} ({size} MiB); "
            f"{len(warm)} warm container(s)"
        )
