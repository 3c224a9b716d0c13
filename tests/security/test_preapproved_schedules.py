"""Attacks on pre-approved schedules: the schedule edited through PATCH after its
pre-approval (its message rewritten to something else), a pre-approval reused by another
schedule of the same person or by another person's schedule with the same message, the
owner's own chat in the conversation the schedule writes into, and a call a guard holds
(a token in the arguments) in a pre-approved run."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from chat_app.services.turns import turn_start
from platform_app.api_tokens import api_token_create
from platform_app.models import Schedule
from platform_app.preapprovals import schedule_preapprove_for
from tests.approvals.conftest import approver_mode, requester_mode
from tests.approvals.test_preapproved_schedules import fire, schedule_of
from tests.helpers import wait_for
from tests.tools.conftest import configure
from tools_app.models import StandingApproval, ToolCall

pytestmark = pytest.mark.django_db(transaction=True)

UTC_NOW = {"tool": "current_time", "arguments": {"timezone": "UTC"}}
MESSAGE = '/current_time {"timezone": "UTC"}'
GITHUB = "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"


@pytest.fixture
def leads(other_user: Any) -> Group:
    group = Group.objects.create(name="leads")
    group.user_set.add(other_user)
    approver_mode("current_time", group)
    return group


def test_a_schedule_rewritten_through_patch_after_preapproval_waits(
    worker, user, other_user, leads
):
    schedule = schedule_of(user)
    schedule_preapprove_for(schedule=schedule, approver=other_user, data=[UTC_NOW])
    token = api_token_create(user=user, name="t")[1]
    # Rewritten to a message that makes the very same call: what was approved is the message
    # as it was (an agent's message is read by a model, whose calls nobody can foresee), so
    # even this call waits.
    response = Client().patch(
        f"/api/schedules/{schedule.pk}",
        {"message": '/current_time {"timezone":"UTC"}'},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 200, response.content
    assert response.json()["preapprovals"][0]["current"] is False
    assert fire(schedule).status == ToolCall.Status.AWAITING_APPROVAL
    # Writing it back as it was makes the approved schedule again (same message, owner).
    Schedule.objects.filter(pk=schedule.pk).update(message=MESSAGE)
    assert fire(schedule).decision_note.startswith("approved by standing approval #")


def test_a_preapproval_is_not_reused_by_another_schedule_of_the_same_person(
    worker, user, other_user, leads
):
    approved = schedule_of(user, name="approved")
    schedule_preapprove_for(schedule=approved, approver=other_user, data=[UTC_NOW])
    twin = schedule_of(user, name="twin")  # the same message, owner and agent
    assert fire(twin).status == ToolCall.Status.AWAITING_APPROVAL


def test_a_preapproval_is_not_reused_by_another_persons_schedule(
    worker, user, other_user, staff_user, leads
):
    approved = schedule_of(user)
    [grant] = schedule_preapprove_for(schedule=approved, approver=other_user, data=[UTC_NOW])
    theirs = schedule_of(staff_user, name="root's")
    assert fire(theirs).status == ToolCall.Status.AWAITING_APPROVAL
    # Even a grant pointed at that schedule's id keeps its owner's hash and person.
    StandingApproval.objects.filter(pk=grant.pk).update(schedule_id=theirs.pk)
    assert fire(theirs).status == ToolCall.Status.AWAITING_APPROVAL


def test_the_owners_own_chat_turn_is_not_a_schedule_run(
    worker, user, other_user, leads, conversation
):
    schedule = schedule_of(user, inject_into=conversation)
    schedule_preapprove_for(schedule=schedule, approver=other_user, data=[UTC_NOW])
    # The person types the schedule's message into the conversation it writes into.
    turn = turn_start(conversation=conversation, user_id=user.pk, text=MESSAGE)
    call = wait_for(lambda: ToolCall.objects.filter(turn=turn).first())
    assert call.status == ToolCall.Status.AWAITING_APPROVAL


def test_a_deleted_schedules_preapprovals_are_revoked(user, other_user, leads):
    schedule = schedule_of(user)
    [grant] = schedule_preapprove_for(schedule=schedule, approver=other_user, data=[UTC_NOW])
    schedule.delete()
    grant.refresh_from_db()
    assert grant.revoked_at is not None


def test_a_guard_holds_a_preapproved_call_carrying_a_token(worker, user, other_user):
    # http_request in requester mode, pre-approved by its owner with these exact arguments:
    # the secret guard still asks the person (a remembered approval never stands in for it).
    configure("http", private_allowed=["127.0.0.63"])
    requester_mode("http_request")
    arguments = {"url": "http://127.0.0.63:9/x", "method": "POST", "body": f"t={GITHUB}"}
    message = "/http_request " + json.dumps(arguments)
    schedule = schedule_of(user, message=message)
    schedule_preapprove_for(
        schedule=schedule,
        approver=user,
        data=[{"tool": "http_request", "arguments": arguments}],
    )
    call = fire(schedule)
    assert call.status == ToolCall.Status.AWAITING_APPROVAL
    assert call.policy_reason == "the arguments carry GitHub Token (arguments.body)"
    assert call.decided_by_id is None


def test_the_schedules_tab_shows_others_schedules_to_approvers_and_admins_only(
    user, other_user, staff_user, leads
):
    from tests.helpers import logged_in

    hers = schedule_of(user, name="alice-nightly", message="report <script>x</script>")
    his = schedule_of(other_user, name="bob-nightly")
    url = "/approvals/schedules/"
    # A member who approves nothing: no one's schedule, not even a hint.
    page = logged_in(user).get(url).content.decode()
    assert "bob-nightly" not in page and "No schedules to pre-approve." in page
    # bob approves current_time: alice's schedule, escaped; not his own (his own page has it).
    page = logged_in(other_user).get(url).content.decode()
    assert f'id="schedule-{hers.pk}"' in page and f'id="schedule-{his.pk}"' not in page
    assert "<script>x</script>" not in page and "&lt;script&gt;x&lt;/script&gt;" in page
    # An admin sees everyone's; a posted pre-approval by bob lands back on the tab.
    page = logged_in(staff_user).get(url).content.decode()
    assert f'id="schedule-{hers.pk}"' in page and f'id="schedule-{his.pk}"' in page
    answer = logged_in(other_user).post(
        f"/schedules/{hers.pk}/preapprove/",
        {"tool": "current_time", "arguments": '{"timezone": "UTC"}', "match": "{}"},
    )
    assert answer.status_code == 302 and answer["Location"].endswith(
        f"/approvals/schedules/#schedule-{hers.pk}"
    )
    # alice cannot use the approver's way for bob's schedule.
    assert (
        logged_in(user).post(f"/schedules/{his.pk}/preapprove/", {"tool": "x"}).status_code == 404
    )
