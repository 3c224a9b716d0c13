"""Remembered (standing) approvals (issue 36): an approver widens an approval to the
conversation or to the person until a time; a later matching call runs without waiting, as
approved by that grant (audited); a non-matching one still waits; the Standing page lists
grants and revokes them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.test import Client
from django.utils import timezone

from chat_app.models import Conversation
from chat_app.routing import websocket_urlpatterns as chat_routes
from platform_app.api_tokens import api_token_create
from tests.approvals.conftest import approver_mode, bound, requester_mode, waiting_call
from tests.helpers import signed_in, wait_for
from tools_app.models import AuditRecord, StandingApproval, ToolCall, ToolFunctionConfig
from tools_app.services.approval import ApprovalError
from tools_app.services.standing import toolcall_decide_widened

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_remembers_for_the_conversation_from_the_card(worker, user, conversation):
    requester_mode("current_time")
    call = waiting_call("current_time", {"timezone": "UTC"}, user=user, conversation=conversation)

    async def approve() -> None:
        comm = WebsocketCommunicator(
            URLRouter(chat_routes), f"/ws/conversations/{conversation.pk}/"
        )
        signed_in(comm, user)
        connected, _ = await comm.connect()
        assert connected
        await comm.receive_json_from(timeout=10)  # the snapshot
        await comm.send_json_to(
            {
                "action": "approve",
                "call_id": call.pk,
                "widening": {"scope": "conversation", "match": {}, "until": None},
            }
        )
        await comm.disconnect()

    async_to_sync(approve)()
    grant = wait_for(lambda: StandingApproval.objects.first(), message="the grant")
    assert (grant.scope, grant.user_id, grant.conversation_id) == (
        "conversation",
        user.pk,
        conversation.pk,
    )
    wait_for(lambda: ToolCall.objects.filter(pk=call.pk, status="succeeded").first())

    again = bound("current_time", {"timezone": "UTC"}, user=user, conversation=conversation)
    assert again.status == ToolCall.Status.QUEUED
    assert again.decision_note == f"approved by standing approval #{grant.pk} of alice"
    record = AuditRecord.objects.get(tool_call=again, kind="approval")
    assert record.status == f"approved by standing approval #{grant.pk} of alice"
    other = bound("current_time", {"timezone": "Europe/Oslo"}, user=user, conversation=conversation)
    assert other.status == ToolCall.Status.AWAITING_APPROVAL  # not matching: waits
    elsewhere = Conversation.objects.create(owner=user, title="another")
    there = bound("current_time", {"timezone": "UTC"}, user=user, conversation=elsewhere)
    assert there.status == ToolCall.Status.AWAITING_APPROVAL
    grant.refresh_from_db()
    assert grant.uses == 1


def test_the_rest_endpoint_remembers_for_the_person_until(user, other_user, conversation, leads):
    approver_mode("current_time", leads)
    call = waiting_call("current_time", {"timezone": "UTC"}, user=user, conversation=conversation)
    token = api_token_create(user=other_user, name="t")[1]
    until = (timezone.now() + timedelta(hours=8)).isoformat()
    response = Client().post(
        f"/api/tool-calls/{call.pk}/approve",
        {"widening": {"scope": "person", "until": until}},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 200, response.content
    grant = StandingApproval.objects.get()
    assert (grant.scope, grant.granted_by_id, grant.conversation_id) == (
        "person",
        other_user.pk,
        None,
    )
    elsewhere = Conversation.objects.create(owner=user, title="another")
    runs = bound("current_time", {"timezone": "UTC"}, user=user, conversation=elsewhere)
    assert runs.status == ToolCall.Status.QUEUED and runs.decided_by_id == other_user.pk
    # Past its end it is no use.
    StandingApproval.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    waits = bound("current_time", {"timezone": "UTC"}, user=user, conversation=elsewhere)
    assert waits.status == ToolCall.Status.AWAITING_APPROVAL
    # A bad widening is a clear 422 and approves nothing.
    response = Client().post(
        f"/api/tool-calls/{waits.pk}/approve",
        {"widening": {"scope": "person"}},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 422 and "until when" in response.content.decode()
    assert ToolCall.objects.get(pk=waits.pk).status == ToolCall.Status.AWAITING_APPROVAL


def test_the_standing_page_lists_and_revokes(user, other_user, staff_user, conversation, leads):
    approver_mode("current_time", leads)
    call = waiting_call("current_time", {"timezone": "UTC"}, user=user, conversation=conversation)
    toolcall_decide_widened(
        user=other_user, call_id=call.pk, approve=True, widening={"scope": "conversation"}
    )
    grant = StandingApproval.objects.get()
    bob, alice, root = Client(), Client(), Client()
    bob.force_login(other_user)
    alice.force_login(user)
    root.force_login(staff_user)
    assert f'id="standing-{grant.pk}"' in bob.get("/approvals/standing/").content.decode()
    mine = alice.get("/approvals/standing/").content.decode()
    assert f'id="standing-{grant.pk}"' in mine and "Revoke" not in mine  # read-only
    # The person it is for cannot revoke it.
    assert alice.post(f"/approvals/standing/{grant.pk}/revoke/").status_code == 403
    assert "Revoke" in root.get("/approvals/standing/").content.decode()
    assert bob.post(f"/approvals/standing/{grant.pk}/revoke/").status_code == 302
    grant.refresh_from_db()
    assert grant.revoked_at is not None and grant.revoked_by_id == other_user.pk
    assert AuditRecord.objects.filter(status=f"standing approval #{grant.pk} revoked").exists()
    waits = bound("current_time", {"timezone": "UTC"}, user=user, conversation=conversation)
    assert waits.status == ToolCall.Status.AWAITING_APPROVAL


def test_it_refuses_widening_for_two_person_functions(user, other_user, conversation, leads):
    approver_mode("current_time", leads, needed=2)
    call = waiting_call("current_time", {"timezone": "UTC"}, user=user, conversation=conversation)
    with pytest.raises(ApprovalError, match="more than one approval"):
        toolcall_decide_widened(
            user=other_user, call_id=call.pk, approve=True, widening={"scope": "conversation"}
        )
    assert not StandingApproval.objects.exists()
    assert ToolCall.objects.get(pk=call.pk).approvals.count() == 0  # nothing approved


def test_the_tools_manager_forbids_widening(user, staff_user, conversation):
    requester_mode("current_time")
    admin = Client()
    admin.force_login(staff_user)
    response = admin.post(
        "/tools/functions/current_time/approval/",
        {
            "approvers_posted": "1",
            "approval_mode": "requester",
            "approvals_needed": "1",
            "standing_forbidden": "1",
        },
    )
    assert response.status_code == 302
    assert ToolFunctionConfig.objects.get(name="current_time").standing_forbidden
    call = waiting_call("current_time", {"timezone": "UTC"}, user=user, conversation=conversation)
    page = Client()
    page.force_login(user)
    with pytest.raises(ApprovalError, match="one call only"):
        toolcall_decide_widened(
            user=user, call_id=call.pk, approve=True, widening={"scope": "conversation"}
        )
