from __future__ import annotations

from pydantic import Field, field_validator

from tools_app.executors.time.settings import TimeSettings, known_timezone
from tools_app.registry import BaseTool


class CurrentTime(BaseTool[TimeSettings], group="time"):
    """Return the current date and time in an IANA timezone (e.g. Europe/Berlin, UTC)."""

    timezone: str | None = Field(
        None,
        description="IANA timezone name such as UTC or America/New_York; leave it out for "
        "the default timezone an administrator set (UTC unless changed).",
        examples=["Europe/Berlin"],
    )

    @field_validator("timezone")
    @classmethod
    def _known_timezone(cls, value: str | None) -> str | None:
        return None if value is None else known_timezone(value)
