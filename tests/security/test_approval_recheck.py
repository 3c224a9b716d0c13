"""An approval is checked again when it is decided (issue 33): a call may wait for the approval
timeout, and meanwhile its requester may lose the grant or be deactivated, its approver may
be deactivated, or the deadline may pass before the sweep runs. At decision time — by the
Approvals page, the REST API or a websocket frame — a call whose grant is gone, whose
requester is gone or whose deadline passed is denied with that reason (the model reads it,
the audit log keeps it) and nothing runs; an approver who may no longer decide is refused."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client

from chat_app.models import Turn
from chat_app.routing import websocket_urlpatterns as chat_routes
from chat_app.services.turns import turn_start
from platform_app.api_tokens import api_token_create
from tests.conftest import wait_turn
from tests.helpers import tool_json
from tests.llm_server import Call, Reply
from tests.security.test_approvals import _socket_approve, awaiting, logged_in
from tools_app.models import AuditRecord, ToolCall, ToolFunctionConfig, ToolGrant
from tools_app.runtime import BindContext
from tools_app.services.approval import ApprovalError, approvals_expire, toolcall_decide
from tools_app.services.binding import CallRequest, toolcall_bind
from tools_app.services.grants import everyone_group

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.grants]

WRITE = {"path": "notes.txt", "content": "hello"}
GONE = "file_write is not granted to you — ask an admin"
INACTIVE = "the person who asked for this call is no longer active"
EXPIRED = "approval expired after 30 min"


@pytest.fixture
def writers(user: Any, other_user: Any) -> Group:
    """alice is in "writers", the only group granted file_write; its calls wait for an
    approver of "leads" (bob)."""
    ToolGrant.objects.all().delete()
    everyone_group()
    writers = Group.objects.create(name="writers")
    ToolGrant.objects.create(group=writers, kind="function", name="file_write")
    user.groups.add(writers)
    leads = Group.objects.create(name="leads")
    leads.user_set.add(other_user)
    config = ToolFunctionConfig.objects.create(name="file_write", approval_mode="approver")
    config.approver_groups.set([leads])
    return writers


def waiting_call(user: Any, conversation: Any) -> ToolCall:
    call = toolcall_bind(
        request=CallRequest(tool="file_write", arguments=WRITE),
        ctx=BindContext(user_id=user.pk, conversation_id=conversation.pk, source="chat"),
    )
    assert call.status == "awaiting_approval", call.error
    return call


def assert_denied(call_id: int, error: str, *, decision: str) -> ToolCall:
    call = ToolCall.objects.get(pk=call_id)
    assert call.status == "denied", (call.status, call.error)
    assert call.error == error and call.result == {"success": False, "error": error}
    assert call.started_at is None  # nothing ran
    record = AuditRecord.objects.get(kind="call", tool_call=call)
    assert (record.status, record.error) == ("denied", error)
    verdict = AuditRecord.objects.get(kind="approval", tool_call=call, status=decision)
    assert verdict.detail["reason"] == error
    return call


def rest_decide(user: Any, call: ToolCall, decision: str) -> Any:
    token = api_token_create(user=user, name="approver", scopes=["approve"])[1]
    return Client().post(
        f"/api/tool-calls/{call.pk}/{decision}",
        data={},
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )


# --- the requester's grant and state -------------------------------------------------------


@pytest.mark.modes
def test_it_denies_an_approval_once_the_requester_left_the_only_granting_group(
    worker, writers, conversation, user, other_user, llm, provider
):
    llm.script(Reply(calls=[Call("file_write", WRITE)]), Reply(text="It was not written."))
    turn = turn_start(conversation=conversation, user_id=user.pk, text="write it")
    call = awaiting(turn)
    user.groups.remove(writers)

    page = logged_in(other_user).post(f"/approvals/{call.pk}/decide/", {"decision": "approve"})

    assert page.status_code == 400 and GONE in page.content.decode()
    assert wait_turn(turn.pk).status == Turn.Status.SUCCEEDED
    denied = assert_denied(call.pk, GONE, decision="not_granted")
    assert (denied.policy_verdict, denied.policy_reason) == ("not_granted", GONE)
    assert denied.decided_by == other_user
    tool_msg = next(m for m in llm.requests[1]["messages"] if m["role"] == "tool")
    assert tool_json(tool_msg["content"])["error"] == GONE


def test_it_denies_an_approval_through_the_api_once_the_requester_was_deactivated(
    writers, conversation, user, other_user
):
    call = waiting_call(user, conversation)
    user.is_active = False
    user.save()

    response = rest_decide(other_user, call, "approve")

    assert response.status_code == 409 and INACTIVE in response.json()["error"]["message"]
    assert_denied(call.pk, INACTIVE, decision="not_granted")


def test_it_denies_a_requesters_own_confirmation_once_her_grant_is_gone(
    writers, conversation, user
):
    ToolFunctionConfig.objects.filter(name="file_write").update(approval_mode="requester")
    call = waiting_call(user, conversation)
    user.groups.remove(writers)

    answers = async_to_sync(_socket_approve)(
        chat_routes,
        f"/ws/conversations/{conversation.pk}/",
        user,
        {"action": "approve", "call_id": call.pk},
    )

    assert GONE in answers[0]["message"] and answers[0]["call_id"] == call.pk
    assert_denied(call.pk, GONE, decision="not_granted")


def test_a_denial_needs_no_grant(writers, conversation, user, other_user):
    call = waiting_call(user, conversation)
    user.groups.remove(writers)
    toolcall_decide(user=other_user, call_id=call.pk, approve=False, note="no")
    assert ToolCall.objects.get(pk=call.pk).error == "denied by bob (approval required): no"


# --- the approver's ------------------------------------------------------------------------


def test_it_judges_the_decider_as_stored_now_not_as_the_caller_kept_them(
    writers, conversation, user, staff_user
):
    """A websocket keeps the user it connected as: an admin who lost staff, then the account,
    since then decides nothing."""
    ToolFunctionConfig.objects.get(name="file_write").approver_groups.clear()  # admins decide
    call = waiting_call(user, conversation)
    kept = get_user_model().objects.get(pk=staff_user.pk)  # the socket's copy
    get_user_model().objects.filter(pk=staff_user.pk).update(is_staff=False, is_superuser=False)
    with pytest.raises(ApprovalError, match="only an administrator may decide this call"):
        toolcall_decide(user=kept, call_id=call.pk, approve=True)
    get_user_model().objects.filter(pk=staff_user.pk).update(is_active=False)
    with pytest.raises(ApprovalError, match="sign in to decide approvals"):
        toolcall_decide(user=kept, call_id=call.pk, approve=True)
    assert kept.is_active and kept.is_staff  # unchanged in memory
    assert ToolCall.objects.get(pk=call.pk).status == "awaiting_approval"
    refused = AuditRecord.objects.filter(kind="approval", tool_call=call, status="refused")
    assert refused.count() == 2


def test_it_refuses_an_approver_who_left_the_approver_groups(
    writers, conversation, user, other_user
):
    call = waiting_call(user, conversation)
    Group.objects.get(name="leads").user_set.remove(other_user)
    with pytest.raises(ApprovalError, match=r"only an approver \(leads\) may decide this call"):
        toolcall_decide(user=other_user, call_id=call.pk, approve=True)
    assert ToolCall.objects.get(pk=call.pk).status == "awaiting_approval"


# --- the deadline --------------------------------------------------------------------------


def test_it_denies_an_approval_given_after_the_deadline_as_expired(
    writers, conversation, user, other_user
):
    call = waiting_call(user, conversation)
    late = call.created_at - timedelta(minutes=30, seconds=5)
    ToolCall.objects.filter(pk=call.pk).update(created_at=late)  # the sweep has not run

    page = logged_in(other_user).post(f"/approvals/{call.pk}/decide/", {"decision": "approve"})

    assert page.status_code == 400 and EXPIRED in page.content.decode()
    expired = assert_denied(call.pk, EXPIRED, decision="expired")
    assert expired.decided_by is None  # as the sweep leaves it


def test_it_denies_a_decision_through_the_api_after_the_deadline_as_expired(
    writers, conversation, user, other_user
):
    call = waiting_call(user, conversation)
    late = call.created_at - timedelta(minutes=31)
    ToolCall.objects.filter(pk=call.pk).update(created_at=late)

    response = rest_decide(other_user, call, "deny")

    assert response.status_code == 409 and EXPIRED in response.json()["error"]["message"]
    assert_denied(call.pk, EXPIRED, decision="expired")


def test_a_decision_after_the_sweep_expired_the_call_says_it_expired(
    writers, conversation, user, other_user
):
    call = waiting_call(user, conversation)
    late = call.created_at - timedelta(minutes=31)
    ToolCall.objects.filter(pk=call.pk).update(created_at=late)
    assert approvals_expire() == 1  # the sweep got there first

    response = rest_decide(other_user, call, "approve")
    page = logged_in(other_user).post(f"/approvals/{call.pk}/decide/", {"decision": "approve"})

    assert response.status_code == 409 and EXPIRED in response.json()["error"]["message"]
    assert page.status_code == 400 and EXPIRED in page.content.decode()
    assert_denied(call.pk, EXPIRED, decision="expired")
