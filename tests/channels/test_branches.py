"""Edit-and-resend, regenerate and the branch switcher over the chat websocket: the model reads
the shown branch only, and the old branch stays reachable."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async

from chat_app.models import Conversation, Message, Turn
from tests.channels.test_consumer import collect_until_turn_ends, communicator
from tests.llm_server import Reply


def said(body: dict[str, Any]) -> list[str]:
    """What the model was shown, as "role: text" lines (the system prompt left out)."""
    shown = [m for m in body["messages"] if m["role"] in {"user", "assistant"}]
    return [f"{m['role']}: {m['content']}" for m in shown]


def echo(body: dict[str, Any]) -> Reply:
    return Reply(text=f"answer to {body['messages'][-1]['content']}")


@database_sync_to_async
def turn_ids(conversation: Conversation) -> list[int]:
    return list(conversation.turns.order_by("started_at", "id").values_list("id", flat=True))


async def _turn(comm: Any, command: dict[str, Any]) -> list[dict[str, Any]]:
    await comm.send_json_to(command)
    return await collect_until_turn_ends(comm)


@pytest.mark.modes
async def test_edit_and_regenerate_start_branches_the_model_reads_alone(
    worker, conversation, user, llm, provider
):
    llm.set_default(echo)
    comm = communicator(conversation.pk, user)
    await comm.connect()
    await comm.receive_json_from()  # snapshot
    await _turn(comm, {"action": "send", "text": "A"})
    await _turn(comm, {"action": "send", "text": "B"})
    first, second = await turn_ids(conversation)

    # Edit the first message: the model sees the edited one only, not B or the old answers.
    events = await _turn(comm, {"action": "edit", "turn_id": first, "text": "A2"})
    assert said(llm.requests[-1]) == ["user: A2"]
    snapshot = next(e for e in events if e["type"] == "snapshot")
    assert "answer to B" not in snapshot["html"] and "1/2" not in snapshot["html"]
    final = [e for e in events if e["type"] == "snapshot" or e["type"] == "message"]
    assert any("2/2" in e["html"] for e in final)  # the switcher on the edited message

    # The next message follows the edited branch.
    await _turn(comm, {"action": "send", "text": "C"})
    assert said(llm.requests[-1]) == ["user: A2", "assistant: answer to A2", "user: C"]

    # Regenerate the last answer: same message, a fresh answer, the old one not shown to it.
    await _turn(comm, {"action": "regenerate", "turn_id": (await turn_ids(conversation))[-1]})
    assert said(llm.requests[-1]) == ["user: A2", "assistant: answer to A2", "user: C"]

    # Back to the first branch: it comes back as it was (A, B), and goes on from B.
    await comm.send_json_to({"action": "branch", "turn_id": first})
    snapshot = await comm.receive_json_from()
    assert snapshot["type"] == "snapshot"
    assert "answer to B" in snapshot["html"] and "1/2" in snapshot["html"]
    await _turn(comm, {"action": "send", "text": "D"})
    assert said(llm.requests[-1]) == [
        "user: A",
        "assistant: answer to A",
        "user: B",
        "assistant: answer to B",
        "user: D",
    ]

    @database_sync_to_async
    def stored() -> tuple[int, int, int | None]:
        turns = Turn.objects.filter(conversation=conversation)
        d = turns.get(messages__content="D")
        return turns.count(), Message.objects.filter(conversation=conversation).count(), d.parent_id

    # Nothing was deleted: 6 turns (A, B, A2, C, C again, D), 12 messages; D follows B.
    assert await stored() == (6, 12, second)
    await comm.disconnect()


async def test_regenerate_while_running_or_on_a_foreign_turn_is_refused(
    worker, conversation, user, other_user, llm, provider
):
    llm.set_default(echo)

    @database_sync_to_async
    def foreign_turn() -> int:
        theirs = Conversation.objects.create(owner=other_user)
        return Turn.objects.create(conversation=theirs, status=Turn.Status.SUCCEEDED).pk

    theirs = await foreign_turn()
    comm = communicator(conversation.pk, user)
    await comm.connect()
    await comm.receive_json_from()
    for command in (
        {"action": "regenerate", "turn_id": theirs},
        {"action": "edit", "turn_id": theirs, "text": "mine now"},
        {"action": "branch", "turn_id": theirs},
        {"action": "edit", "turn_id": "1 OR 1=1", "text": "x"},
        {"action": "regenerate", "turn_id": True},
    ):
        await comm.send_json_to(command)
        error = await comm.receive_json_from()
        assert error["type"] == "error", command
    await _turn(comm, {"action": "send", "text": "A"})
    [mine] = await turn_ids(conversation)
    await comm.send_json_to({"action": "edit", "turn_id": mine, "text": "   "})
    assert (await comm.receive_json_from())["message"] == "the message is empty"

    @database_sync_to_async
    def waiting_turn() -> None:  # a turn waiting for clarification would take it as its answer
        Turn.objects.create(conversation=conversation, phase=Turn.Phase.CLARIFY)

    await waiting_turn()
    for command in (
        {"action": "edit", "turn_id": mine, "text": "mine now"},
        {"action": "regenerate", "turn_id": mine},
        {"action": "branch", "turn_id": mine},
    ):
        await comm.send_json_to(command)
        assert "still working" in (await comm.receive_json_from())["message"]

    @database_sync_to_async
    def counts() -> tuple[int, int]:
        return Turn.objects.count(), Message.objects.filter(content="mine now").count()

    assert await counts() == (3, 0)
    await comm.disconnect()


async def test_an_auditor_cannot_edit_or_regenerate(worker, conversation, user, staff_user, llm):
    @database_sync_to_async
    def a_turn() -> int:
        return Turn.objects.create(conversation=conversation, status=Turn.Status.SUCCEEDED).pk

    turn = await a_turn()
    comm = communicator(conversation.pk, staff_user)  # a superuser: may read, not write
    connected, _ = await comm.connect()
    assert connected
    await comm.receive_json_from()
    for command in (
        {"action": "regenerate", "turn_id": turn},
        {"action": "branch", "turn_id": turn},
    ):
        await comm.send_json_to(command)
        assert (await comm.receive_json_from())["message"] == "conversation not found"
    await comm.disconnect()
