"""A PostgreSQL restart or failover, with real processes: every connection of the deployment
is terminated while a tool call runs (``pg_terminate_backend``, what a restart does to the
clients), and the same processes carry on with no one restarted.

The test runs a private stack (``tests/stack.py``: its own Redis, web, agent runner and a
tools worker with two threads, as production runs it) on the test database, and drives it as
the chat page does.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from django.db import close_old_connections, connection

from chat_app.models import Turn
from tests.conftest import TERMINATE_OTHER_CLIENTS, shared_processes_paused
from tests.llm_server import Call, Reply
from tests.scenarios.workspace import isolated_conversation
from tests.stack import ChatSocket, Stack
from tools_app.models import ToolCall

pytestmark = [pytest.mark.distributed_only, pytest.mark.slow]


@pytest.fixture
def stack(transactional_db: None) -> Iterator[Stack]:
    with shared_processes_paused():  # see tests/conftest.py
        # The worker as docker-compose.yml runs it (threads), and the production heartbeat
        # timeout: a call whose message was lost is queued again only after it, so no
        # redelivery comes within the 30 s the next call is given.
        stack = Stack(worker_pool="threads", TOOL_HEARTBEAT_TIMEOUT="30").start()
        try:
            yield stack
        finally:
            stack.stop()
            close_old_connections()


def terminate_every_other_connection() -> int:
    """What a restart or failover does to every client of the database: every process of the
    product (web, runner, worker, the shared ones too). The test session's own sessions are
    spared (tests.conftest.TERMINATE_OTHER_CLIENTS): they are the test's, not the product's."""
    with connection.cursor() as cursor:
        cursor.execute(TERMINATE_OTHER_CLIENTS, [connection.settings_dict["NAME"]])
        return int(cursor.fetchone()[0])


def pids(stack: Stack) -> dict[str, int | None]:
    procs = {"web": stack.web, "runner": stack.runner, "worker": stack.worker}
    return {name: p.pid if p and p.poll() is None else None for name, p in procs.items()}


async def test_it_runs_the_next_call_after_every_database_connection_was_terminated(
    stack, user, llm, provider
):
    with isolated_conversation(user, title="database failover") as conversation:
        before = pids(stack)
        socket = ChatSocket(stack, conversation.pk, user)
        await socket.connect()
        # Both worker threads run a call first, so each holds a database connection.
        llm.script(
            Reply(
                text="Both at once.",
                calls=[
                    Call("shell_exec", {"command": "sleep 0.5; echo one"}),
                    Call("shell_exec", {"command": "sleep 0.5; echo two"}),
                ],
            ),
            Reply(text="Warm."),
        )
        await socket.send({"action": "send", "text": "warm up"})
        events = await socket.until_turn_ends(timeout=90)
        assert events[-1]["status"] == "succeeded"

        # The database goes away while a call runs.
        llm.script(
            Reply(text="Running it.", calls=[Call("shell_exec", {"command": "sleep 2; echo x"})]),
            Reply(text="Done with the long job."),
        )
        await socket.send({"action": "send", "text": "run the long job"})
        while True:
            event = await socket.next(timeout=60)
            if event["type"] == "toolcall" and event["status"] == "running":
                break
        assert terminate_every_other_connection() > 0
        # That turn ends, and clearly: the call ends with its own result (not "worker lost"
        # from the reaper, 30 s on), the model answers, nothing is left running.
        interrupted = ToolCall.objects.get(
            conversation=conversation, arguments__command="sleep 2; echo x"
        )
        events = await socket.until_turn_ends(timeout=20)
        assert events[-1]["status"] == "succeeded"
        interrupted.refresh_from_db()
        assert interrupted.status == "succeeded", interrupted.error
        assert interrupted.result["stdout"].strip() == "x"
        assert not Turn.objects.filter(
            conversation=conversation, status=Turn.Status.RUNNING
        ).exists()
        await socket.close()

        # The next calls, through the same web, runner and worker, work within 30 s: two at
        # once, so that each worker thread runs one.
        socket = ChatSocket(stack, conversation.pk, user)
        await socket.connect()
        commands = ["echo after-failover-1", "echo after-failover-2"]
        llm.script(
            Reply(text="Again.", calls=[Call("shell_exec", {"command": c}) for c in commands]),
            Reply(text="It worked."),
        )
        started = time.monotonic()
        await socket.send({"action": "send", "text": "once more"})
        events = await socket.until_turn_ends(timeout=30)
        assert time.monotonic() - started < 30
        assert events[-1]["status"] == "succeeded"
        for command in commands:
            after = ToolCall.objects.get(conversation=conversation, arguments__command=command)
            assert after.status == "succeeded", after.error
            assert command.split()[1] in after.result["stdout"]
        await socket.close()
        assert pids(stack) == before and None not in before.values()
