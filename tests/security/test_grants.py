"""Grants on every way a tool runs (issue 22): a member calls a tool their groups are not
granted — by the model, a ``/`` command, a schedule, a subagent, an ``/mcp/`` token — and the
call is refused with the reason, audited, and nothing runs. Admins may use everything (the
Test button). The model is offered only what the person may use."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone

from chat_app.models import Conversation
from chat_app.services.turns import turn_start
from platform_app.api_tokens import api_token_create
from platform_app.models import Schedule, Subagent
from platform_app.schedules import schedules_fire_due
from tests.conftest import wait_turn
from tests.helpers import wait_for
from tests.llm_server import Call, Reply
from tests.security.test_scope_escape import _call
from tools_app.models import AuditRecord, ToolCall, ToolGrant
from tools_app.services.grants import everyone_group

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.modes, pytest.mark.grants]

SHELL = '/shell_exec {"command": "id"}'
# The member's group: the clock, and the tools that start turns (which carry their grants).
SUPPORT = ["current_time", "subagent_spawn", "schedule_add", "final_answer"]


@pytest.fixture
def member(user: Any) -> Any:
    """alice, in "support" only: granted the functions above; Everyone is granted nothing."""
    ToolGrant.objects.all().delete()
    everyone_group()
    support = Group.objects.create(name="support")
    ToolGrant.objects.bulk_create(
        [ToolGrant(group=support, kind="function", name=name) for name in SUPPORT]
    )
    user.groups.add(support)
    return user


def assert_not_granted(call: ToolCall, tool: str) -> None:
    assert call.tool == tool
    assert call.status == "denied", (call.status, call.error)
    assert call.policy_verdict == "not_granted"
    assert call.error == f"{tool} is not granted to you — ask an admin"
    assert call.started_at is None  # nothing ran
    record = AuditRecord.objects.get(tool_call=call)
    assert (record.status, record.policy_verdict) == ("denied", "not_granted")


def test_the_models_call_of_a_tool_not_granted_is_refused(worker, member, llm, provider):
    conversation = Conversation.objects.create(owner=member)
    llm.script(Reply(calls=[Call("shell_exec", {"command": "id"})]), Reply(text="done"))
    turn = wait_turn(turn_start(conversation=conversation, user_id=member.pk, text="go").pk)
    assert turn.status == "succeeded", turn.error
    assert turn.source == "chat"
    assert_not_granted(ToolCall.objects.get(turn=turn), "shell_exec")
    # The model was offered only what alice may use.
    offered = {t["function"]["name"] for t in llm.requests[0]["tools"]}
    assert "current_time" in offered and offered <= set(SUPPORT)


def test_a_slash_command_of_a_tool_not_granted_is_refused(worker, member):
    conversation = Conversation.objects.create(owner=member)
    turn = wait_turn(turn_start(conversation=conversation, user_id=member.pk, text=SHELL).pk)
    assert_not_granted(ToolCall.objects.get(turn=turn), "shell_exec")
    ok = turn_start(conversation=conversation, user_id=member.pk, text="/current_time")
    assert ToolCall.objects.get(turn=wait_turn(ok.pk)).status == "succeeded"


def test_a_subagent_runs_with_its_parents_grants(worker, member, llm, provider):
    conversation = Conversation.objects.create(owner=member)
    llm.script(
        Reply(calls=[Call("subagent_spawn", {"name": "escape", "message": SHELL})]),
        Reply(text="started"),
    )
    wait_turn(turn_start(conversation=conversation, user_id=member.pk, text="go").pk)
    subagent = Subagent.objects.get()
    turn = wait_turn(wait_for(lambda: Subagent.objects.get(pk=subagent.pk).turn_id))
    assert_not_granted(ToolCall.objects.get(turn=turn), "shell_exec")
    assert turn.source == "subagent" and turn.kind == "slash"


def test_a_schedule_runs_with_its_owners_grants_when_it_fires(worker, member, llm, provider):
    conversation = Conversation.objects.create(owner=member)
    add = {"name": "later", "cron": "0 9 * * *", "message": SHELL}
    llm.script(Reply(calls=[Call("schedule_add", add)]), Reply(text="scheduled"))
    wait_turn(turn_start(conversation=conversation, user_id=member.pk, text="go").pk)
    assert schedules_fire_due(now=timezone.now() + timedelta(days=2)) == 1
    turn = wait_turn(Schedule.objects.get().last_turn_id)
    assert_not_granted(ToolCall.objects.get(turn=turn), "shell_exec")
    assert turn.source == "schedule"


def test_the_test_button_is_for_admins_who_may_use_everything(worker, member, staff_user, client):
    url = "/tools/functions/current_time/test/"
    client.force_login(member)
    response = client.post(url, {"arg-raw_json__": '{"timezone": "UTC"}'})
    assert response.status_code in (302, 403)
    assert not ToolCall.objects.exists()
    ToolGrant.objects.all().delete()  # granted to nobody: admins still may
    client.force_login(staff_user)
    client.post(url, {"arg-raw_json__": '{"timezone": "UTC"}'})
    call = ToolCall.objects.get()
    assert call.source == "test" and call.policy_verdict == "allowed", call.error
    # The worker runs it after the response: let it end before the test's data goes.
    wait_for(lambda: ToolCall.objects.get(pk=call.pk).status == "succeeded")


def test_an_mcp_token_is_refused_once_its_owner_leaves_the_group(app_server, member):
    token = api_token_create(user=member, name="client")[1]
    result = asyncio.run(_call(app_server, token, "current_time", {"timezone": "UTC"}))
    assert not result.is_error, result.content
    refused = asyncio.run(_call(app_server, token, "shell_exec", {"command": "id"}))
    assert refused.is_error
    assert_not_granted(ToolCall.objects.get(tool="shell_exec"), "shell_exec")
    member.groups.clear()  # removed from "support": the next call is refused
    again = asyncio.run(_call(app_server, token, "current_time", {"timezone": "UTC"}))
    assert again.is_error
    assert_not_granted(ToolCall.objects.filter(tool="current_time").last(), "current_time")
