"""Typed errors. Each becomes the ``{"success": false, "error": ...}`` result the model sees,
with the same words in the trace and the audit log."""

from __future__ import annotations

from typing import Any


class ToolError(Exception):
    """A tool call failed. ``permanent`` says whether retrying the same call could help;
    ``data`` is added to the result the model sees (e.g. a failed command's output)."""

    def __init__(
        self, message: str, *, permanent: bool = True, data: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.permanent = permanent
        self.data = data or {}

    def __str__(self) -> str:
        return self.message


class PolicyDenied(ToolError):
    """Policy refused the call before it reached the sandbox."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, permanent=True)
        self.reason = reason


class NetworkError(ToolError):
    """The network failed (a name that does not resolve, a host that cannot be reached): the
    call is ``failed`` with the network's reason, never a policy verdict. Retrying may help."""

    def __init__(self, message: str) -> None:
        super().__init__(message, permanent=False)


class ToolTimeout(ToolError):
    def __init__(self, seconds: float, output: str = "") -> None:
        super().__init__(f"timed out after {seconds:g} s", permanent=False)
        self.seconds = seconds
        self.output = output


class ToolCancelled(ToolError):
    def __init__(self, message: str = "cancelled by the user") -> None:
        super().__init__(message, permanent=False)
