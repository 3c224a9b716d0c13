"""The live chat events look up no name that is missing (issue 38).

A name a template cannot find costs Django's engine a chain of exceptions (a failed dict
lookup, a failed attribute, a ``dir()`` and a failed index): about 40 µs each, seven on a
closed reply, a third of its render. A person's message, a reply streaming and closed, and a
tool card queued and finished: each is rendered here with every failed lookup recorded. (The
message itself is a Jinja2 template now, chat_app/rendering.py, whose missing names raise
nothing; the cards in it are Django's.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.template import base

from chat_app.events import message_event
from chat_app.models import Message
from tools_app.events import render_toolcall_card
from tools_app.models import ToolCall


@pytest.fixture
def missed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    names: list[str] = []
    resolve = base.Variable._resolve_lookup  # type: ignore[attr-defined]

    def recorded(self: Any, context: Any) -> Any:
        try:
            return resolve(self, context)
        except base.VariableDoesNotExist:
            names.append(self.var)
            raise

    monkeypatch.setattr(base.Variable, "_resolve_lookup", recorded)
    yield names


def test_a_message_in_each_state_looks_up_only_what_it_has(missed: list[str]) -> None:
    person = Message(pk=1, conversation_id=1, turn_id=1, role="user", content="hello")
    person.branch = None  # the caller that starts a turn knows it
    streaming = Message(pk=2, conversation_id=1, turn_id=1, role="assistant", state="streaming")
    closed = Message(
        pk=2,
        conversation_id=1,
        turn_id=1,
        role="assistant",
        content="It is late in Tokyo.",
        usage={"model": "m", "input_tokens": 435, "output_tokens": 30},
    )
    for message in (person, streaming, closed):
        html = str(message_event(message, [])["html"])
        assert f'id="message-{message.pk}"' in html
    assert "435 in · 30 out · m" in html
    assert missed == []


def test_a_tool_card_queued_and_finished_looks_up_only_what_it_has(missed: list[str]) -> None:
    for status, result in (("queued", {}), ("succeeded", {"time": "13:00", "zone": "Asia/Tokyo"})):
        call = ToolCall(
            pk=5,
            tool="current_time",
            group="time",
            status=status,
            arguments={"timezone": "Asia/Tokyo"},
            result=result,
            language="en",
        )
        assert 'id="toolcall-5"' in render_toolcall_card(call)
    assert missed == []


def test_a_message_whose_usage_is_not_an_object_still_renders(missed: list[str]) -> None:
    """Rows written before usage had its shape (or by hand) render as a message without it."""
    usages: tuple[Any, ...] = (None, [], "x")
    for usage in usages:
        message = Message(pk=3, conversation_id=1, turn_id=1, role="assistant", content="hi")
        message.usage = usage
        html = str(message_event(message, [])["html"])
        assert 'class="message-usage"' not in html and "model-badge" not in html
    assert missed == []
