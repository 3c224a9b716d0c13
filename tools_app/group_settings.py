"""The base of every tool group's admin-editable settings.

Its own module so that ``tools_app.runtime`` (whose contexts carry a group's settings) and
``tools_app.registry`` (whose groups name their settings model) both build on it without
importing each other. Executors import it from the registry, next to ``ToolGroup``.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field


class GroupSettings(BaseModel):
    """Settings every tool group has. Executors subclass it and add their own fields."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    timeout_seconds: int = Field(
        30, ge=1, le=3600, description="Longest a call may run before it is killed (s)."
    )
    calls_per_minute: int = Field(
        0, ge=0, le=10_000, description="Per-tool calls allowed per minute (0 = unlimited)."
    )


# A group's own settings model, as tools (``BaseTool[ShellSettings]``) and activities
# (``ActivityContext[ShellSettings]``) name it: their settings are typed where they are used.
SettingsT = TypeVar("SettingsT", bound=GroupSettings)
