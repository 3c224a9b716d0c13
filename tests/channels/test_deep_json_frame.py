"""A websocket frame of JSON nested beyond any sane depth (issue 33, finding 7) is answered
with an ``error`` event like any other malformed frame; the socket stays open and works."""

from __future__ import annotations

import pytest
from django.conf import settings

from tests.channels.test_untrusted_input import connected, messages_of, still_works

pytestmark = [pytest.mark.modes]


async def test_it_answers_a_deeply_nested_frame_with_an_error_event(worker, conversation, user):
    comm = await connected(conversation, user)
    size = min(300 * 1024, settings.CHAT_MAX_MESSAGE_BYTES - 16)
    for frame in (
        "[" * size,
        '{"action": "send", "text": "hi", "x": ' + "[" * 200 + "]" * 200 + "}",
    ):
        await comm.send_to(text_data=frame)
        event = await comm.receive_json_from()
        assert event["type"] == "error", event
        assert "nested deeper than" in event["message"], event
    assert await messages_of(conversation) == []
    await still_works(comm)
    await comm.disconnect()
