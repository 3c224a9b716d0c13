"""Faults of a distributed deployment, with real processes, a real Redis and Postgres.

Each test runs a private stack (``tests/stack.py``: its own Redis server, web, agent runner,
tools worker; heartbeat timeouts of 5 s) and drives it as the chat page does, over a real
websocket. A crash is SIGKILL of a process group; a Redis restart keeps nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from chat_app.models import Message, Turn
from tests.conftest import shared_processes_paused
from tests.helpers import wait_for
from tests.llm_server import Call, Reply
from tests.scenarios.workspace import isolated_conversation
from tests.stack import ChatSocket, Stack
from tools_app.models import ToolCall

pytestmark = [pytest.mark.distributed_only, pytest.mark.slow]


@pytest.fixture
def stack(transactional_db: None) -> Iterator[Stack]:
    with shared_processes_paused():  # see tests/conftest.py
        stack = Stack().start()
        try:
            yield stack
        finally:
            stack.stop()


def running_turns(conversation: Any) -> list[Turn]:
    return list(Turn.objects.filter(conversation=conversation, status=Turn.Status.RUNNING))


async def ask(socket: ChatSocket, text: str) -> list[dict[str, Any]]:
    await socket.send({"action": "send", "text": text})
    return await socket.until_turn_ends(timeout=90)


async def test_a_killed_runner_ends_its_turn_clearly_and_the_next_message_works(
    stack, conversation, user, llm, provider
):
    check = stack.manage("agent_runner", "--check", "--name", stack.runner_name)
    assert check.returncode == 0, check.stderr  # what the container health check runs
    assert stack.manage("agent_runner", "--check", "--name", "nobody").returncode == 1
    llm.script(Reply(text="Let me think about that for a long", hang_after_text=True))
    socket = ChatSocket(stack, conversation.pk, user)
    await socket.connect()
    await socket.send({"action": "send", "text": "a hard question"})
    while (await socket.next())["type"] != "token":
        pass
    wait_for(  # the runner stores what it streamed twice a second
        lambda: (
            Message.objects.filter(conversation=conversation, role="assistant")
            .exclude(content="")
            .exists()
        ),
        timeout=10,
        message="the partial reply to be stored",
    )
    # Only the web process is left to notice: no runner, no worker.
    Stack.kill(stack.worker)
    Stack.kill(stack.runner)
    events = await socket.until_turn_ends(timeout=30)
    turn = Turn.objects.get(conversation=conversation)
    assert turn.status == Turn.Status.FAILED and turn.error.startswith("agent runner lost (")
    assert turn.runner and turn.runner in turn.error  # where it ran
    notices = [e for e in events if e["type"] == "message" and e["role"] == "notice"]
    assert notices and "runner lost" in notices[-1]["html"]
    reply = Message.objects.get(turn=turn, role="assistant")
    assert reply.state == "error" and reply.content.startswith("Let me think")  # kept
    assert running_turns(conversation) == []

    stack.start_runner()
    llm.script(Reply(text="Here I am again."))
    events = await ask(socket, "are you back?")
    assert events[-1]["status"] == "succeeded"
    assert Message.objects.filter(conversation=conversation, content="Here I am again.").exists()
    await socket.close()


async def test_a_killed_tools_worker_fails_its_call_as_worker_lost_and_the_turn_goes_on(
    stack, user, llm, provider
):
    with isolated_conversation(user, title="worker lost") as conversation:
        llm.script(
            Reply(text="Running it.", calls=[Call("shell_exec", {"command": "sleep 300.517"})]),
            lambda body: Reply(text="The command did not finish: its worker was lost."),
        )
        socket = ChatSocket(stack, conversation.pk, user)
        await socket.connect()
        await socket.send({"action": "send", "text": "run the long job"})
        while True:
            event = await socket.next(timeout=90)
            if event["type"] == "toolcall" and event["status"] == "running":
                break
        Stack.kill(stack.worker)  # the master and its pool children, mid-call
        events = await socket.until_turn_ends(timeout=60)
        assert events[-1]["status"] == "succeeded"
        call = ToolCall.objects.get(conversation=conversation)
        assert call.status == "failed"
        assert call.error.startswith("worker lost: the worker running this call")
        # The model got the failure as the call's result and answered.
        tool_results = [m for m in llm.requests[1]["messages"] if m["role"] == "tool"]
        assert "worker lost" in tool_results[0]["content"]
        assert running_turns(conversation) == []
        await socket.close()


async def test_a_redis_restart_mid_turn_ends_the_turn_and_new_turns_work(
    stack, conversation, user, llm, provider
):
    llm.script(
        Reply(text="Checking the clock.", calls=[Call("current_time", {})], delay=2.0),
        Reply(text="It is time.", delay=0.5),
    )
    socket = ChatSocket(stack, conversation.pk, user)
    await socket.connect()
    await socket.send({"action": "send", "text": "what time is it?"})
    wait_for(
        lambda: Turn.objects.filter(conversation=conversation, phase="streaming").exists(),
        timeout=30,
        message="the model round to start",
    )
    stack.redis.restart()  # while the model is thinking: queued messages and groups are gone
    turn = wait_for(
        lambda: (
            Turn.objects.filter(conversation=conversation)
            .exclude(status=Turn.Status.RUNNING)
            .first()
        ),
        timeout=60,
        message="the turn to end after the Redis restart",
    )
    # It ends either way, never silently: succeeded, or failed with words for the person.
    if turn.status != Turn.Status.SUCCEEDED:
        assert turn.status == Turn.Status.FAILED and turn.error
        assert Message.objects.filter(turn=turn, role="notice").exists()
    else:
        assert Message.objects.filter(turn=turn, content="It is time.").exists()
    assert running_turns(conversation) == []

    # The page reconnects (its socket died with Redis) and carries on.
    await socket.close()
    socket = ChatSocket(stack, conversation.pk, user)
    await socket.connect()
    llm.script(Reply(text="Still here."))
    events = await ask(socket, "and now?")
    assert events[-1]["status"] == "succeeded"
    await socket.close()


async def test_an_idle_websocket_stays_open_for_a_minute_and_still_gets_events(
    stack, conversation, user
):
    socket = ChatSocket(stack, conversation.pk, user)
    await socket.connect()
    with pytest.raises(TimeoutError):  # nothing arrives, and nothing closes the socket
        await socket.next(timeout=65)
    assert socket.ws.close_code is None
    # Events published by other processes (the tools worker) still arrive over Redis.
    events = await ask(socket, '/current_time {"timezone": "UTC"}')
    statuses = [e["status"] for e in events if e["type"] == "toolcall"]
    assert statuses[-1] == "succeeded"
    await socket.close()
    await asyncio.sleep(0)
