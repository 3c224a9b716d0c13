from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from tools_app.executors.time.settings import TimeSettings
from tools_app.executors.time.tools import CurrentTime
from tools_app.registry import activity
from tools_app.runtime import ActivityContext


@activity("current_time")
def current_time(args: CurrentTime, ctx: ActivityContext[TimeSettings]) -> dict[str, Any]:
    zone = args.timezone or ctx.settings.default_timezone  # not given: the admin's default
    now = datetime.now(ZoneInfo(zone))
    return {
        "timezone": zone,
        "iso": now.isoformat(timespec="seconds"),
        "date": now.strftime("%Y-%m-%d"),
        "time": now.strftime("%H:%M:%S"),
        "weekday": now.strftime("%A"),
        "utc_offset": now.strftime("%z"),
    }
