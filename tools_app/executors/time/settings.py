from __future__ import annotations

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from django.utils.translation import gettext as _
from pydantic import Field, field_validator

from tools_app.registry import GroupSettings, ToolGroup, register_group


def known_timezone(value: str) -> str:
    """``value`` as an IANA timezone name ("utc" → "UTC"), or ValueError with close names."""
    value = value.strip()
    if value.upper() == "UTC":
        return "UTC"
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:  # OSError: a name too long
        hint = sorted(z for z in available_timezones() if value.lower() in z.lower())[:5]
        more = f" (did you mean {', '.join(hint)}?)" if hint else ""
        raise ValueError(f"unknown timezone {value!r}{more}") from exc
    return value


class TimeSettings(GroupSettings):
    timeout_seconds: int = Field(5, ge=1, le=60, description="Longest a call may run (s).")
    default_timezone: str = Field("UTC", description="Timezone used when none is given.")

    @field_validator("default_timezone")
    @classmethod
    def _known_timezone(cls, value: str) -> str:
        return known_timezone(value)


GROUP = register_group(
    ToolGroup(
        name="time",
        label=_("Time"),
        description="Current date and time in any IANA timezone.",
        settings_model=TimeSettings,
        limits=("default_timezone",),
        order=90,
    )
)
