"""current_time: the timezone asked for, else the default an admin set for the Time group."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from tests.tools.calls import ok, run_tool
from tests.tools.conftest import configure
from tools_app.executors.time.settings import TimeSettings

pytestmark = [pytest.mark.django_db]


def test_it_uses_the_admins_default_timezone_when_the_call_gives_none(user: Any) -> None:
    configure("time", default_timezone="Asia/Tokyo")
    result = ok(run_tool("current_time", user=user))
    assert result["timezone"] == "Asia/Tokyo" and result["utc_offset"] == "+0900"
    # A model that follows the strict schema sends null for "not given".
    assert ok(run_tool("current_time", user=user, timezone=None))["timezone"] == "Asia/Tokyo"


def test_a_timezone_in_the_call_wins_over_the_default(user: Any) -> None:
    configure("time", default_timezone="Asia/Tokyo")
    result = ok(run_tool("current_time", user=user, timezone="Europe/Berlin"))
    assert result["timezone"] == "Europe/Berlin"


def test_without_a_saved_default_it_is_utc(user: Any) -> None:
    result = ok(run_tool("current_time", user=user))
    assert result["timezone"] == "UTC" and result["utc_offset"] == "+0000"


def test_an_unknown_default_timezone_cannot_be_saved() -> None:
    with pytest.raises(
        ValidationError, match="unknown timezone 'Berlin' .did you mean Europe/Berlin"
    ):
        TimeSettings(default_timezone="Berlin")
    assert TimeSettings(default_timezone=" utc ").default_timezone == "UTC"
