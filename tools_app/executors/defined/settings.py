from __future__ import annotations

from typing import Any

from tools_app.registry import GroupSettings, ToolGroup


class DefinedSettings(GroupSettings):
    """The common settings (timeout, calls per minute, guards, filter webhook)."""


def defined_group(source: Any) -> ToolGroup:
    return ToolGroup(
        name=source.group_name,
        label=source.label or source.name,
        description=source.description or "Tools defined from a JSON Schema.",
        settings_model=DefinedSettings,
        limits=("timeout_seconds",),
        order=310,
    )
