"""Sandboxes that run tool commands: docker (warm hardened containers), bubblewrap, or none.

Callers use ``get_sandbox()`` and the ``Sandbox.exec`` interface (``Sandbox.spawn`` for
long-lived processes); see ``base`` for the contract, ``hardening`` for the docker containers'
one hardening profile and ``selection`` for configuration.
"""

from __future__ import annotations

from tools_app.sandbox.base import (
    ExecRequest,
    ExecResult,
    Sandbox,
    SandboxError,
    Spawned,
    SpawnRequest,
)
from tools_app.sandbox.selection import (
    available_backends,
    get_sandbox,
    reap_idle_sandboxes,
    reap_orphaned_sandboxes,
    shutdown_sandboxes,
)

__all__ = [
    "ExecRequest",
    "ExecResult",
    "Sandbox",
    "SandboxError",
    "SpawnRequest",
    "Spawned",
    "available_backends",
    "get_sandbox",
    "reap_idle_sandboxes",
    "reap_orphaned_sandboxes",
    "shutdown_sandboxes",
]
