"""What binding and activities get to know about the call they are handling."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Generic

from django.conf import settings as django_settings

from tools_app.errors import ToolCancelled
from tools_app.group_settings import SettingsT


def workspace_id_for(*, conversation_id: int | None, user_id: int | None) -> str:
    if conversation_id is not None:
        return f"c{conversation_id}"
    return f"u{user_id or 0}-test"


def workspace_dir_for(workspace_id: str) -> Path:
    root = Path(django_settings.WORKSPACES_DIR)
    if not root.is_dir():
        root.mkdir(parents=True, exist_ok=True)
        # The sandbox uid must be able to reach its workspace (bubblewrap looks the bind
        # source up as that uid), whatever the umask: search, not list.
        root.chmod(root.stat().st_mode | 0o111)
    path = root / workspace_id
    path.mkdir(exist_ok=True)
    return path


def scope_narrow(scope: Iterable[str] | None, names: Iterable[str] | None) -> list[str] | None:
    """The tool names in both lists, in ``names``' order (None stands for every tool)."""
    if scope is None:
        return None if names is None else list(names)
    if names is None:
        return list(scope)
    inside = set(scope)
    return [name for name in names if name in inside]


class Caller:
    """Who calls, as the checks that do not depend on a call's arguments ask it
    (``BaseTool.caller_refusal``): read from the database once, when first asked."""

    def __init__(self, user_id: int | None) -> None:
        self.user_id = user_id

    @cached_property
    def is_staff(self) -> bool:
        """An active admin (staff)."""
        if self.user_id is None:
            return False
        from django.contrib.auth import get_user_model

        users = get_user_model().objects.filter(pk=self.user_id, is_active=True, is_staff=True)
        return users.exists()


@dataclass
class BindContext:
    """Who asks for a call, from where. Policy checks read it; they never write it.

    ``scope``: the tool list of whoever originated the call — the agent profile of the model
    that asks, the API token of an outside client, the tool call that started this turn (a
    subagent, a schedule). Binding refuses anything outside it, whatever the caller offers,
    and a call that starts a turn hands it on (``ToolCall.scope``). None: not restricted."""

    user_id: int | None
    conversation_id: int | None
    source: str
    workspace_id: str = ""
    scope: list[str] | None = None
    # The agent profile's rule for calls that send something out once untrusted content
    # entered the turn: "approval", "block" or "off" (tools_app.guards.untrusted).
    untrusted_sinks: str = "approval"

    def __post_init__(self) -> None:
        if not self.workspace_id:
            self.workspace_id = workspace_id_for(
                conversation_id=self.conversation_id, user_id=self.user_id
            )


@dataclass
class ActivityContext(Generic[SettingsT]):
    """What an activity gets besides its arguments. ``settings``: the validated settings of
    the group the activity belongs to, typed by the activity
    (``ctx: ActivityContext[ShellSettings]``)."""

    call_id: int
    tool_name: str
    settings: SettingsT
    timeout: float
    workspace_id: str
    conversation_id: int | None
    user_id: int | None
    cancel: threading.Event = field(default_factory=threading.Event)
    emit: Callable[[str, str], None] | None = None
    sandbox_id: str = ""
    # The call's scope (BindContext.scope), for activities that start turns: they carry it on.
    scope: list[str] | None = None
    # The turn the call belongs to (None: the Test button, an API or /mcp/ call), for state
    # kept per turn (the research tools' numbered sources).
    turn_id: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def workspace_dir(self) -> Path:
        return workspace_dir_for(self.workspace_id)

    def emit_output(self, text: str, stream: str = "stdout") -> None:
        if text and self.emit is not None:
            self.emit(stream, text)

    def check_cancelled(self) -> None:
        if self.cancel.is_set():
            raise ToolCancelled()
