"""Titles as plain text (issue 23): a first message's markdown is taken off; a slash-only
conversation is named after its first command."""

from __future__ import annotations

import pytest

from chat_app.models import Conversation
from chat_app.services.titles import title_from
from chat_app.services.turns import conversation_touch, turn_start


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("Hello! What **time** is it?", "Hello! What time is it?"),
        ("# Plan\n- the *offsite* in `March`", "Plan the offsite in March"),
        (
            "See [the docs](https://x.test/a) and snake_case_names",
            "See the docs and snake_case_names",
        ),
        ("/shell_exec ls -la /tmp", "shell_exec: ls -la /tmp"),
        ('/current_time {"timezone": "UTC"}', 'current_time: {"timezone": "UTC"}'),
        ("/help", "help"),
        ("word " * 40, ("word " * 11).strip() + "…"),
    ],
)
def test_titles_are_plain_text_and_slash_commands_name_them(text, title):
    assert title_from(text) == title
    assert len(title_from(text)) <= 60


def test_the_first_message_names_a_conversation_once(user):
    conversation = Conversation.objects.create(owner=user)
    assert conversation_touch(conversation, first_text="What **time** is it in _Berlin_?")
    assert Conversation.objects.get(pk=conversation.pk).title == "What time is it in Berlin?"
    assert not conversation_touch(conversation, first_text="something else")


def test_a_slash_only_conversation_is_titled_from_its_first_command(user):
    conversation = Conversation.objects.create(owner=user)
    turn_start(conversation=conversation, user_id=user.pk, text="/no_such_tool ls -la")
    assert Conversation.objects.get(pk=conversation.pk).title == "no_such_tool: ls -la"
