"""A deactivated person's open tab, and a tab whose session ended, can do nothing more (issue 33,
finding 1). The websocket kept the user it loaded at connect time: after an admin deactivated a
member, the tab already open still ran ``shell_exec`` (a slash command and a model call).

Now every frame re-reads the session and the account (``infra.access.principal_current``);
deactivating an account closes its open sockets at once and stops its running turns; binding
refuses every call of a deactivated account, by any way in."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Group

from chat_app.models import Turn
from chat_app.routing import websocket_urlpatterns as chat_routes
from platform_app.approvals.routing import websocket_urlpatterns as approvals_routes
from tests.helpers import signed_in, wait_for
from tools_app.models import ToolCall, ToolFunctionConfig
from tools_app.runtime import BindContext
from tools_app.services.binding import CallRequest, toolcall_bind

pytestmark = [pytest.mark.modes]


def chat_socket(conversation: Any, user: Any) -> WebsocketCommunicator:
    comm = WebsocketCommunicator(URLRouter(chat_routes), f"/ws/conversations/{conversation.pk}/")
    return signed_in(comm, user)


async def until_closed(comm: WebsocketCommunicator, timeout: float = 15) -> tuple[dict, dict]:
    """The error event that ends the socket, and the close that follows it."""
    async with asyncio.timeout(timeout):
        while True:
            out = await comm.receive_output(timeout=timeout)
            if out["type"] == "websocket.close":
                raise AssertionError(f"closed without saying why: {out}")
            import json

            event = json.loads(out["text"])
            if event.get("type") == "error" and event.get("code") == "session_ended":
                close = await comm.receive_output(timeout=timeout)
                return event, close


def deactivate(user: Any) -> None:
    user.is_active = False
    user.save()


async def test_it_closes_a_deactivated_persons_socket_at_once_and_stops_the_turn(
    worker: str, conversation: Any, user: Any
) -> None:
    # A call waiting for the person's own confirmation keeps the turn running.
    ToolFunctionConfig.objects.create(name="current_time", approval_mode="requester")
    comm = chat_socket(conversation, user)
    assert (await comm.connect())[0]
    await comm.receive_json_from(timeout=10)  # the snapshot
    await comm.send_json_to({"action": "send", "text": '/current_time {"timezone": "UTC"}'})
    call = await asyncio.to_thread(
        wait_for,
        lambda: ToolCall.objects.filter(
            conversation=conversation, status="awaiting_approval"
        ).first(),
        message="a call awaiting the person's confirmation",
    )

    await asyncio.to_thread(deactivate, user)

    event, close = await until_closed(comm)
    assert "deactivated" in event["message"]
    assert close == {"type": "websocket.close", "code": 4401, "reason": event["message"]}
    turn = await asyncio.to_thread(
        wait_for,
        lambda: Turn.objects.filter(pk=call.turn_id).exclude(status="running").first(),
        message="the turn stopped",
    )
    assert turn.status == "cancelled"
    call.refresh_from_db()
    assert call.status != "succeeded" and call.started_at is None


async def test_it_refuses_the_next_frame_of_a_deactivated_person(
    worker: str, conversation: Any, user: Any
) -> None:
    """Even if the close event never arrived (a socket on a process that missed it), the next
    frame — a message, a confirmation, a stop — is refused and the socket closed."""
    comm = chat_socket(conversation, user)
    assert (await comm.connect())[0]
    await comm.receive_json_from(timeout=10)
    # Deactivated behind the consumer's back: no signal, no close event.
    type(user).objects.filter(pk=user.pk).update(is_active=False)
    await comm.send_json_to({"action": "send", "text": "/shell_exec echo owned"})
    event, close = await until_closed(comm)
    assert "deactivated" in event["message"] and close["code"] == 4401
    assert not Turn.objects.filter(conversation=conversation).exists()
    assert not ToolCall.objects.filter(tool="shell_exec").exists()


@pytest.mark.parametrize("how", ["signed out", "password changed", "session expired"])
async def test_it_refuses_the_next_frame_of_an_ended_session(
    worker: str, conversation: Any, user: Any, how: str
) -> None:
    comm = chat_socket(conversation, user)
    assert (await comm.connect())[0]
    await comm.receive_json_from(timeout=10)
    session = comm.scope["session"]
    if how == "signed out":
        session.delete()
    elif how == "password changed":  # Django ends every other session of the person
        user.set_password("a-new-password-2")
        user.save()
    else:
        session.set_expiry(-1)
        session.save()
    await comm.send_json_to({"action": "send", "text": "/current_time {}"})
    event, close = await until_closed(comm)
    assert "sign in again" in event["message"] and close["code"] == 4401
    assert not Turn.objects.filter(conversation=conversation).exists()


async def test_it_closes_the_approvals_socket_of_a_deactivated_person(user: Any) -> None:
    comm = signed_in(WebsocketCommunicator(URLRouter(approvals_routes), "/ws/approvals/"), user)
    assert (await comm.connect())[0]
    await comm.receive_json_from(timeout=10)  # the count
    await asyncio.to_thread(deactivate, user)
    event, close = await until_closed(comm)
    assert close["code"] == 4401


def test_binding_refuses_every_call_of_a_deactivated_person(user: Any) -> None:
    """A model call of a turn already running, a schedule, a subagent, a token: all bind as
    the person, and a deactivated person has no grants."""
    Group.objects.get_or_create(name="Everyone")
    deactivate(user)
    for source in ("chat", "slash", "schedule", "mcp", "api"):
        call = toolcall_bind(
            request=CallRequest(tool="current_time", arguments={}),
            ctx=BindContext(user_id=user.pk, conversation_id=None, source=source),
        )
        assert call.status == "denied", source
        assert "deactivated" in call.error
