"""Pre-approved schedules (issue 36, part 2): an approver pre-approves, for one schedule, a
function its runs call; beat fires it and the call runs unattended, "approved by standing
approval #N of bob". Never pre-approved, edited since, revoked: the call waits as before.
The owner cannot pre-approve their own calls in approver mode; the REST API lets a token
with the approve scope pre-approve on create, on change, and (an approver) on another
person's schedule."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from chat_app.models import Turn
from platform_app import self_service
from platform_app.api_tokens import api_token_create
from platform_app.models import Schedule
from platform_app.preapprovals import schedule_preapprove_for
from platform_app.tasks import schedules_tick
from tests.approvals.conftest import approver_mode, requester_mode
from tests.helpers import wait_for
from tests.llm_server import Call, Reply
from tools_app.models import AuditRecord, StandingApproval, ToolCall
from tools_app.services.approval import ApprovalError

pytestmark = pytest.mark.django_db(transaction=True)

UTC_NOW = {"tool": "current_time", "arguments": {"timezone": "UTC"}}
MESSAGE = '/current_time {"timezone": "UTC"}'


def schedule_of(
    user: Any, *, name: str = "nightly", message: str = MESSAGE, **more: Any
) -> Schedule:
    return Schedule.objects.create(
        user=user,
        name=name,
        cron="0 3 * * *",
        message=message,
        next_run_at=timezone.now() + timedelta(hours=1),
        **more,
    )


def fire(schedule: Schedule) -> ToolCall:
    """Make it due and let beat's tick fire it; the call its run made."""
    Schedule.objects.filter(pk=schedule.pk).update(
        next_run_at=timezone.now() - timedelta(minutes=1)
    )
    schedules_tick()
    turn = wait_for(
        lambda: Turn.objects.filter(schedule_id=schedule.pk).order_by("-pk").first(),
        message="the schedule's turn",
    )
    return wait_for(
        lambda: ToolCall.objects.filter(turn=turn).first(), message="the run's tool call"
    )


@pytest.mark.modes
def test_a_preapproved_schedule_runs_its_call_unattended(worker, user, other_user, leads):
    approver_mode("current_time", leads)
    schedule = schedule_of(user)
    [grant] = schedule_preapprove_for(schedule=schedule, approver=other_user, data=[UTC_NOW])
    assert (grant.scope, grant.user_id, grant.schedule_id) == ("schedule", user.pk, schedule.pk)
    call = fire(schedule)
    words = f"approved by standing approval #{grant.pk} of bob"
    assert call.decision_note == words and call.decided_by_id == other_user.pk
    done = wait_for(
        lambda: ToolCall.objects.filter(pk=call.pk, status="succeeded").first(),
        message="the call to run",
    )
    assert done.result["success"] is True
    record = AuditRecord.objects.get(tool_call=call, kind="approval")
    assert record.status == words and record.user_id == other_user.pk
    granted = AuditRecord.objects.get(kind="approval", tool_call=None, tool="current_time")
    assert granted.status == f"standing approval #{grant.pk} granted"
    assert granted.detail["schedule"] == schedule.pk
    grant.refresh_from_db()
    assert grant.uses == 1


@pytest.mark.modes
def test_the_models_call_in_a_fired_turn_runs_unattended(
    worker, user, other_user, leads, llm, provider
):
    # Not a slash command: the agent loop binds the model's call on the first round, which
    # knows its schedule from the turn (not from Schedule.last_turn, set after it starts).
    approver_mode("current_time", leads)
    schedule = schedule_of(user, message="What time is it in UTC?")
    [grant] = schedule_preapprove_for(schedule=schedule, approver=other_user, data=[UTC_NOW])
    llm.script(Reply(calls=[Call("current_time", {"timezone": "UTC"})]), Reply(text="noon"))
    call = fire(schedule)
    assert call.source == "chat" and call.decision_note.startswith(
        f"approved by standing approval #{grant.pk}"
    )
    wait_for(lambda: ToolCall.objects.filter(pk=call.pk, status="succeeded").first())


def test_a_schedule_never_preapproved_waits(worker, user, other_user, leads):
    approver_mode("current_time", leads)
    pre = schedule_of(user, name="approved")
    schedule_preapprove_for(schedule=pre, approver=other_user, data=[UTC_NOW])
    call = fire(schedule_of(user, name="plain"))
    assert call.status == ToolCall.Status.AWAITING_APPROVAL and call.decided_by_id is None
    # Nor does a pre-approval of other arguments let another call through.
    other = schedule_of(user, name="oslo", message='/current_time {"timezone": "Europe/Oslo"}')
    schedule_preapprove_for(schedule=other, approver=other_user, data=[UTC_NOW])
    assert fire(other).status == ToolCall.Status.AWAITING_APPROVAL


@pytest.mark.modes
def test_a_schedule_edited_after_preapproval_waits(worker, user, other_user, leads):
    approver_mode("current_time", leads)
    schedule = schedule_of(user)
    schedule_preapprove_for(schedule=schedule, approver=other_user, data=[UTC_NOW])
    # The same call, in another message: what was approved is the message, not the call.
    form = self_service.ScheduleForm(
        name=schedule.name, cron=schedule.cron, message='/current_time {"timezone":"UTC"}'
    )
    self_service.my_schedule_update(schedule=schedule, form=form)
    assert fire(schedule).status == ToolCall.Status.AWAITING_APPROVAL
    page = Client()
    page.force_login(user)
    shown = page.get(f"/schedules/{schedule.pk}/").content.decode()
    assert "void: the schedule changed since" in shown


def test_a_revoked_preapproval_waits(worker, user, other_user, leads):
    approver_mode("current_time", leads)
    schedule = schedule_of(user)
    [grant] = schedule_preapprove_for(schedule=schedule, approver=other_user, data=[UTC_NOW])
    root = Client()
    root.force_login(other_user)
    assert f'id="standing-{grant.pk}"' in root.get("/approvals/standing/").content.decode()
    response = root.post(f"/approvals/standing/{grant.pk}/revoke/")
    assert response.status_code == 302
    assert fire(schedule).status == ToolCall.Status.AWAITING_APPROVAL
    revoked = AuditRecord.objects.get(status=f"standing approval #{grant.pk} revoked")
    assert revoked.user_id == other_user.pk


def test_an_approver_who_left_the_group_no_longer_preapproves(worker, user, other_user, leads):
    approver_mode("current_time", leads)
    schedule = schedule_of(user)
    schedule_preapprove_for(schedule=schedule, approver=other_user, data=[UTC_NOW])
    leads.user_set.remove(other_user)
    assert fire(schedule).status == ToolCall.Status.AWAITING_APPROVAL


def test_the_owner_cannot_preapprove_their_own_calls_in_approver_mode(user, other_user, leads):
    approver_mode("current_time", leads)
    schedule = schedule_of(user)
    with pytest.raises(ApprovalError, match="you asked for this call"):
        schedule_preapprove_for(schedule=schedule, approver=user, data=[UTC_NOW])
    assert not StandingApproval.objects.exists()
    # In requester mode the owner confirms their own calls: they may pre-approve them.
    requester_mode("current_time")
    [grant] = schedule_preapprove_for(schedule=schedule, approver=user, data=[UTC_NOW])
    assert grant.granted_by_id == user.pk
    # Someone else may not pre-approve the owner's own confirm step.
    with pytest.raises(ApprovalError, match="only alice may approve"):
        schedule_preapprove_for(schedule=schedule, approver=other_user, data=[UTC_NOW])


def test_bad_preapprovals_are_clear_errors(user, other_user, leads):
    approver_mode("current_time", leads)
    schedule = schedule_of(user)
    cases = [
        ({"tool": "no_such_tool"}, "there is no function named no_such_tool"),
        ({**UTC_NOW, "match": {"timezone": "regex"}}, "unknown kind"),
        ({**UTC_NOW, "match": {"path": "prefix"}}, "path is not an argument"),
        ({**UTC_NOW, "match": {"timezone": "host"}}, r"a host needs an http\(s\) URL"),
        ({"tool": "current_time", "arguments": {"timezone": 3}}, "current_time"),
        ({**UTC_NOW, "until": "yesterday"}, "not a date and time"),
    ]
    for item, words in cases:
        with pytest.raises(ApprovalError, match=words):
            schedule_preapprove_for(schedule=schedule, approver=other_user, data=[item])
    approver_mode("current_time", leads, needed=2)
    with pytest.raises(ApprovalError, match="more than one approval"):
        schedule_preapprove_for(schedule=schedule, approver=other_user, data=[UTC_NOW])
    assert not StandingApproval.objects.exists()


# --- REST -------------------------------------------------------------------------------------
def _api(token: str, method: str, path: str, body: Any) -> Any:
    return getattr(Client(), method)(
        path, body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )


def test_rest_create_and_patch_with_preapproval(user, other_user, leads):
    member = api_token_create(user=user, name="member")[1]
    new = {"name": "n", "cron": "0 3 * * *", "message": MESSAGE, "preapprove": [UTC_NOW]}
    # Approver mode: the owner's own token is refused in words, and no schedule is made.
    approver_mode("current_time", leads)
    response = _api(member, "post", "/api/schedules", new)
    assert response.status_code == 422, response.content
    assert "you asked for this call" in response.json()["error"]["message"]
    assert not Schedule.objects.exists()
    # Requester mode: the owner confirms their own calls, so their token may.
    requester_mode("current_time")
    response = _api(member, "post", "/api/schedules", new)
    assert response.status_code == 201, response.content
    [shown] = response.json()["preapprovals"]
    assert shown["tool"] == "current_time" and shown["current"] is True
    schedule = Schedule.objects.get()
    # A token without the approve scope may change the schedule, not pre-approve.
    narrow = api_token_create(user=user, name="narrow", scopes=["read", "write"])[1]
    response = _api(narrow, "patch", f"/api/schedules/{schedule.pk}", {"preapprove": [UTC_NOW]})
    assert response.status_code == 403
    # A PATCH that changes the message and pre-approves again: the new grant is current.
    response = _api(
        member,
        "patch",
        f"/api/schedules/{schedule.pk}",
        {"message": MESSAGE + " please", "preapprove": [UTC_NOW]},
    )
    assert response.status_code == 200, response.content
    assert sorted(p["current"] for p in response.json()["preapprovals"]) == [False, True]


def test_rest_an_approver_token_preapproves_another_persons_schedule(user, other_user, leads):
    approver_mode("current_time", leads)
    schedule = schedule_of(user)
    approver = api_token_create(user=other_user, name="lead")[1]
    member = api_token_create(user=user, name="member")[1]
    path = f"/api/schedules/{schedule.pk}/preapprovals"
    response = _api(approver, "post", path, {"preapprove": [UTC_NOW]})
    assert response.status_code == 201, response.content
    [grant] = StandingApproval.objects.all()
    assert (grant.granted_by_id, grant.user_id, grant.schedule_id) == (
        other_user.pk,
        user.pk,
        schedule.pk,
    )
    # The owner's member token: refused in words (never their own approver).
    response = _api(member, "post", path, {"preapprove": [UTC_NOW]})
    assert response.status_code == 422
    assert "you asked for this call" in response.json()["error"]["message"]
    # The approver cannot edit it: PATCH is for the owner's own schedules.
    response = _api(approver, "patch", f"/api/schedules/{schedule.pk}", {"message": "hi"})
    assert response.status_code == 404
    # A member who approves nothing cannot even see another's schedule.
    mine = schedule_of(other_user, name="bobs")
    response = _api(
        member, "post", f"/api/schedules/{mine.pk}/preapprovals", {"preapprove": [UTC_NOW]}
    )
    assert response.status_code == 404


def test_the_schedules_page_preapproves_for_its_owner_and_refuses_in_words(user, other_user, leads):
    schedule = schedule_of(user)
    page = Client()
    page.force_login(user)
    form = {"tool": "current_time", "arguments": '{"timezone": "UTC"}', "match": "{}"}
    approver_mode("current_time", leads)
    response = page.post(f"/schedules/{schedule.pk}/preapprove/", form, follow=True)
    assert "you asked for this call" in response.content.decode()
    assert not StandingApproval.objects.exists()
    requester_mode("current_time")
    response = page.post(f"/schedules/{schedule.pk}/preapprove/", form, follow=True)
    grant = StandingApproval.objects.get()
    shown = response.content.decode()
    assert f'id="preapproval-{grant.pk}"' in shown and "Pre-approved current_time" in shown
    bad = page.post(
        f"/schedules/{schedule.pk}/preapprove/", {**form, "arguments": "{"}, follow=True
    )
    assert "must be JSON objects" in bad.content.decode()
    # Someone who approves nothing cannot reach another person's schedule.
    stranger = Client()
    stranger.force_login(other_user)
    leads.user_set.remove(other_user)
    assert stranger.post(f"/schedules/{schedule.pk}/preapprove/", form).status_code == 404
