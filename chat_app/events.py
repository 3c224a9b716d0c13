"""Events about messages and turns, for the chat page."""

from __future__ import annotations

from typing import Any

from chat_app.models import Conversation, Message, Turn
from chat_app.rendering import message_html
from chat_app.turn_tree import turn_tree
from infra.events import apublish_in_order, conversation_group, publish


def message_event(message: Message, calls: list[Any] | None = None) -> dict[str, object]:
    """``calls``: the message's tool calls when the caller knows them (none yet, for a new or
    a closing reply), saving the query."""
    if calls is None:
        calls = list(message.tool_calls.all()) if message.pk else []
    if (
        message.role == Message.Role.USER
        and message.turn_id is not None
        and "branch" not in message.__dict__  # the caller knows it (a turn it just started)
    ):
        # An edited or regenerated message shows its branch switcher ("‹ 2/2 ›").
        tree = turn_tree(message.conversation_id)
        message.branch = tree.branch_info(message.turn_id)
    return {
        "type": "message",
        "id": message.pk,
        "role": message.role,
        "state": message.state,
        "version": message.version,
        "html": message_html(message, calls),  # the owner's view: not read-only, not shared
    }


def message_publish(message: Message, *, calls: list[Any] | None = None, wait: bool = True) -> None:
    """``wait=False``: queue the event and go on; what this process publishes later still
    follows it (tokens too: ``token_publish`` goes through the same queue, and in embedded
    mode both are in the receivers' channels when the call returns)."""
    publish([conversation_group(message.conversation_id)], message_event(message, calls), wait=wait)


def conversation_publish(conversation: Conversation) -> None:
    """The sidebar names the conversation live (its first message sets the title)."""
    publish(
        [conversation_group(conversation.pk)],
        {"type": "conversation", "id": conversation.pk, "title": conversation.title},
    )


def turn_event(turn: Turn) -> dict[str, object]:
    return {
        "type": "turn",
        "id": turn.pk,
        "status": turn.status,
        "running": turn.is_running,
        "phase": turn.phase,
        "error": turn.error,
    }


def turn_publish(turn: Turn) -> None:
    publish([conversation_group(turn.conversation_id)], turn_event(turn))


async def token_publish(*, conversation_id: int, message_id: int, offset: int, text: str) -> None:
    await apublish_in_order(
        [conversation_group(conversation_id)],
        {"type": "token", "message_id": message_id, "offset": offset, "text": text},
    )
