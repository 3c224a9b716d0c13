"""Issue 20, finding 7: a six-field cron (``* * * * * *``: cronsim reads the sixth field as
seconds) passed the one-minute minimum, which was only checked above one minute, and fired
five times in 65 s. Only five fields (or an @alias) are accepted, wherever a cron comes in,
and the minimum interval always applies."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from platform_app.admin import ScheduleForm
from platform_app.models import Schedule
from platform_app.schedules import CronInvalid, cron_check, schedules_fire_due
from tests.tools.calls import run_tool

pytestmark = [pytest.mark.django_db(transaction=True)]

EVERY_SECOND = "* * * * * *"


@pytest.mark.parametrize("cron", [EVERY_SECOND, "*/5 * * * * *", "0 * * * * * 2030"])
def test_it_refuses_a_cron_with_a_seconds_field(user, cron):
    call = run_tool("schedule_add", user=user, name="fast", cron=cron, message="tick")
    assert call.status == "failed"
    assert f"invalid cron expression {cron!r}: Wrong number of fields" in call.error
    assert "there is no seconds field" in call.error
    assert not Schedule.objects.exists()


def test_it_applies_the_minimum_interval_at_one_minute_too():
    with pytest.raises(CronInvalid, match="Wrong number of fields"):
        cron_check(EVERY_SECOND, min_interval_minutes=1)
    with pytest.raises(CronInvalid, match="Wrong number of fields"):
        cron_check(EVERY_SECOND, min_interval_minutes=0)
    assert cron_check("* * * * *", min_interval_minutes=1) == "* * * * *"


def test_the_admin_form_refuses_a_seconds_field(user):
    form = ScheduleForm(
        data={
            "user": user.pk,
            "name": "fast",
            "cron": EVERY_SECOND,
            "timezone": "UTC",
            "message": "tick",
            "enabled": "on",
        }
    )
    assert not form.is_valid()
    assert "Wrong number of fields" in form.errors["cron"][0]


def test_a_stored_six_field_schedule_is_switched_off_instead_of_firing(user):
    """One stored before this check (or written past it) does not fire every second: its
    next claim finds the expression unusable and disables it, saying why."""
    now = timezone.now()
    schedule = Schedule.objects.create(
        user=user,
        name="legacy",
        cron=EVERY_SECOND,
        message="tick",
        next_run_at=now - timedelta(seconds=1),
    )
    assert schedules_fire_due(now=now) == 0
    schedule.refresh_from_db()
    assert schedule.enabled is False and schedule.last_status == "disabled"
    assert "Wrong number of fields" in schedule.last_error
    assert schedule.next_run_at is None
