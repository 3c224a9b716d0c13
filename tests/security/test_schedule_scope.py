"""Every schedule binds within the tool scope of whoever made or changed it (issue 33): a token
limited to an agent profile without ``shell_exec`` (but with the ``write`` scope every default
token has) creates a schedule through ``POST /api/schedules``, or changes one through
``PATCH``, whose message — a ``/`` command or words for the model — asks for ``shell_exec``
when it fires. The call is refused, as it is through ``/v1`` and the ``schedule_add`` tool. A
narrower token narrows a schedule's scope, a wider one never widens it, and its owner's edit
on the My schedules page keeps it."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from chat_app.models import Agent
from platform_app import self_service
from platform_app.api_tokens import api_token_create
from platform_app.models import Schedule
from platform_app.schedules import schedules_fire_due
from tests.conftest import wait_turn
from tests.llm_server import Call, Reply
from tests.security.test_scope_escape import SHELL, assert_refused
from tools_app.models import ToolCall

pytestmark = [pytest.mark.django_db(transaction=True)]

# The token's profile: the clock and the schedules, not the shell.
PROFILE = ["current_time", "schedule_add", "schedule_list", "schedule_remove"]


def limited_token(user: Any, tools: list[str] = PROFILE, name: str = "limited") -> str:
    agent = Agent.objects.create(name=f"{name} profile", all_tools=False, tools=tools)
    return api_token_create(user=user, name=name, agent=agent)[1]


def rest(token: str, method: str, path: str, body: dict[str, Any]) -> Any:
    response = Client().generic(
        method,
        f"/api{path}",
        data=json.dumps(body),
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code in (200, 201), response.content
    return response.json()


def fire() -> ToolCall:
    """Fire the one schedule (its next time is at most a day away) and the call its turn made."""
    assert schedules_fire_due(now=timezone.now() + timedelta(days=2)) == 1
    turn = wait_turn(Schedule.objects.get().last_turn_id)
    return ToolCall.objects.get(turn=turn)


def page_schedule(user: Any, message: str = "/current_time") -> Schedule:
    """A schedule its owner made on the My schedules page (no scope: like their chat)."""
    form = self_service.ScheduleForm(name="daily", cron="0 9 * * *", message=message)
    return self_service.my_schedule_create(user_id=user.pk, form=form)


@pytest.mark.modes
def test_it_keeps_a_slash_message_of_a_schedule_posted_by_a_limited_token_inside_its_profile(
    worker, user
):
    body = {"name": "escape", "cron": "0 9 * * *", "message": SHELL}
    made = rest(limited_token(user), "POST", "/schedules", body)
    assert Schedule.objects.get(pk=made["id"]).tool_scope == PROFILE
    assert_refused(fire(), "shell_exec")


@pytest.mark.modes
def test_it_keeps_the_models_calls_of_a_schedule_posted_by_a_limited_token_inside_its_profile(
    worker, user, llm, provider
):
    body = {"name": "escape", "cron": "0 9 * * *", "message": "Run id in the shell."}
    rest(limited_token(user), "POST", "/schedules", body)
    llm.script(Reply(calls=[Call("shell_exec", {"command": "id"})]), Reply(text="done"))
    call = fire()
    offered = {t["function"]["name"] for t in llm.requests[0]["tools"]}
    assert "shell_exec" not in offered and offered <= set(PROFILE)
    assert_refused(call, "shell_exec")


@pytest.mark.modes
def test_it_narrows_a_schedule_a_limited_token_patches(worker, user):
    schedule = page_schedule(user)
    assert schedule.tool_scope is None
    rest(limited_token(user), "PATCH", f"/schedules/{schedule.pk}", {"message": SHELL})
    assert Schedule.objects.get(pk=schedule.pk).tool_scope == PROFILE
    assert_refused(fire(), "shell_exec")


def test_it_never_widens_a_schedules_scope_when_a_wider_token_patches_it(user):
    schedule = page_schedule(user)
    Schedule.objects.filter(pk=schedule.pk).update(tool_scope=["current_time", "schedule_list"])
    everything = api_token_create(user=user, name="everything")[1]  # no profile, no list
    rest(everything, "PATCH", f"/schedules/{schedule.pk}", {"message": SHELL})
    assert Schedule.objects.get(pk=schedule.pk).tool_scope == ["current_time", "schedule_list"]
    other = limited_token(user, ["shell_exec", "current_time"], name="other")
    rest(other, "PATCH", f"/schedules/{schedule.pk}", {"enabled": False})
    assert Schedule.objects.get(pk=schedule.pk).tool_scope == ["current_time"]


def test_it_keeps_the_scope_when_the_owner_edits_the_schedule_on_the_page(user):
    body = {"name": "daily", "cron": "0 9 * * *", "message": "/current_time"}
    made = rest(limited_token(user), "POST", "/schedules", body)
    browser = Client()
    browser.force_login(user)
    edited = browser.post(
        f"/schedules/{made['id']}/",
        {
            "name": "daily",
            "cron": "0 10 * * *",
            "message": SHELL,
            "timezone": "UTC",
            "enabled": "on",
        },
    )
    assert edited.status_code == 302, edited.content
    schedule = Schedule.objects.get(pk=made["id"])
    assert (schedule.message, schedule.tool_scope) == (SHELL, PROFILE)


def test_it_shows_the_scope_to_an_admin_and_keeps_it_when_they_edit(user, staff_user):
    body = {"name": "daily", "cron": "0 9 * * *", "message": "/current_time"}
    made = rest(limited_token(user), "POST", "/schedules", body)
    admin = Client()
    admin.force_login(staff_user)
    url = f"/admin/platform/schedule/{made['id']}/change/"
    assert "schedule_remove" in admin.get(url).content.decode()  # the scope, read-only
    form = {"user": user.pk, "name": "daily", "cron": "0 9 * * *", "timezone": "UTC"}
    edited = admin.post(url, {**form, "message": SHELL, "model": "", "enabled": "on"})
    assert edited.status_code == 302, edited.content
    schedule = Schedule.objects.get(pk=made["id"])
    assert (schedule.message, schedule.tool_scope) == (SHELL, PROFILE)
