"""A turn that a tool started (a subagent, a schedule) carries the tool list of the call that
started it: a ``/`` message inside it binds within that list, in both modes, and so do the
model's calls. The attack: a profile or token limited to ``subagent_spawn`` / ``schedule_add``
hands ``/shell_exec …`` or ``/file_write …`` to a helper or a schedule as its message."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from chat_app.models import Agent, Conversation, Turn
from chat_app.services.turns import turn_start
from platform_app.api_tokens import api_token_create
from platform_app.models import Schedule, Subagent
from platform_app.schedules import schedules_fire_due
from tests.conftest import wait_turn
from tests.helpers import wait_for
from tests.llm_server import Call, Reply
from tools_app.models import ToolCall

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.modes]

SHELL = '/shell_exec {"command": "id"}'
WRITE = '/file_write {"path": "pwned.txt", "content": "pwned"}'


def limited_conversation(user: Any, tools: list[str]) -> Conversation:
    agent = Agent.objects.create(name="Limited", all_tools=False, tools=tools)
    return Conversation.objects.create(owner=user, agent=agent)


def child_call(subagent: Subagent) -> ToolCall:
    turn = wait_turn(wait_for(lambda: Subagent.objects.get(pk=subagent.pk).turn_id, message="turn"))
    return ToolCall.objects.get(turn=turn)


def assert_refused(call: ToolCall, tool: str) -> None:
    assert call.tool == tool
    assert call.status == "denied", (call.status, call.error)
    assert "not available" in call.error
    assert call.started_at is None  # nothing ran


def test_it_keeps_a_subagents_slash_message_inside_the_profile(worker, user, llm, provider):
    conversation = limited_conversation(user, ["current_time", "subagent_spawn"])
    spawn = {"name": "escape", "message": SHELL}
    llm.script(Reply(calls=[Call("subagent_spawn", spawn)]), Reply(text="started"))
    parent = wait_turn(turn_start(conversation=conversation, user_id=user.pk, text="go").pk)
    assert parent.status == "succeeded", parent.error
    subagent = Subagent.objects.get()
    call = child_call(subagent)
    assert_refused(call, "shell_exec")
    assert Turn.objects.get(pk=call.turn_id).tool_scope == ["current_time", "subagent_spawn"]
    done = wait_for(lambda: Subagent.objects.exclude(status="running").filter(pk=subagent.pk))
    assert done.get().status == "failed"


def test_a_subagents_slash_message_inside_the_profile_still_runs(worker, user, llm, provider):
    conversation = limited_conversation(user, ["current_time", "subagent_spawn"])
    spawn = {"name": "clock", "message": '/current_time {"timezone": "UTC"}'}
    llm.script(Reply(calls=[Call("subagent_spawn", spawn)]), Reply(text="started"))
    wait_turn(turn_start(conversation=conversation, user_id=user.pk, text="go").pk)
    call = child_call(Subagent.objects.get())
    assert call.status == "succeeded", call.error


def test_it_keeps_a_schedules_slash_message_inside_the_profile_when_it_fires(
    worker, user, llm, provider
):
    conversation = limited_conversation(user, ["current_time", "schedule_add"])
    add = {"name": "later", "cron": "0 9 * * *", "message": WRITE}
    llm.script(Reply(calls=[Call("schedule_add", add)]), Reply(text="scheduled"))
    wait_turn(turn_start(conversation=conversation, user_id=user.pk, text="go").pk)
    schedule = Schedule.objects.get()
    assert schedule.tool_scope == ["current_time", "schedule_add"]
    assert schedules_fire_due(now=timezone.now() + timedelta(days=2)) == 1
    turn = wait_turn(Schedule.objects.get().last_turn_id)
    assert_refused(ToolCall.objects.get(turn=turn), "file_write")


def test_the_models_calls_in_a_started_turn_stay_inside_the_scope(worker, user, llm, provider):
    """The helper's model is offered, and may call, only what its starter could."""
    conversation = limited_conversation(user, ["current_time", "subagent_spawn"])
    Agent.objects.filter(pk=conversation.agent_id).update(all_tools=True)
    turn = turn_start(
        conversation=conversation, user_id=user.pk, text="task", scope=["current_time"]
    )
    llm.script(Reply(calls=[Call("shell_exec", {"command": "id"})]), Reply(text="done"))
    wait_turn(turn.pk)
    offered = [t["function"]["name"] for t in llm.requests[0]["tools"]]
    assert offered == ["current_time"]
    assert_refused(ToolCall.objects.get(turn=turn), "shell_exec")


# --- the same attacks through an API token at /mcp/ ----------------------------------------


async def _call(url: str, token: str, name: str, arguments: dict[str, Any]) -> Any:
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=120)) as http,
        streamable_http_client(f"{url}/mcp/", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await session.call_tool(name, arguments)


def token_for(user: Any, tools: list[str]) -> str:
    agent = Agent.objects.create(name="Token profile", all_tools=False, tools=tools)
    return api_token_create(user=user, name="limited", agent=agent)[1]


def test_a_token_limited_to_subagent_spawn_cannot_reach_the_shell(app_server, user):
    token = token_for(user, ["memory_search", "subagent_spawn"])
    result = asyncio.run(
        _call(app_server, token, "subagent_spawn", {"name": "escape", "message": SHELL})
    )
    assert not result.is_error, result.content
    assert_refused(child_call(Subagent.objects.get()), "shell_exec")


def test_a_token_limited_to_schedules_cannot_write_files_when_the_schedule_fires(app_server, user):
    token = token_for(user, ["schedule_add", "schedule_list", "schedule_remove"])
    add = {"name": "later", "cron": "0 9 * * *", "message": WRITE}
    result = asyncio.run(_call(app_server, token, "schedule_add", add))
    assert not result.is_error, json.dumps(result.structured_content)
    assert schedules_fire_due(now=timezone.now() + timedelta(days=2)) == 1
    turn = wait_turn(Schedule.objects.get().last_turn_id)
    assert_refused(ToolCall.objects.get(turn=turn), "file_write")
