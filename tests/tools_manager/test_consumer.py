"""The Test-run websocket: staff only, snapshot after joining, live events, approve and stop."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser

from tests.helpers import signed_in
from tools_app.manager.routing import websocket_urlpatterns
from tools_app.models import AuditRecord, ToolCall, ToolFunctionConfig
from tools_app.registry import override_activity
from tools_app.runtime import BindContext
from tools_app.services.binding import CallRequest, toolcall_bind, toolcall_dispatch

pytestmark = [pytest.mark.modes]


def communicator(call_id: int, user: Any) -> WebsocketCommunicator:
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/toolcalls/{call_id}/")
    signed_in(comm, user)
    return comm


@database_sync_to_async
def bind(user: Any, *, dispatch: bool = False, approval: bool = False) -> ToolCall:
    if approval:
        ToolFunctionConfig.objects.update_or_create(
            name="current_time", defaults={"approval_mode": "requester"}
        )
    call = toolcall_bind(
        request=CallRequest(tool="current_time", arguments={"timezone": "UTC"}),
        ctx=BindContext(user_id=user.pk, conversation_id=None, source="test"),
    )
    if dispatch:
        toolcall_dispatch(call)
    return call


async def until_status(comm: WebsocketCommunicator, status: str) -> list[dict]:
    events = []
    while True:
        event = await comm.receive_json_from(timeout=15)
        events.append(event)
        if event["type"] == "toolcall" and event["status"] == status:
            return events


async def test_it_refuses_anonymous_and_non_staff_users_and_unknown_calls(staff_user, user):
    call = await bind(staff_user)
    for call_id, who, code in (
        (call.pk, AnonymousUser(), 4401),
        (call.pk, user, 4403),
        (call.pk + 1000, staff_user, 4404),
    ):
        comm = communicator(call_id, who)
        connected, closed_with = await comm.connect()
        assert not connected and closed_with == code
        # The browser goes away, as after any refusal: the consumer ends here, not in the
        # test's teardown (where a consumer still listening on the Redis channel layer was
        # once left waiting for the whole test timeout).
        await comm.disconnect()


async def test_it_sends_the_card_then_streams_it_to_succeeded(worker, staff_user):
    call = await bind(staff_user)
    comm = communicator(call.pk, staff_user)
    assert (await comm.connect())[0]
    snapshot = await comm.receive_json_from()
    assert snapshot["type"] == "toolcall" and snapshot["status"] == "queued"
    await database_sync_to_async(toolcall_dispatch)(call)
    events = await until_status(comm, "succeeded")
    statuses = [e["status"] for e in events if e["type"] == "toolcall"]
    # A call shows "running" only once it has run a moment (tools_app.services.watchdog); if
    # it did, that came first.
    assert statuses.count("succeeded") == 1
    assert "running" not in statuses[statuses.index("succeeded") :]
    versions = [e["version"] for e in events if e["type"] == "toolcall"]
    assert versions == sorted(versions) and versions[0] > snapshot["version"]
    await comm.disconnect()


async def test_approve_over_the_socket_runs_the_call(worker, staff_user):
    call = await bind(staff_user, approval=True)
    comm = communicator(call.pk, staff_user)
    await comm.connect()
    snapshot = await comm.receive_json_from()
    assert snapshot["status"] == "awaiting_approval" and 'data-action="approve"' in snapshot["html"]
    await comm.send_json_to({"action": "approve", "call_id": call.pk})
    await until_status(comm, "succeeded")
    await comm.disconnect()
    decisions = await database_sync_to_async(
        lambda: list(AuditRecord.objects.filter(kind="approval").values_list("status", "username"))
    )()
    assert decisions == [("approved", "root")]


async def test_deny_over_the_socket_and_commands_for_other_calls_are_refused(staff_user):
    call = await bind(staff_user, approval=True)
    comm = communicator(call.pk, staff_user)
    await comm.connect()
    await comm.receive_json_from()
    await comm.send_json_to({"action": "approve", "call_id": call.pk + 1})
    error = await comm.receive_json_from()
    assert error == {"type": "error", "message": "malformed approval command"}
    await comm.send_json_to({"action": "deny", "call_id": call.pk})
    events = await until_status(comm, "denied")
    assert "denied by root" in events[-1]["html"]
    await comm.send_json_to({"action": "deny", "call_id": call.pk})
    late = await comm.receive_json_from()
    assert late["type"] == "error" and "no longer awaiting approval" in late["message"]
    await comm.disconnect()


@pytest.mark.embedded_only  # the activity double lives in-process
async def test_stop_cancels_a_running_test_and_output_streams_with_offsets(worker, staff_user):
    started = threading.Event()

    def slow(args: Any, ctx: Any) -> dict[str, Any]:
        ctx.emit_output("tick 1\n")
        started.set()
        ctx.cancel.wait(10)
        ctx.check_cancelled()
        return {}

    with override_activity("current_time", slow):
        call = await bind(staff_user)
        comm = communicator(call.pk, staff_user)
        await comm.connect()
        await comm.receive_json_from()
        await database_sync_to_async(toolcall_dispatch)(call)
        output = None
        while output is None:
            event = await comm.receive_json_from(timeout=10)
            if event["type"] == "output":
                output = event
        assert (output["offset"], output["text"]) == (0, "tick 1\n")
        await comm.send_json_to({"action": "stop"})
        await until_status(comm, "cancelled")
        await comm.disconnect()
    assert started.is_set()
