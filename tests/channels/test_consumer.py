"""The chat websocket, driven with Channels' WebsocketCommunicator against the real worker."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser

from chat_app.models import Message, Turn
from chat_app.routing import websocket_urlpatterns
from controlcenter.asgi import application
from tests.helpers import signed_in
from tests.llm_server import Call, Reply
from tools_app.models import ToolCall

pytestmark = [pytest.mark.modes]


def communicator(conversation_id: int, user: Any) -> WebsocketCommunicator:
    comm = WebsocketCommunicator(
        URLRouter(websocket_urlpatterns), f"/ws/conversations/{conversation_id}/"
    )
    signed_in(comm, user)
    return comm


async def collect_until_turn_ends(comm: WebsocketCommunicator, timeout: float = 15) -> list[dict]:
    events: list[dict] = []
    async with asyncio.timeout(timeout):
        while True:
            event = await comm.receive_json_from(timeout=timeout)
            events.append(event)
            if event["type"] == "turn" and not event["running"]:
                return events


async def test_it_refuses_anonymous_users(conversation):
    comm = communicator(conversation.pk, AnonymousUser())
    connected, code = await comm.connect()
    assert not connected and code == 4401


async def test_it_refuses_another_users_conversation(conversation, other_user):
    comm = communicator(conversation.pk, other_user)
    connected, code = await comm.connect()
    assert not connected and code == 4403


async def test_it_refuses_foreign_origins(conversation):
    comm = WebsocketCommunicator(
        application,
        f"/ws/conversations/{conversation.pk}/",
        headers=[(b"origin", b"http://evil.example"), (b"host", b"127.0.0.1")],
    )
    connected, _ = await comm.connect()
    assert not connected


async def test_it_sends_a_snapshot_then_streams_a_slash_command(worker, conversation, user):
    comm = communicator(conversation.pk, user)
    connected, _ = await comm.connect()
    assert connected
    snapshot = await comm.receive_json_from()
    assert snapshot["type"] == "snapshot" and snapshot["running"] is False
    await comm.send_json_to({"action": "send", "text": '/current_time {"timezone": "UTC"}'})
    events = await collect_until_turn_ends(comm)
    statuses = [e["status"] for e in events if e["type"] == "toolcall"]
    assert statuses[-1] == "succeeded"
    # A call shows "running" only once it has run a moment (tools_app.services.watchdog); if
    # it did, that came first.
    assert statuses.count("succeeded") == 1
    assert "running" not in statuses[statuses.index("succeeded") :]
    await comm.disconnect()


async def test_a_slash_commands_card_always_arrives_before_its_turn_ends(
    worker, conversation, user
):
    """The worker running the call ends the turn, after the call's card is sent; the process
    that took the command does not end it meanwhile (it did when the call was fast: the turn's
    end then reached the page, or an API client following the turn, before the card)."""
    comm = communicator(conversation.pk, user)
    await comm.connect()
    await comm.receive_json_from()
    for _ in range(20):
        await comm.send_json_to({"action": "send", "text": '/current_time {"timezone": "UTC"}'})
        events = await collect_until_turn_ends(comm)
        turn_id = events[-1]["id"]
        cards = [e for e in events if e["type"] == "toolcall"]
        assert [c["turn_id"] for c in cards] == [turn_id] * len(cards), events
        assert cards and cards[-1]["status"] == "succeeded", events
    await comm.disconnect()


async def test_a_slash_command_refused_at_binding_ends_its_turn_at_once(conversation, user):
    """Nothing runs a refused call, so the turn ends in the sending process (no worker here)."""
    comm = communicator(conversation.pk, user)
    await comm.connect()
    await comm.receive_json_from()
    await comm.send_json_to({"action": "send", "text": '/current_time {"timezone": "Nowhere/X"}'})
    events = await collect_until_turn_ends(comm, timeout=5)
    assert events[-1]["status"] == "failed", events
    await comm.disconnect()


async def test_a_chat_turn_streams_events_in_order_and_persists(
    worker, conversation, user, llm, provider
):
    llm.script(
        Reply(text="Checking the clock.", calls=[Call("current_time", {"timezone": "UTC"})]),
        Reply(text="It is **now**."),
    )
    comm = communicator(conversation.pk, user)
    await comm.connect()
    await comm.receive_json_from()  # snapshot
    await comm.send_json_to({"action": "send", "text": "what time is it?"})
    events = await collect_until_turn_ends(comm)
    kinds = [e["type"] for e in events]
    first_tool = kinds.index("toolcall")
    assert kinds[0] == "message" and events[0]["role"] == "user"
    assert "token" in kinds[:first_tool]
    tool_events = [e for e in events if e["type"] == "toolcall"]
    assert [e["status"] for e in tool_events][-1] == "succeeded"
    versions = [e["version"] for e in tool_events]
    assert versions == sorted(versions)
    # Tokens arrive with offsets that tile the text exactly.
    final_id = [e for e in events if e["type"] == "message" and e["role"] == "assistant"][-1]["id"]
    tokens = [e for e in events if e["type"] == "token" and e["message_id"] == final_id]
    text, offset = "", 0
    for t in tokens:
        assert t["offset"] == offset
        text += t["text"]
        offset += len(t["text"])
    assert text == "It is **now**."
    final = [e for e in events if e["type"] == "message" and e["id"] == final_id][-1]
    assert "<strong>now</strong>" in final["html"]
    assert events[-1]["status"] == "succeeded"

    @database_sync_to_async
    def stored() -> tuple[list[str], list[str], str]:
        msgs = list(
            Message.objects.filter(conversation=conversation).values_list("role", flat=True)
        )
        calls = list(
            ToolCall.objects.filter(conversation=conversation).values_list("status", flat=True)
        )
        return msgs, calls, Turn.objects.get(conversation=conversation).status

    assert await stored() == (["user", "assistant", "assistant"], ["succeeded"], "succeeded")
    await comm.disconnect()


async def test_a_reconnect_gets_the_partial_text_and_keeps_streaming(
    worker, conversation, user, llm, provider
):
    # ~2.7 s of stream: still running after the reconnect even when a loaded machine is slow
    llm.script(Reply(text="abcdefghij" * 80, chunk_delay=0.01, chunk_size=3))
    first = communicator(conversation.pk, user)
    await first.connect()
    await first.receive_json_from()
    await first.send_json_to({"action": "send", "text": "spell"})
    while (await first.receive_json_from())["type"] != "token":
        pass
    await first.disconnect()
    await asyncio.sleep(0.6)  # long enough for the loop to persist some text
    second = communicator(conversation.pk, user)
    await second.connect()
    snapshot = await second.receive_json_from()
    assert snapshot["type"] == "snapshot" and snapshot["running"] is True
    assert "abcdefghij" in snapshot["html"]
    events = await collect_until_turn_ends(second)
    assert any(e["type"] == "token" for e in events)
    assert events[-1]["status"] == "succeeded"
    await second.disconnect()


async def test_stop_over_the_websocket_cancels_the_turn(worker, conversation, user, llm, provider):
    llm.script(Reply(text="x" * 2000, chunk_delay=0.02, chunk_size=4))
    comm = communicator(conversation.pk, user)
    await comm.connect()
    await comm.receive_json_from()
    await comm.send_json_to({"action": "send", "text": "go on"})
    while (await comm.receive_json_from())["type"] != "token":
        pass
    loop = asyncio.get_running_loop()
    started = loop.time()
    await comm.send_json_to({"action": "stop"})
    events = await collect_until_turn_ends(comm, timeout=5)
    assert events[-1]["status"] == "cancelled"
    assert loop.time() - started < 2.0
    await comm.disconnect()
