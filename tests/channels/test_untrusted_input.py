"""Websocket input is untrusted: every malformed frame gets an ``error`` event and the socket
stays open (and still works), on the chat socket and on the Tools Manager's Test socket."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.conf import settings

from chat_app.models import Conversation, Message, Turn
from tests.channels.test_consumer import collect_until_turn_ends, communicator
from tests.helpers import signed_in
from tests.llm_server import Reply
from tools_app.manager.routing import websocket_urlpatterns as tools_routes

pytestmark = [pytest.mark.modes]

MALFORMED_TEXT = [
    ("not json", "malformed frame: not JSON"),
    ("{{{{" * 1000, "malformed frame: not JSON"),
    ('{"action": "send", "text": "unterminated', "malformed frame: not JSON"),
    ("[1, 2, 3]", "expected a JSON object"),
    ('"just a string"', "expected a JSON object"),
    ("null", "expected a JSON object"),
    ('{"action": "send", "text": null}', "'text' must be a string"),
    ('{"action": "send", "text": 42}', "'text' must be a string"),
    ('{"action": "send", "text": ["a"]}', "'text' must be a string"),
    ('{"action": "send"}', "'text' must be a string"),
    ('{"action": "fly"}', "unknown action 'fly'"),
    ('{"no_action": true}', "unknown action None"),
    ('{"action": "approve", "call_id": "1"}', "malformed approval command"),
    ('{"action": "send", "text": "   "}', "the message is empty"),
]


async def connected(conversation: Any, user: Any) -> WebsocketCommunicator:
    comm = communicator(conversation.pk, user)
    ok, _ = await comm.connect()
    assert ok
    assert (await comm.receive_json_from())["type"] == "snapshot"
    return comm


async def still_works(comm: WebsocketCommunicator) -> None:
    """The same socket runs a command afterwards: a slash command streams to the end."""
    await comm.send_json_to({"action": "send", "text": '/current_time {"timezone": "UTC"}'})
    events = await collect_until_turn_ends(comm)
    assert [e["status"] for e in events if e["type"] == "toolcall"][-1:] == ["succeeded"], [
        {k: v for k, v in e.items() if k != "html"} for e in events
    ]


@database_sync_to_async
def messages_of(conversation: Any) -> list[str]:
    return list(
        Message.objects.filter(conversation=conversation, role="user").values_list(
            "content", flat=True
        )
    )


async def test_every_malformed_frame_gets_an_error_and_the_socket_stays_open(
    worker, conversation, user
):
    comm = await connected(conversation, user)
    for frame, words in MALFORMED_TEXT:
        await comm.send_to(text_data=frame)
        event = await comm.receive_json_from()
        assert event["type"] == "error", frame
        assert words in event["message"], (frame, event)
    await comm.send_to(bytes_data=b"\x00\x01binary")
    event = await comm.receive_json_from()
    assert event == {
        "type": "error",
        "message": "binary frames are not accepted: send a JSON object as text",
    }
    assert await messages_of(conversation) == []  # nothing reached the model as a message
    await still_works(comm)
    await comm.disconnect()


async def test_a_message_above_the_size_limit_is_refused_clearly(worker, conversation, user):
    comm = await connected(conversation, user)
    limit = settings.CHAT_MAX_MESSAGE_BYTES
    for size in (limit + 1, 2 * 1024 * 1024):
        await comm.send_json_to({"action": "send", "text": "x" * size})
        event = await comm.receive_json_from()
        assert event["type"] == "error"
        assert "message too large" in event["message"]
        assert f"the limit is {limit // 1024} KB" in event["message"]
    assert await messages_of(conversation) == []
    await still_works(comm)
    await comm.disconnect()


async def test_a_message_just_under_the_limit_is_accepted(worker, conversation, user):
    comm = await connected(conversation, user)
    text = "/nope " + "y" * (settings.CHAT_MAX_MESSAGE_BYTES - 200)
    await comm.send_json_to({"action": "send", "text": text})
    event = await comm.receive_json_from()
    assert event["type"] == "message" and event["role"] == "user"
    assert await messages_of(conversation) == [text]
    await comm.disconnect()


async def test_text_that_cannot_be_stored_is_refused(worker, conversation, user):
    comm = await connected(conversation, user)
    await comm.send_to(text_data='{"action": "send", "text": "a\\ud800b"}')
    event = await comm.receive_json_from()
    assert event["type"] == "error" and "lone surrogate" in event["message"]
    await comm.send_to(text_data='{"action": "send", "text": "a\\u0000b"}')
    event = await comm.receive_json_from()
    assert event["type"] == "error" and "NUL" in event["message"]
    await still_works(comm)
    await comm.disconnect()


async def test_the_first_message_names_the_conversation_live(worker, user, llm, provider):
    conversation = await database_sync_to_async(Conversation.objects.create)(owner=user)
    llm.script(Reply(text="Hello."))
    comm = await connected(conversation, user)
    await comm.send_json_to({"action": "send", "text": "Plan the  team\noffsite for March"})
    events = await collect_until_turn_ends(comm)
    titles = [e for e in events if e["type"] == "conversation"]
    assert titles == [
        {"type": "conversation", "id": conversation.pk, "title": "Plan the team offsite for March"}
    ]
    await comm.send_json_to({"action": "send", "text": "and one more thing"})
    events = await collect_until_turn_ends(comm)
    assert not [e for e in events if e["type"] == "conversation"]  # named once
    turns = await database_sync_to_async(
        lambda: list(
            Turn.objects.filter(conversation=conversation).values_list("status", flat=True)
        )
    )()
    assert turns == ["succeeded", "succeeded"]
    await comm.disconnect()


async def test_the_tools_test_socket_survives_malformed_frames_too(staff_user):
    from tools_app.models import ToolCall

    call = await database_sync_to_async(ToolCall.objects.create)(
        tool="current_time", status="succeeded", source="test", user=staff_user
    )
    comm = WebsocketCommunicator(URLRouter(tools_routes), f"/ws/toolcalls/{call.pk}/")
    signed_in(comm, staff_user)
    ok, _ = await comm.connect()
    assert ok
    assert (await comm.receive_json_from())["type"] == "toolcall"
    for frame in ("not json", "[]", '{"action": 5}'):
        await comm.send_to(text_data=frame)
        assert (await comm.receive_json_from())["type"] == "error"
    await comm.send_to(bytes_data=b"\xff")
    assert (await comm.receive_json_from())["type"] == "error"
    await comm.send_json_to({"action": "stop"})  # still listening: a finished call stays so
    assert await comm.receive_nothing(timeout=0.3)
    await comm.disconnect()
