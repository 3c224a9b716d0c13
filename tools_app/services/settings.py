"""Writes from the Tools Manager: group settings, group on/off, per-function switches.

Every change is validated first (settings through the group's own Pydantic model) and then
recorded in the audit log with its before/after, in the same transaction as the write, so
the log cannot miss a change that happened nor record one that did not.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import Group
from django.db import transaction
from django.utils.translation import gettext as _
from pydantic import SecretStr

from tools_app import selectors
from tools_app.models import MAX_APPROVALS, ToolFunctionConfig, ToolGroupConfig
from tools_app.registry import BaseTool, GroupSettings, ToolGroup, secret_fields
from tools_app.services.audit import audit_settings_change

# The per-function switches an admin may flip, and what the audit log calls them.
FUNCTION_SWITCHES = ("enabled", "reasoning_for_call")
APPROVAL_MODES = tuple(ToolFunctionConfig.ApprovalMode.values)


class SettingsError(ValueError):
    """Unknown group, function or switch (the page offered something that does not exist)."""


def _group(name: str) -> ToolGroup:
    found = selectors.group_named(name)
    if found is None:
        raise SettingsError(_("unknown tool group %(name)s") % {"name": f"{name!r}"})
    return found


def _tool(name: str) -> type[BaseTool]:
    found = selectors.tool_named(name)
    if found is None:
        raise SettingsError(_("unknown tool %(name)s") % {"name": f"{name!r}"})
    return found


def group_settings_save(
    *, user: Any, group: str, values: dict[str, Any], clear_secrets: Iterable[str] = ()
) -> tuple[GroupSettings, list[str]]:
    """Validate ``values`` with the group's settings model and store them; return the
    settings and the names of the fields that changed.

    Raises pydantic's ValidationError (the form shows it inline). Only the model's own fields
    are stored, so keys left over from an older version of the model disappear on save.

    Secret fields (``SecretStr``) are write-only: a non-blank value replaces the stored one,
    a blank or missing one keeps it, and a name in ``clear_secrets`` removes it. They are
    stored encrypted in ``ToolGroupConfig.secrets``, never in ``settings``, and the audit log
    records only that they changed.
    """
    model = _group(group).settings_model
    secret_names = set(secret_fields(model))
    validated = model.model_validate(values)
    after = validated.model_dump(mode="json", exclude=secret_names)
    with transaction.atomic():
        config, _ = ToolGroupConfig.objects.select_for_update().get_or_create(name=group)
        before = selectors.stored_group_settings(config, group).model_dump(
            mode="json", exclude=secret_names
        )
        old_secrets = selectors.group_secrets(config.secrets)
        new_secrets = _merged_secrets(old_secrets, validated, secret_names, set(clear_secrets))
        changed = sorted(k for k in after if before.get(k) != after[k])
        changed_secrets = sorted(
            k for k in secret_names if old_secrets.get(k) != new_secrets.get(k)
        )
        result = model.model_validate({**after, **new_secrets})
        if not changed and not changed_secrets and config.settings == after:
            return result, []
        config.settings = after
        config.secrets = json.dumps(new_secrets, sort_keys=True) if new_secrets else ""
        config.updated_by = user
        config.save(update_fields=["settings", "secrets", "updated_by", "updated_at"])
        if changed or changed_secrets:
            # Secrets appear only as "stored"/"not stored" (and are redacted by name as well).
            state = {True: "stored", False: "not stored"}
            audit_settings_change(
                user=user,
                group=group,
                before={**before, **{k: state[k in old_secrets] for k in changed_secrets}},
                after={**after, **{k: state[k in new_secrets] for k in changed_secrets}},
            )
    return result, sorted(changed + changed_secrets)


def _merged_secrets(
    old: dict[str, str], validated: GroupSettings, names: set[str], clear: set[str]
) -> dict[str, str]:
    merged = {k: v for k, v in old.items() if k in names and k not in clear}
    for name in names:
        value = getattr(validated, name)
        plain = value.get_secret_value() if isinstance(value, SecretStr) else str(value or "")
        if plain.strip():
            merged[name] = plain.strip()
    return merged


def group_enabled_set(*, user: Any, group: str, enabled: bool) -> ToolGroupConfig:
    name = _group(group).name
    with transaction.atomic():
        config, _ = ToolGroupConfig.objects.select_for_update().get_or_create(name=name)
        if config.enabled != enabled:
            before = {"enabled": config.enabled}
            config.enabled = enabled
            config.updated_by = user
            config.save(update_fields=["enabled", "updated_by", "updated_at"])
            audit_settings_change(user=user, group=group, before=before, after={"enabled": enabled})
    return config


def function_switch_set(*, user: Any, tool: str, switch: str, value: bool) -> ToolFunctionConfig:
    """Set one per-function switch (enabled, ask why)."""
    found = _tool(tool)
    if switch not in FUNCTION_SWITCHES:
        raise SettingsError(_("unknown switch %(switch)s") % {"switch": f"{switch!r}"})
    with transaction.atomic():
        config, _created = ToolFunctionConfig.objects.select_for_update().get_or_create(name=tool)
        current = bool(getattr(config, switch))
        if current != value:
            setattr(config, switch, value)
            config.save(update_fields=[switch, "updated_at"])
            audit_settings_change(
                user=user,
                group=found.tool_group,
                tool=tool,
                before={switch: current},
                after={switch: value},
            )
    return config


def function_approval_set(
    *,
    user: Any,
    tool: str,
    mode: str,
    approver_group_ids: Iterable[int] | None = None,
    approvals_needed: int | None = None,
) -> ToolFunctionConfig:
    """Who must decide a call of this function: nobody (none), the person who asked
    (requester), or a member of the approver groups (approver) — ``approvals_needed`` of
    them, distinct (1 to MAX_APPROVALS). ``approver_group_ids`` / ``approvals_needed``: None
    keeps them as they are."""
    found = _tool(tool)
    if mode not in APPROVAL_MODES:
        raise SettingsError(_("unknown approval mode %(mode)s") % {"mode": f"{mode!r}"})
    if approvals_needed is not None and not 1 <= approvals_needed <= MAX_APPROVALS:
        raise SettingsError(
            _("approvals needed must be between 1 and %(max)s") % {"max": MAX_APPROVALS}
        )
    with transaction.atomic():
        config, _created = ToolFunctionConfig.objects.select_for_update().get_or_create(name=tool)
        before_groups = sorted(config.approver_groups.values_list("name", flat=True))
        before: dict[str, Any] = {"approval_mode": config.approval_mode, "approvers": before_groups}
        before_needed = config.approvals_needed
        if approver_group_ids is not None:
            ids = set(approver_group_ids)
            groups = list(Group.objects.filter(pk__in=ids))
            if len(groups) != len(ids):
                raise SettingsError(_("unknown approver group"))
            config.approver_groups.set(groups)
        after_groups = sorted(config.approver_groups.values_list("name", flat=True))
        needed = config.approvals_needed if approvals_needed is None else approvals_needed
        after: dict[str, Any] = {"approval_mode": mode, "approvers": after_groups}
        if (before_needed, needed) != (1, 1):  # recorded once anyone asked for more than one
            before["approvals_needed"], after["approvals_needed"] = before_needed, needed
        if (config.approval_mode, config.approvals_needed) != (mode, needed):
            config.approval_mode, config.approvals_needed = mode, needed
            config.save(update_fields=["approval_mode", "approvals_needed", "updated_at"])
        if before != after:
            audit_settings_change(
                user=user, group=found.tool_group, tool=tool, before=before, after=after
            )
    return config


def function_limits_set(
    *, user: Any, tool: str, timeout_seconds: int | None, calls_per_minute: int | None
) -> ToolFunctionConfig:
    """A function's own timeout and calls-per-minute (None: the group's setting applies)."""
    found = _tool(tool)
    with transaction.atomic():
        config, _created = ToolFunctionConfig.objects.select_for_update().get_or_create(name=tool)
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
                user=user, group=found.tool_group, tool=tool, before=before, after=after
            )
    return config
