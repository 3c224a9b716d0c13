"""The docker sandbox's hardening, written once.

Every container the docker backend makes is created from ``Hardening.create_kwargs``: the warm
containers commands run in and the containers ``spawn()`` makes for long-lived processes (stdio
MCP servers). A non-root uid, no capabilities, no privilege gain, a read-only root with a small
``/tmp``, memory (no swap), CPU and process limits, open-file and process ulimits, tini as pid 1,
and no network unless asked for (then a user-defined bridge, never the host's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools_app.sandbox.base import WORKSPACE
from tools_app.sandbox.base import Mount as HostFolder

NETWORK = "cc-sandbox-net"  # user-defined bridge: dockerd may run with --bridge=none
NOFILE = 256


@dataclass(frozen=True)
class Hardening:
    uid: int
    memory: int  # bytes; the limit includes swap, so there is none
    pids: int
    cpus: float
    tmpfs_size: str

    @property
    def user(self) -> str:
        return f"{self.uid}:{self.uid}"

    def create_kwargs(
        self,
        api: Any,
        *,
        name: str,
        command: list[str],
        environment: dict[str, str],
        labels: dict[str, str],
        workspace: Path,
        network: bool,
        ro_binds: Sequence[Path] = (),
        host_folders: Sequence[HostFolder] = (),
        auto_remove: bool = False,
    ) -> dict[str, Any]:
        """Keyword arguments for ``api.create_container(image, **kwargs)`` (docker SDK's low-level
        ``APIClient``): ``workspace`` is bind-mounted at /workspace, each of ``ro_binds``
        read-only at its own path."""
        from docker.types import Mount, Ulimit

        # Mounts, not "src:dst:rw" bind strings, so a ':' in a host path is harmless.
        mounts = [Mount(WORKSPACE, str(workspace), type="bind", read_only=False)]
        mounts += [Mount(str(path), str(path), type="bind", read_only=True) for path in ro_binds]
        mounts += [
            Mount(m.target, str(m.source), type="bind", read_only=not m.writable)
            for m in host_folders
        ]
        host_config = api.create_host_config(
            mounts=mounts,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            read_only=True,
            tmpfs={"/tmp": f"rw,nosuid,nodev,size={self.tmpfs_size},mode=1777"},  # noqa: S108
            mem_limit=self.memory,
            memswap_limit=self.memory,  # no swap: the memory limit is the limit
            pids_limit=self.pids,
            nano_cpus=int(self.cpus * 1e9),
            ulimits=[
                Ulimit(name="nofile", soft=NOFILE, hard=NOFILE),
                # RLIMIT_NPROC counts every process of this uid on the host, other sandboxes
                # included; the per-container cap is pids_limit, this only bounds the total.
                Ulimit(name="nproc", soft=self.pids * 4, hard=self.pids * 4),
            ],
            network_mode=NETWORK if network else "none",
            init=True,  # tini as pid 1 reaps the orphans of killed process groups
            privileged=False,
            auto_remove=auto_remove,
        )
        return {
            "command": command,
            "name": name,
            "user": self.user,
            "working_dir": WORKSPACE,
            "hostname": "sandbox",
            "environment": environment,
            "labels": labels,
            "host_config": host_config,
        }
