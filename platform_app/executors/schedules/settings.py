from __future__ import annotations

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.utils.translation import gettext as _
from pydantic import Field, field_validator

from tools_app.registry import GroupSettings, ToolGroup, register_group


class SchedulesSettings(GroupSettings):
    timeout_seconds: int = Field(15, ge=1, le=120, description="Longest a call may run (s).")
    max_per_user: int = Field(
        20, ge=1, le=1000, description="Schedules one user may have (the quota)."
    )
    min_interval_minutes: int = Field(
        1,
        ge=1,
        le=10_080,
        description="Shortest time allowed between two firings of one schedule (minutes).",
    )
    timezone: str = Field(
        "UTC",
        min_length=1,
        max_length=64,
        description="Time zone the cron fields are read in (IANA name, e.g. Europe/Berlin).",
    )
    max_message_chars: int = Field(
        4000, ge=1, le=100_000, description="Longest message a schedule may send."
    )
    allowed_models: list[str] = Field(
        default_factory=list,
        description="Model names a schedule may ask for, one per line (empty: the agent's "
        "model, its provider's, or one of the provider's allowed models).",
    )

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            ZoneInfo(value.strip())
        except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
            raise ValueError(f"unknown time zone {value!r}") from exc
        return value.strip()

    @field_validator("allowed_models")
    @classmethod
    def _models(cls, value: list[str]) -> list[str]:
        return [v.strip() for v in value if v.strip()]


def schedules_status(settings: object) -> tuple[str, str, str]:
    """For the Tools Manager: whether Celery beat's ticks arrive."""
    from django.conf import settings as django_settings
    from django.utils import timezone

    from platform_app.schedules import beat_last_tick

    tick = django_settings.SCHEDULES_TICK_SECONDS
    where = "beat in-process" if django_settings.MODE == "embedded" else "celery beat"
    start = (
        "it starts with the web process (manage.py serve)"
        if django_settings.MODE == "embedded"
        else "run `celery -A controlcenter beat` (make beat) beside the workers"
    )
    last = beat_last_tick()
    if last is None:
        return "bad", f"{where}: no tick yet", f"no schedules tick has run yet; {start}"
    age = (timezone.now() - last).total_seconds()
    if age > 3 * tick + 5:
        return (
            "bad",
            f"{where}: no tick for {int(age)} s",
            f"schedules do not fire: the last tick ran {int(age)} s ago; {start}",
        )
    return "ok", f"{where}, every {tick:g} s", f"last tick {int(age)} s ago"


GROUP = register_group(
    ToolGroup(
        name="schedules",
        label=_("Schedules"),
        description="Cron schedules: at each due time a message runs as an agent turn of its "
        "owner, in a conversation of theirs or a new one.",
        settings_model=SchedulesSettings,
        limits=("max_per_user", "min_interval_minutes", "timezone"),
        order=87,
        status=schedules_status,
    )
)
