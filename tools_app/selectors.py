"""Reads: tool and group configuration as admins left it.

Binding and execution read this configuration on every call, so each process keeps it in
memory and asks the database one question per read: is ``ToolConfigVersion.token`` still the
one the copy was made under? Every write to the configuration, from any process, changes the
token (signals and ``ConfigQuerySet`` in ``tools_app.models``), so a change made by an admin in
the web process applies to the very next call a worker binds or runs.

Imported tools (MCP servers, OpenAPI documents) are configuration too: a write to a
``ToolSource`` moves the same token, and a read that finds it moved registers them again
(``tools_app.imported``). Code that looks a tool or group up by name where an imported one may
be meant asks here (``tool_named``, ``group_named``, ``registered_tools``…), not the registry.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar, cast, overload

from django.db.models import TextField
from django.db.models.functions import Cast
from pydantic import ValidationError

from infra.secrets import SecretDecryptionError, decrypt
from tools_app.imported import imported_refresh
from tools_app.models import ToolFunctionConfig, ToolGroupConfig
from tools_app.registry import (
    GROUPS,
    TOOLS,
    BaseTool,
    GroupSettings,
    SettingsT,
    ToolGroup,
    get_tool,
)
from tools_app.registry import tool_for_slash as _tool_for_slash
from tools_app.services.call_statements import config_token

logger = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class _Function:
    enabled: bool = True
    approval_mode: str = "none"  # none | requester | approver (ToolFunctionConfig.ApprovalMode)
    approver_group_ids: tuple[int, ...] = ()
    reasoning_for_call: bool = False
    timeout_seconds: int | None = None  # the function's own limits (None: the group's)
    calls_per_minute: int | None = None
    approvals_needed: int = 1  # approver mode: distinct approvers before a call runs


_DEFAULT_FUNCTION = _Function()


@dataclass(frozen=True)
class ConfigSnapshot:
    """Tool configuration as stored when ``token`` was current (``None``: read without a token,
    never reused)."""

    token: str | None
    groups: dict[str, tuple[bool, dict[str, Any]]]  # name → (enabled, stored settings)
    functions: dict[str, _Function]

    def group_enabled(self, name: str) -> bool:
        return self.groups.get(name, (True, {}))[0]

    def function(self, name: str) -> _Function:
        return self.functions.get(name, _DEFAULT_FUNCTION)

    def settings(self, name: str) -> GroupSettings:
        # Validated on every read: cheap (µs), and every caller gets its own instance.
        return _validated_settings(name, self.groups.get(name, (True, {}))[1])


_lock = threading.Lock()
_cached: ConfigSnapshot | None = None
_pinned = threading.local()


def _new_lock_after_fork() -> None:
    # A tools worker's pool child is forked from a process whose threads read the
    # configuration: one of them may have held the lock at that instant, and a copy of a held
    # lock is never released in the child (its calls hung in "running").
    global _lock, _pinned
    _lock = threading.Lock()
    _pinned = threading.local()


os.register_at_fork(after_in_child=_new_lock_after_fork)


@contextmanager
def config_pinned(snapshot: ConfigSnapshot | None = None) -> Iterator[ConfigSnapshot]:
    """One configuration for a unit of work (a model round): every read inside sees the same
    snapshot, checked against the stored token once instead of once per read. Nested uses
    share the outer snapshot. ``snapshot``: one the caller has just read (a call's)."""
    outer: ConfigSnapshot | None = getattr(_pinned, "snapshot", None)
    if outer is not None:
        yield outer
        return
    snapshot = snapshot or config_snapshot()
    _pinned.snapshot = snapshot
    try:
        yield snapshot
    finally:
        _pinned.snapshot = None


_memo: dict[Any, Any] = {}
_memo_token: str | None = None
# Keys per person ("person groups", user id) make it grow with everyone who takes a turn
# while the configuration stands: past this many entries it starts again.
_MEMO_MAX = 10_000


def config_memo(key: Any, build: Callable[[], T]) -> T:
    """``build()``, kept under the pinned snapshot's token: for rows read on every model
    round that change only with the configuration (an agent profile, a provider), whose
    writes move the token on too (``ConfigQuerySet`` and the apps' signals). Outside
    ``config_pinned`` (no token read for this unit of work) it is simply ``build()``. The
    value is shared between threads: callers must not change it."""
    global _memo_token
    snapshot: ConfigSnapshot | None = getattr(_pinned, "snapshot", None)
    if snapshot is None or snapshot.token is None:
        return build()
    with _lock:
        if _memo_token != snapshot.token:
            _memo.clear()
            _memo_token = snapshot.token
        if key in _memo:
            return cast(T, _memo[key])
    value = build()  # read after the token: never older than it (see config_snapshot)
    with _lock:
        if _memo_token == snapshot.token:
            if len(_memo) >= _MEMO_MAX:
                _memo.clear()
            _memo[key] = value
    return value


def _current_token() -> str | None:
    return config_token()


def config_snapshot(*, token: str | None = None) -> ConfigSnapshot:
    """The tool configuration as now stored: from memory when the stored token says it is
    unchanged, else read again (two queries). ``token``: the stored token, when the caller
    has just read it in a statement of its own (a call's claim does)."""
    global _cached
    pinned: ConfigSnapshot | None = getattr(_pinned, "snapshot", None)
    if pinned is not None and token is None:
        return pinned
    # The token first, then the rows: a copy may be newer than its token (then it is read
    # again next time), never older.
    if token is None:
        token = _current_token()
    imported_refresh(token)  # in memory unless the token moved
    cached = _cached
    if token is not None and cached is not None and cached.token == token:
        return cached
    # Secrets are read as stored (encrypted) and decrypted per group, so a key that can no
    # longer be decrypted costs that group its secret, not every tool its configuration.
    rows = ToolGroupConfig.objects.annotate(
        stored_secrets=Cast("secrets", output_field=TextField())
    ).values_list("name", "enabled", "settings", "stored_secrets")
    groups = {
        name: (enabled, {**(stored or {}), **group_secrets(_decrypted(name, secrets))})
        for name, enabled, stored, secrets in rows
    }
    approvers: dict[int, list[int]] = {}
    for function_id, group_id in ToolFunctionConfig.approver_groups.through.objects.values_list(
        "toolfunctionconfig_id", "group_id"
    ):
        approvers.setdefault(function_id, []).append(group_id)
    functions = {
        name: _Function(
            enabled,
            mode,
            tuple(sorted(approvers.get(pk, ()))),
            reasoning,
            timeout,
            per_minute,
            approvals_needed=needed,
        )
        for pk, name, enabled, mode, reasoning, timeout, per_minute, needed in (
            ToolFunctionConfig.objects.values_list(
                "pk",
                "name",
                "enabled",
                "approval_mode",
                "reasoning_for_call",
                "timeout_seconds",
                "calls_per_minute",
                "approvals_needed",
            )
        )
    }
    snapshot = ConfigSnapshot(token=token, groups=groups, functions=functions)
    if token is not None:
        with _lock:
            _cached = snapshot
    return snapshot


def _validated_settings(name: str, stored: dict[str, Any]) -> GroupSettings:
    group = GROUPS[name]
    known = {k: v for k, v in stored.items() if k in group.settings_model.model_fields}
    try:
        return group.settings_model.model_validate(known)
    except ValidationError:
        logger.warning("stored settings of tool group %s are invalid; using defaults", name)
        return group.settings_model()


def _decrypted(name: str, stored: str | None) -> str:
    try:
        return decrypt(stored or "")
    except SecretDecryptionError:
        logger.error("the secrets of tool group %s cannot be decrypted; ignoring them", name)
        return ""


def group_secrets(stored: str | None) -> dict[str, str]:
    """The decrypted ``ToolGroupConfig.secrets`` of a group: field name → plain value."""
    if not stored:
        return {}
    try:
        values = json.loads(stored)
    except json.JSONDecodeError:
        logger.warning("stored secrets of a tool group are not JSON; ignoring them")
        return {}
    if not isinstance(values, dict):
        return {}
    return {str(k): v for k, v in values.items() if isinstance(v, str) and v}


@overload
def group_settings(name: str) -> GroupSettings: ...
@overload
def group_settings(name: str, model: type[SettingsT]) -> SettingsT: ...
def group_settings(name: str, model: type[GroupSettings] | None = None) -> GroupSettings:
    """The group's validated settings; defaults for anything never saved. ``model``: the
    group's settings model, when the caller reads its own fields (another group's settings,
    typed: ``group_settings("file", FileSettings).allowed_paths``)."""
    settings = config_snapshot().settings(name)
    if model is not None and not isinstance(settings, model):
        raise TypeError(f"tool group {name!r} has {type(settings).__name__}, not {model.__name__}")
    return settings


def stored_group_settings(config: ToolGroupConfig | None, name: str) -> GroupSettings:
    """The validated settings of a row the caller holds (e.g. locked for an update)."""
    if config is None:
        return _validated_settings(name, {})
    return _validated_settings(name, {**config.settings, **group_secrets(config.secrets)})


@dataclass(frozen=True)
class ToolState:
    """Everything binding needs to know about one tool."""

    disabled_reason: str | None
    approval_mode: str  # none | requester | approver
    settings: GroupSettings
    calls_per_minute: int | None = None  # the function's own limit, when an admin set one
    approver_group_ids: tuple[int, ...] = ()
    approvals_needed: int = 1

    @property
    def requires_approval(self) -> bool:
        return self.approval_mode != "none"


def _disabled_reason(snapshot: ConfigSnapshot, tool: type[BaseTool]) -> str | None:
    if not snapshot.group_enabled(tool.tool_group):
        return f"tool {tool.tool_name!r} is disabled: its group {tool.tool_group!r} is switched off"
    if not snapshot.function(tool.tool_name).enabled:
        return f"tool {tool.tool_name!r} is disabled by an administrator"
    return None


def tool_state(tool: type[BaseTool], snapshot: ConfigSnapshot | None = None) -> ToolState:
    snapshot = snapshot or config_snapshot()
    return ToolState(
        disabled_reason=_disabled_reason(snapshot, tool),
        approval_mode=snapshot.function(tool.tool_name).approval_mode,
        approver_group_ids=snapshot.function(tool.tool_name).approver_group_ids,
        approvals_needed=snapshot.function(tool.tool_name).approvals_needed,
        calls_per_minute=snapshot.function(tool.tool_name).calls_per_minute,
        settings=snapshot.settings(tool.tool_group),
    )


def group_enabled(name: str) -> bool:
    return config_snapshot().group_enabled(name)


def tool_disabled_reason(tool: type[BaseTool]) -> str | None:
    return _disabled_reason(config_snapshot(), tool)


def enabled_tools(allowed: Iterable[str] | None = None) -> list[type[BaseTool]]:
    """Tools offered to the model: enabled group, enabled function, and (optionally) in
    ``allowed``. Ordered by group then name so prompts are stable."""
    snapshot = config_snapshot()
    allowed_set = set(allowed) if allowed is not None else None
    tools = [
        tool
        for tool in TOOLS.values()
        if _disabled_reason(snapshot, tool) is None
        and (allowed_set is None or tool.tool_name in allowed_set)
    ]
    return sorted(tools, key=lambda t: (GROUPS[t.tool_group].order, t.tool_group, t.tool_name))


def tool_named(name: str) -> type[BaseTool] | None:
    """The tool called ``name``, imported ones as the stored configuration has them (one
    added a moment ago in another process included)."""
    config_snapshot()
    return get_tool(name)


def tool_for_slash(word: str) -> type[BaseTool] | None:
    """The tool a slash command names (its name or alias), imported ones included."""
    config_snapshot()
    return _tool_for_slash(word)


def group_named(name: str) -> ToolGroup | None:
    config_snapshot()
    return GROUPS.get(name)


def registered_tools() -> dict[str, type[BaseTool]]:
    """Every tool, enabled or not, imported ones included (callers must not change it)."""
    config_snapshot()
    return TOOLS


def registered_groups() -> list[ToolGroup]:
    """Every tool group in the order the prompts and the Tools Manager show them."""
    config_snapshot()
    return sorted(GROUPS.values(), key=lambda g: (g.order, g.name))


def tools_with_reasoning() -> set[str]:
    """The functions whose calls must say why (``_reasoningForCall``): those whose own switch
    is on, and every function of a group whose *explain why* default is on."""
    snapshot = config_snapshot()
    named = {name for name, f in snapshot.functions.items() if f.reasoning_for_call}
    groups = {name for name, (_, stored) in snapshot.groups.items() if stored.get("explain_why")}
    if not groups:
        return named
    return named | {
        tool.tool_name for name in groups if name in GROUPS for tool in GROUPS[name].tools
    }


def images_to_model_enabled() -> bool:
    """Whether an admin lets screenshots reach models with image input (Browser settings)."""
    if "browser" not in GROUPS:
        return False
    return bool(getattr(group_settings("browser"), "send_images_to_model", False))


def call_images(call_id: int) -> list[tuple[str, str]]:
    """(mime type, base64 data) of the images a call produced (browser screenshots)."""
    import base64

    from tools_app.models import Screenshot

    images = []
    for shot in Screenshot.objects.filter(tool_call_id=call_id):
        from tools_app.executors.browser.screenshots import screenshot_file

        path = screenshot_file(shot)
        if path is not None:
            images.append(("image/png", base64.b64encode(path.read_bytes()).decode("ascii")))
    return images
