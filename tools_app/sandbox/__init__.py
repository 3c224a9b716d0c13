"""Sandboxes that run tool commands: docker (warm hardened containers), bubblewrap, or none.

Callers use ``get_sandbox()`` and the ``Sandbox.exec`` interface; see ``base`` for the contract
and ``selection`` for configuration.
"""

from __future__ import annotations

from tools_app.sandbox.base import ExecRequest, ExecResult, Sandbox, SandboxError
from tools_app.sandbox.selection import available_backends, get_sandbox, reap_idle_sandboxes

__all__ = [
    "ExecRequest",
    "ExecResult",
    "Sandbox",
    "SandboxError",
    "available_backends",
    "get_sandbox",
    "reap_idle_sandboxes",
]
