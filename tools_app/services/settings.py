"""Writes from the Tools Manager: group settings, group on/off, per-function switches.

Every change is validated first (settings through the group's own Pydantic model) and then
recorded in the audit log with its before/after, in the same transaction as the write, so
the log cannot miss a change that happened nor record one that did not.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from tools_app import selectors
from tools_app.models import ToolFunctionConfig, ToolGroupConfig
from tools_app.registry import GROUPS, TOOLS, GroupSettings
from tools_app.services.audit import audit_settings_change

# The per-function switches an admin may flip, and what the audit log calls them.
FUNCTION_SWITCHES = ("enabled", "requires_approval", "reasoning_for_call")


class SettingsError(ValueError):
    """Unknown group, function or switch (the page offered something that does not exist)."""


def _group(name: str) -> str:
    if name not in GROUPS:
        raise SettingsError(f"unknown tool group {name!r}")
    return name


def group_settings_save(
    *, user: Any, group: str, values: dict[str, Any]
) -> tuple[GroupSettings, list[str]]:
    """Validate ``values`` with the group's settings model and store them; return the
    settings and the names of the fields that changed.

    Raises pydantic's ValidationError (the form shows it inline). Only the model's own fields
    are stored, so keys left over from an older version of the model disappear on save.
    """
    model = GROUPS[_group(group)].settings_model
    validated = model.model_validate(values)
    after = validated.model_dump(mode="json")
    with transaction.atomic():
        config, _ = ToolGroupConfig.objects.select_for_update().get_or_create(name=group)
        before = selectors.stored_group_settings(config, group).model_dump(mode="json")
        changed = sorted(k for k in after if before.get(k) != after[k])
        if not changed and config.settings == after:
            return validated, []
        config.settings = after
        config.updated_by = user
        config.save(update_fields=["settings", "updated_by", "updated_at"])
        if changed:
            audit_settings_change(user=user, group=group, before=before, after=after)
    return validated, changed


def group_enabled_set(*, user: Any, group: str, enabled: bool) -> ToolGroupConfig:
    with transaction.atomic():
        config, _ = ToolGroupConfig.objects.select_for_update().get_or_create(name=_group(group))
        if config.enabled != enabled:
            before = {"enabled": config.enabled}
            config.enabled = enabled
            config.updated_by = user
            config.save(update_fields=["enabled", "updated_by", "updated_at"])
            audit_settings_change(user=user, group=group, before=before, after={"enabled": enabled})
    return config


def function_switch_set(*, user: Any, tool: str, switch: str, value: bool) -> ToolFunctionConfig:
    """Set one per-function switch (enabled, requires approval, ask why)."""
    if tool not in TOOLS:
        raise SettingsError(f"unknown tool {tool!r}")
    if switch not in FUNCTION_SWITCHES:
        raise SettingsError(f"unknown switch {switch!r}")
    with transaction.atomic():
        config, _ = ToolFunctionConfig.objects.select_for_update().get_or_create(name=tool)
        current = bool(getattr(config, switch))
        if current != value:
            setattr(config, switch, value)
            config.save(update_fields=[switch, "updated_at"])
            audit_settings_change(
                user=user,
                group=TOOLS[tool].tool_group,
                tool=tool,
                before={switch: current},
                after={switch: value},
            )
    return config


def function_limits_set(
    *, user: Any, tool: str, timeout_seconds: int | None, calls_per_minute: int | None
) -> ToolFunctionConfig:
    """A function's own timeout and calls-per-minute (None: the group's setting applies)."""
    if tool not in TOOLS:
        raise SettingsError(f"unknown tool {tool!r}")
    with transaction.atomic():
        config, _ = ToolFunctionConfig.objects.select_for_update().get_or_create(name=tool)
        before = {
            "timeout_seconds": config.timeout_seconds,
            "calls_per_minute": config.calls_per_minute,
        }
        after = {"timeout_seconds": timeout_seconds, "calls_per_minute": calls_per_minute}
        if before != after:
            config.timeout_seconds = timeout_seconds
            config.calls_per_minute = calls_per_minute
            config.save(update_fields=["timeout_seconds", "calls_per_minute", "updated_at"])
            audit_settings_change(
                user=user, group=TOOLS[tool].tool_group, tool=tool, before=before, after=after
            )
    return config
