"""Two-person approvals (issue 36): a function set to need N approvals runs after N distinct
approvers — never the requester — approve it; each approval is recorded and audited, shown on
the requester's card and the Approvals queue; one denial ends it; two approvers approving at
the same moment count once each and dispatch the call once."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection
from django.test import Client

from chat_app.routing import websocket_urlpatterns as chat_routes
from platform_app.api_tokens import api_token_create
from tests.approvals.conftest import approver_mode, waiting_call
from tests.helpers import logged_in, signed_in, wait_for
from tools_app.events import render_toolcall_card
from tools_app.models import AuditRecord, ToolCall, ToolCallApproval, ToolFunctionConfig
from tools_app.services import approval
from tools_app.services.approval import ApprovalError, approvals_for, toolcall_decide
from tools_app.services.settings import SettingsError, function_approval_set

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def leads(other_user: Any) -> Group:
    """bob and carol approve; alice (``user``) asks."""
    group = Group.objects.create(name="leads")
    carol = get_user_model().objects.create_user("carol", password="carol-password-1")
    group.user_set.add(other_user, carol)
    return group


def carol() -> Any:
    return get_user_model().objects.get(username="carol")


def test_it_runs_after_two_distinct_approvers(worker, user, other_user, conversation, leads):
    approver_mode("current_time", leads, needed=2)
    call = waiting_call("current_time", {"timezone": "UTC"}, user=user, conversation=conversation)
    assert call.approvals_needed == 2
    card = render_toolcall_card(call)
    assert "0 of 2 approvals" in card

    first = toolcall_decide(user=other_user, call_id=call.pk, approve=True, note="ok by me")
    assert first.status == ToolCall.Status.AWAITING_APPROVAL
    assert [(a.username, a.note) for a in first.approvals.all()] == [("bob", "ok by me")]
    card = render_toolcall_card(first)
    assert "1 of 2 approvals" in card and '<span class="approved-by">bob</span>' in card
    # bob cannot count twice, and the call left his queue; carol sees who approved.
    with pytest.raises(ApprovalError, match="you have already approved this call"):
        toolcall_decide(user=other_user, call_id=call.pk, approve=True)
    assert approvals_for(other_user) == []
    page = logged_in(carol()).get("/approvals/").content.decode()
    assert "1 of 2 approvals" in page and '<span class="approved-by">bob</span>' in page
    # alice, the requester, is no approver of her own call.
    with pytest.raises(ApprovalError, match="you asked for this call"):
        toolcall_decide(user=user, call_id=call.pk, approve=True)

    # carol approves on the Approvals page: the call runs.
    response = logged_in(carol()).post(
        f"/approvals/{call.pk}/decide/", {"decision": "approve", "arguments": "", "note": ""}
    )
    assert response.status_code == 302
    done = wait_for(
        lambda: ToolCall.objects.filter(pk=call.pk, status="succeeded").first(),
        message="the call to run",
    )
    assert done.decided_by.username == "carol"
    records = AuditRecord.objects.filter(kind="approval", tool_call=call).order_by("pk")
    statuses = [(r.username, r.status) for r in records if r.status.startswith("approved")]
    assert statuses == [("bob", "approved (1 of 2)"), ("carol", "approved (2 of 2)")]
    assert records.last().detail["approvals"] == {"count": 2, "needed": 2, "by": ["bob", "carol"]}


def test_one_denial_ends_it(user, other_user, conversation, leads):
    approver_mode("current_time", leads, needed=2)
    call = waiting_call("current_time", {"timezone": "UTC"}, user=user, conversation=conversation)
    toolcall_decide(user=other_user, call_id=call.pk, approve=True)
    denied = toolcall_decide(user=carol(), call_id=call.pk, approve=False, note="no")
    assert denied.status == ToolCall.Status.DENIED
    assert ToolCall.objects.get(pk=call.pk).error == "denied by carol (approval required): no"


def test_edited_arguments_start_the_count_again(user, other_user, conversation, leads):
    approver_mode("current_time", leads, needed=2)
    call = waiting_call("current_time", {"timezone": "UTC"}, user=user, conversation=conversation)
    toolcall_decide(user=other_user, call_id=call.pk, approve=True)
    edited = toolcall_decide(
        user=carol(), call_id=call.pk, approve=True, arguments={"timezone": "Europe/Oslo"}
    )
    # carol approved other arguments than bob did: hers is the first approval of them.
    assert edited.status == ToolCall.Status.AWAITING_APPROVAL
    assert edited.arguments == {"timezone": "Europe/Oslo"}
    assert [a.username for a in edited.approvals.all()] == ["carol"]
    assert approvals_for(other_user) == [edited]  # bob may approve the new arguments


def test_the_rest_endpoint_counts_approvals_and_refuses_the_requester(
    user, other_user, conversation, leads
):
    approver_mode("current_time", leads, needed=2)
    call = waiting_call("current_time", {"timezone": "UTC"}, user=user, conversation=conversation)

    def post(person: Any) -> Any:
        token = api_token_create(user=person, name="approver")[1]
        return Client().post(
            f"/api/tool-calls/{call.pk}/approve",
            data=json.dumps({"note": ""}),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token}",
        )

    own = post(user)
    assert own.status_code == 403 and "you asked for this call" in own.json()["error"]["message"]
    first = post(other_user)
    assert first.status_code == 200
    body = first.json()
    assert (body["status"], body["approvals_needed"], body["approved_by"]) == (
        "awaiting_approval",
        2,
        ["bob"],
    )
    again = post(other_user)
    assert again.status_code == 409 and again.json()["error"]["code"] == "already_approved"
    assert "you have already approved this call" in again.json()["error"]["message"]
    last = post(carol())
    assert last.status_code == 200 and last.json()["status"] in ("queued", "running", "succeeded")
    assert last.json()["approved_by"] == ["bob", "carol"]


def test_the_requesters_card_follows_each_approval_live(user, other_user, conversation, leads):
    approver_mode("current_time", leads, needed=2)
    call = waiting_call("current_time", {"timezone": "UTC"}, user=user, conversation=conversation)

    async def watch() -> dict[str, Any]:
        comm = WebsocketCommunicator(
            URLRouter(chat_routes), f"/ws/conversations/{conversation.pk}/"
        )
        signed_in(comm, user)
        connected, _ = await comm.connect()
        assert connected
        await comm.receive_json_from(timeout=10)  # the snapshot
        await comm.send_json_to({"action": "approve", "call_id": call.pk})
        refused = await comm.receive_json_from(timeout=10)
        await asyncio.get_running_loop().run_in_executor(
            None, lambda: toolcall_decide(user=other_user, call_id=call.pk, approve=True)
        )
        async with asyncio.timeout(10):
            while True:
                event = await comm.receive_json_from(timeout=10)
                if event["type"] == "toolcall" and event["id"] == call.pk:
                    break
        await comm.disconnect()
        return {"refused": refused, "card": event}

    seen = async_to_sync(watch)()
    assert seen["refused"]["type"] == "error"
    assert "you asked for this call" in seen["refused"]["message"]
    assert seen["card"]["status"] == "awaiting_approval"
    assert "1 of 2 approvals" in seen["card"]["html"] and ">bob</span>" in seen["card"]["html"]


def _at_once(*actions: Any) -> list[Any]:
    """Run ``actions`` in threads released together; each one's result or exception."""
    barrier = threading.Barrier(len(actions))
    results: list[Any] = [None] * len(actions)

    def run(i: int, action: Any) -> None:
        try:
            barrier.wait()
            results[i] = action()
        except Exception as exc:
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, a)) for i, a in enumerate(actions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return results


@pytest.mark.modes  # SQLite queues writers; PostgreSQL's row lock is what this holds to
def test_two_approvers_at_the_same_moment_dispatch_once(
    user, other_user, conversation, leads, monkeypatch
):
    approver_mode("current_time", leads, needed=2)
    call = waiting_call("current_time", {"timezone": "UTC"}, user=user, conversation=conversation)
    dispatched: list[int] = []
    monkeypatch.setattr(approval, "toolcall_dispatch", lambda c: dispatched.append(c.pk))
    results = _at_once(
        lambda: toolcall_decide(user=other_user, call_id=call.pk, approve=True),
        lambda: toolcall_decide(user=carol(), call_id=call.pk, approve=True),
    )
    assert not [r for r in results if isinstance(r, Exception)], results
    assert dispatched == [call.pk]
    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.QUEUED
    statuses = sorted(
        AuditRecord.objects.filter(kind="approval", tool_call=call).values_list("status", flat=True)
    )
    assert statuses == ["approved (1 of 2)", "approved (2 of 2)"]


@pytest.mark.modes
def test_one_approver_twice_at_the_same_moment_counts_once(
    user, other_user, conversation, leads, monkeypatch
):
    approver_mode("current_time", leads, needed=2)
    call = waiting_call("current_time", {"timezone": "UTC"}, user=user, conversation=conversation)
    monkeypatch.setattr(approval, "toolcall_dispatch", lambda c: None)
    results = _at_once(
        lambda: toolcall_decide(user=other_user, call_id=call.pk, approve=True),
        lambda: toolcall_decide(user=other_user, call_id=call.pk, approve=True),
    )
    errors = [str(r) for r in results if isinstance(r, Exception)]
    assert len(errors) == 1 and "you have already approved this call" in errors[0], results
    assert ToolCallApproval.objects.filter(call=call).count() == 1
    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.AWAITING_APPROVAL


def test_the_tools_manager_sets_approvals_needed_from_one_to_five(staff_user, leads):
    admin = logged_in(staff_user)
    url = "/tools/functions/current_time/approval/"
    form = {"approvers_posted": "1", "approval_mode": "approver", "approver_groups": [leads.pk]}
    assert admin.post(url, {**form, "approvals_needed": "2"}).status_code == 302
    config = ToolFunctionConfig.objects.get(name="current_time")
    assert (config.approval_mode, config.approvals_needed) == ("approver", 2)
    changed = AuditRecord.objects.filter(kind="settings", tool="current_time").last()
    assert changed.detail["after"]["approvals_needed"] == 2
    for bad in ("0", "6", "two", "-1"):
        page = admin.post(url, {**form, "approvals_needed": bad}, follow=True)
        assert "approvals needed must be between 1 and 5" in page.content.decode()
    assert ToolFunctionConfig.objects.get(name="current_time").approvals_needed == 2
    with pytest.raises(SettingsError):
        function_approval_set(
            user=staff_user, tool="current_time", mode="approver", approvals_needed=9
        )
    page = admin.get("/tools/functions/current_time/test/").content.decode()
    assert 'name="approvals_needed"' in page and 'value="2"' in page
