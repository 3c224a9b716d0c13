"""Approvals decided by approvers (issue 22): the person who asked never decides their own
call in approver mode — not through the chat's websocket, the Tools Manager's, the tokens
page nor the Approvals page — someone outside the approver groups cannot either, and every
refusal is audited. An approver decides from the Approvals page; a call nobody decides
expires; approvers are told live and by email."""

from __future__ import annotations

import asyncio
import socket
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from chat_app.models import Turn
from chat_app.routing import websocket_urlpatterns as chat_routes
from chat_app.services.turns import turn_start
from infra.maintenance import maintenance_steps
from platform_app.approvals.routing import websocket_urlpatterns as approvals_routes
from tests.conftest import wait_turn
from tests.helpers import logged_in, signed_in, tool_json, wait_for
from tests.llm_server import Call, Reply
from tools_app.events import render_toolcall_card
from tools_app.manager.routing import websocket_urlpatterns as tools_routes
from tools_app.models import AuditRecord, ToolCall, ToolFunctionConfig
from tools_app.runtime import BindContext
from tools_app.services.approval import ApprovalError, approvals_for, toolcall_decide
from tools_app.services.approval_notify import EVERYONE
from tools_app.services.binding import CallRequest, toolcall_bind


def approver_mode(*groups: Group, tool: str = "current_time") -> None:
    config = ToolFunctionConfig.objects.create(name=tool, approval_mode="approver")
    config.approver_groups.set(groups)


def awaiting(turn: Turn) -> ToolCall:
    return wait_for(
        lambda: ToolCall.objects.filter(turn=turn, status="awaiting_approval").first(),
        message="a call awaiting approval",
    )


async def _socket_approve(route: Any, path: str, user: Any, command: dict[str, Any]) -> list:
    """Send ``command`` on a websocket and return the error it gets, then check the socket
    still answers (a refusal does not end the connection)."""
    comm = WebsocketCommunicator(URLRouter(route), path)
    signed_in(comm, user)
    connected, _ = await comm.connect()
    assert connected
    await comm.send_json_to(command)
    answers = []
    async with asyncio.timeout(10):
        while True:
            event = await comm.receive_json_from(timeout=10)
            if event["type"] == "error":
                answers.append(event)
                break
    await comm.send_json_to({"action": "fly"})
    async with asyncio.timeout(10):
        while True:
            event = await comm.receive_json_from(timeout=10)
            if event["type"] == "error":
                answers.append(event)
                break
    await comm.disconnect()
    return answers


@pytest.fixture
def carol(transactional_db: None) -> Any:
    return get_user_model().objects.create_user("carol", password="carol-password-1")


@pytest.mark.modes
def test_the_requester_never_decides_and_an_approver_does(
    worker, conversation, user, other_user, carol, llm, provider
):
    # alice asks; she is staff and even in the approver group: still not hers to decide.
    leads = Group.objects.create(name="leads")
    leads.user_set.add(other_user, user)
    user.is_staff = True
    user.save()
    approver_mode(leads)
    llm.script(Reply(calls=[Call("current_time", {"timezone": "UTC"})]), Reply(text="Done."))
    turn = turn_start(conversation=conversation, user_id=user.pk, text="time?")
    call = awaiting(turn)
    assert (call.approval_mode, call.approver_group_ids) == ("approver", [leads.pk])
    # The card tells who must decide, and offers alice no buttons.
    card = render_toolcall_card(call)
    assert 'Waiting for approval by: <strong class="approvers">leads</strong>' in card
    assert 'data-action="approve"' not in card

    mine = "you asked for this call: it must be approved by leads, not by you"
    approve = {"action": "approve", "call_id": call.pk}
    chat = async_to_sync(_socket_approve)(
        chat_routes, f"/ws/conversations/{conversation.pk}/", user, approve
    )
    assert chat[0]["message"] == mine and chat[0]["call_id"] == call.pk
    assert chat[1]["message"] == "unknown action 'fly'"  # the socket is still up
    tools = async_to_sync(_socket_approve)(tools_routes, f"/ws/toolcalls/{call.pk}/", user, approve)
    assert tools[0]["message"] == mine
    alice = logged_in(user)
    page = alice.post(f"/approvals/{call.pk}/decide/", {"decision": "approve", "note": "me"})
    assert page.status_code == 400 and mine in page.content.decode()
    tokens = alice.post(f"/tokens/calls/{call.pk}/decide/", {"decision": "approve"}, follow=True)
    assert mine in tokens.content.decode()
    with pytest.raises(ApprovalError, match="you asked for this call"):
        toolcall_decide(user=user, call_id=call.pk, approve=False)
    assert approvals_for(user) == []  # nor is it in her queue
    # carol is in no approver group.
    page = logged_in(carol).post(f"/approvals/{call.pk}/decide/", {"decision": "deny"})
    assert page.status_code == 400
    assert "only an approver (leads) may decide this call" in page.content.decode()

    assert ToolCall.objects.get(pk=call.pk).status == "awaiting_approval"
    refused = AuditRecord.objects.filter(kind="approval", tool_call=call, status="refused")
    assert [r.username for r in refused.order_by("pk")] == ["alice"] * 5 + ["carol"]
    assert refused.order_by("pk").first().detail["reason"] == mine

    # bob, an approver, sees it (tool, requester, conversation) and approves it, edited.
    bob = logged_in(other_user)
    listing = bob.get("/approvals/").content.decode()
    assert "current_time" in listing and ">alice<" in listing and "Test conversation" in listing
    assert 'id="approvals-badge" aria-label="1 waiting"' in listing
    bad = bob.post(
        f"/approvals/{call.pk}/decide/", {"decision": "approve", "arguments": '{"timezone":'}
    )
    assert bad.status_code == 400 and "not valid JSON" in bad.content.decode()
    assert "{&quot;timezone&quot;:</textarea>" in bad.content.decode()  # what he typed is kept
    done = bob.post(
        f"/approvals/{call.pk}/decide/",
        {"decision": "approve", "arguments": '{"timezone": "Asia/Tokyo"}', "note": "Tokyo only"},
    )
    assert done.status_code == 302
    assert wait_turn(turn.pk).status == Turn.Status.SUCCEEDED
    call.refresh_from_db()
    assert call.status == "succeeded" and call.result["timezone"] == "Asia/Tokyo"
    assert (call.decided_by, call.decision_note) == (other_user, "Tokyo only")
    decision = AuditRecord.objects.get(kind="approval", tool_call=call, username="bob")
    assert decision.status == "approved with edited arguments"
    assert decision.detail["note"] == "Tokyo only"
    assert "Tokyo only" in render_toolcall_card(call)


@pytest.mark.modes
def test_an_approval_nobody_gives_expires_and_the_turn_goes_on(
    worker, conversation, user, llm, provider
):
    approver_mode(Group.objects.create(name="leads"))
    llm.script(Reply(calls=[Call("current_time", {})]), Reply(text="It was not approved."))
    turn = turn_start(conversation=conversation, user_id=user.pk, text="time?")
    call = awaiting(turn)
    step = next(s for s in maintenance_steps() if s.name == "expired approvals")
    step.run()  # not old enough yet: nothing happens
    assert ToolCall.objects.get(pk=call.pk).status == "awaiting_approval"
    ToolCall.objects.filter(pk=call.pk).update(created_at=call.created_at - timedelta(minutes=31))
    step.run()
    assert wait_turn(turn.pk).status == Turn.Status.SUCCEEDED
    call.refresh_from_db()
    assert call.status == "denied" and call.error == "approval expired after 30 min"
    tool_msg = next(m for m in llm.requests[1]["messages"] if m["role"] == "tool")
    assert tool_json(tool_msg["content"])["error"] == "approval expired after 30 min"
    assert AuditRecord.objects.filter(kind="approval", tool_call=call, status="expired").exists()


def test_the_requester_confirms_their_own_call_in_requester_mode(user, other_user, staff_user):
    ToolFunctionConfig.objects.create(name="current_time", approval_mode="requester")
    call = bind(user)
    assert call.approval_mode == "requester"
    for stranger in (other_user, staff_user):  # nobody else, staff included
        with pytest.raises(ApprovalError, match="no such tool call"):
            toolcall_decide(user=stranger, call_id=call.pk, approve=True)
    assert approvals_for(staff_user) == []  # a confirm step is not in anyone's queue
    toolcall_decide(user=user, call_id=call.pk, approve=False)
    assert ToolCall.objects.get(pk=call.pk).status == "denied"


def test_everyone_as_approvers_and_admins_when_no_group_is_named(user, other_user, staff_user):
    approver_mode(Group.objects.get_or_create(name=EVERYONE)[0])
    call = bind(user)
    assert [c.pk for c in approvals_for(other_user)] == [call.pk]  # every user is in Everyone
    assert approvals_for(user) == []
    ToolFunctionConfig.objects.filter(name="current_time").first().approver_groups.clear()
    lone = bind(user)
    assert lone.approver_group_ids == []
    assert [c.pk for c in approvals_for(staff_user)] == [call.pk, lone.pk]
    with pytest.raises(ApprovalError, match="only an administrator"):
        toolcall_decide(user=other_user, call_id=lone.pk, approve=True)
    toolcall_decide(user=staff_user, call_id=lone.pk, approve=False, note="not today")
    assert ToolCall.objects.get(pk=lone.pk).error == "denied by root (approval required): not today"


def bind(user: Any) -> ToolCall:
    return toolcall_bind(
        request=CallRequest(tool="current_time", arguments={}),
        ctx=BindContext(user_id=user.pk, conversation_id=None, source="test"),
    )


@pytest.mark.modes
async def test_approvers_are_told_live_and_the_badge_counts(user, other_user):
    from channels.db import database_sync_to_async

    @database_sync_to_async
    def setup() -> None:
        leads = Group.objects.create(name="leads")
        leads.user_set.add(other_user)
        approver_mode(leads)

    await setup()
    comm = WebsocketCommunicator(URLRouter(approvals_routes), "/ws/approvals/")
    signed_in(comm, other_user)
    assert (await comm.connect())[0]
    assert await comm.receive_json_from(timeout=10) == {
        "type": "approvals",
        "count": 0,
        "changed": None,
    }
    call = await database_sync_to_async(bind)(user)
    event = await comm.receive_json_from(timeout=10)
    assert (event["count"], event["changed"]) == (1, call.pk)
    await database_sync_to_async(toolcall_decide)(user=other_user, call_id=call.pk, approve=False)
    event = await comm.receive_json_from(timeout=10)
    assert (event["count"], event["changed"]) == (0, call.pk)
    await comm.disconnect()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_approvers_get_an_email_from_a_real_smtp_server(user, other_user, carol, settings):
    from aiosmtpd.controller import Controller
    from aiosmtpd.handlers import Message

    received: list[Any] = []

    class Keep(Message):
        def handle_message(self, message: Any) -> None:
            received.append(message)

    port = _free_port()
    controller = Controller(Keep(), hostname="127.0.0.1", port=port)
    controller.start()
    try:
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", port
        settings.APP_URL = "https://cc.example.org"
        for person, address in ((user, "alice@example.org"), (other_user, "bob@example.org")):
            person.email = address
            person.save()
        carol.email = "carol@example.org"  # not an approver: no email
        carol.save()
        leads = Group.objects.create(name="leads")
        leads.user_set.add(other_user, user)  # alice asks: she is not told
        approver_mode(leads)
        bind(user)
        message = wait_for(lambda: received[0] if received else None, message="an email")
    finally:
        controller.stop()
    assert len(received) == 1
    assert message["To"] == "bob@example.org"
    assert message["Subject"] == "Approval needed: current_time for alice"
    body = message.get_payload()
    assert "https://cc.example.org/approvals/" in body and "(leads)" in body


def test_the_tokens_page_offers_no_buttons_for_an_approvers_call(user):
    approver_mode(Group.objects.create(name="leads"))
    call = toolcall_bind(
        request=CallRequest(tool="current_time", arguments={}),
        ctx=BindContext(user_id=user.pk, conversation_id=None, source="mcp"),
    )
    assert call.status == "awaiting_approval"
    page = logged_in(user).get("/tokens/").content.decode()
    assert "Waiting for approval by: <strong" in page
    assert f'aria-label="Approve call {call.pk}"' not in page
