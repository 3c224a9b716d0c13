from __future__ import annotations

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from pydantic import Field, field_validator

from tools_app.executors.time.settings import TimeSettings
from tools_app.registry import BaseTool


class CurrentTime(BaseTool[TimeSettings], group="time"):
    """Return the current date and time in an IANA timezone (e.g. Europe/Berlin, UTC)."""

    timezone: str = Field(
        "UTC",
        description="IANA timezone name such as UTC or America/New_York.",
        examples=["Europe/Berlin"],
    )

    @field_validator("timezone")
    @classmethod
    def _known_timezone(cls, value: str) -> str:
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
