from __future__ import annotations

from pydantic import Field

from tools_app.registry import GroupSettings, ToolGroup, register_group


class TimeSettings(GroupSettings):
    timeout_seconds: int = Field(5, ge=1, le=60, description="Longest a call may run (s).")
    default_timezone: str = Field("UTC", description="Timezone used when none is given.")


GROUP = register_group(
    ToolGroup(
        name="time",
        label="Time",
        description="Current date and time in any IANA timezone.",
        settings_model=TimeSettings,
        order=90,
    )
)
