"""Reads: tool and group configuration as admins left it."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import ValidationError

from tools_app.models import ToolFunctionConfig, ToolGroupConfig
from tools_app.registry import GROUPS, TOOLS, BaseTool, GroupSettings

logger = logging.getLogger(__name__)


def _validated_settings(name: str, stored: dict[str, object]) -> GroupSettings:
    group = GROUPS[name]
    known = {k: v for k, v in stored.items() if k in group.settings_model.model_fields}
    try:
        return group.settings_model.model_validate(known)
    except ValidationError:
        logger.warning("stored settings of tool group %s are invalid; using defaults", name)
        return group.settings_model()


def group_settings(name: str) -> GroupSettings:
    """The group's validated settings; defaults for anything never saved."""
    config = ToolGroupConfig.objects.filter(name=name).only("settings").first()
    return _validated_settings(name, dict(config.settings) if config else {})


@dataclass(frozen=True)
class ToolState:
    """Everything binding needs to know about one tool, read in two queries."""

    disabled_reason: str | None
    requires_approval: bool
    settings: GroupSettings
    calls_per_minute: int | None = None  # the function's own limit, when an admin set one


def tool_state(tool: type[BaseTool]) -> ToolState:
    group = ToolGroupConfig.objects.filter(name=tool.tool_group).first()
    function = function_config(tool.tool_name)
    reason = None
    if group is not None and not group.enabled:
        reason = (
            f"tool {tool.tool_name!r} is disabled: its group {tool.tool_group!r} is switched off"
        )
    elif not function.enabled:
        reason = f"tool {tool.tool_name!r} is disabled by an administrator"
    return ToolState(
        disabled_reason=reason,
        requires_approval=function.requires_approval,
        calls_per_minute=function.calls_per_minute,
        settings=_validated_settings(tool.tool_group, dict(group.settings) if group else {}),
    )


def group_enabled(name: str) -> bool:
    config = ToolGroupConfig.objects.filter(name=name).only("enabled").first()
    return config.enabled if config else True


def function_config(name: str) -> ToolFunctionConfig:
    config = ToolFunctionConfig.objects.filter(name=name).first()
    return config or ToolFunctionConfig(name=name)


def tool_disabled_reason(tool: type[BaseTool]) -> str | None:
    if not group_enabled(tool.tool_group):
        return f"tool {tool.tool_name!r} is disabled: its group {tool.tool_group!r} is switched off"
    if not function_config(tool.tool_name).enabled:
        return f"tool {tool.tool_name!r} is disabled by an administrator"
    return None


def enabled_tools(allowed: Iterable[str] | None = None) -> list[type[BaseTool]]:
    """Tools offered to the model: enabled group, enabled function, and (optionally) in
    ``allowed``. Ordered by group then name so prompts are stable."""
    disabled_groups = set(
        ToolGroupConfig.objects.filter(enabled=False).values_list("name", flat=True)
    )
    disabled_functions = set(
        ToolFunctionConfig.objects.filter(enabled=False).values_list("name", flat=True)
    )
    from tools_app.imported import imported_sync

    imported_sync()
    allowed_set = set(allowed) if allowed is not None else None
    tools = [
        tool
        for tool in TOOLS.values()
        if tool.tool_group not in disabled_groups
        and tool.tool_name not in disabled_functions
        and (allowed_set is None or tool.tool_name in allowed_set)
    ]
    return sorted(tools, key=lambda t: (GROUPS[t.tool_group].order, t.tool_group, t.tool_name))


def tools_with_reasoning() -> set[str]:
    return set(
        ToolFunctionConfig.objects.filter(reasoning_for_call=True).values_list("name", flat=True)
    )


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
