"""Branches of a conversation: edit-and-resend, regenerate, and which answer is shown.

Turns form a tree (``Turn.parent``). Editing a message or regenerating an answer starts a new
turn beside the old one (same parent); nothing is deleted. The conversation shows — and the
model reads (``chat_app.services.history``) — one path: from the head (the turn latest started,
or the end of the branch a person last switched to) back to the first turn. Messages without a
turn (a subagent's answer, a notice, a message sent by a tool) belong to every branch.
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from django.utils.translation import gettext as _

from chat_app import selectors
from chat_app.models import Conversation, Message, Turn
from chat_app.services.turns import TurnError, _owned_conversation, turn_start
from infra.events import conversation_group, publish


def conversation_snapshot_publish(conversation: Conversation) -> None:
    """Every page on the conversation redraws it: the shown path changed."""
    publish([conversation_group(conversation.pk)], selectors.conversation_snapshot(conversation))


def _turn_of(user: Any, conversation_id: int, turn_id: Any) -> Turn:
    conversation = _owned_conversation(user, conversation_id)
    if not isinstance(turn_id, int) or isinstance(turn_id, bool):
        raise TurnError(_("'turn_id' must be a number"))
    turn = Turn.objects.filter(pk=turn_id, conversation=conversation).first()
    if turn is None:  # another conversation's turn, or none: the same answer
        raise TurnError(_("that message is not in this conversation"))
    turn.conversation = conversation
    return turn


def _idle(turn: Turn) -> None:
    # A turn waiting for clarification would take the text as its answer: not a branch.
    if turn.conversation.turns.filter(status=Turn.Status.RUNNING).exists():
        raise TurnError(_("the agent is still working on the previous message; press Stop first"))


def _first_message(turn: Turn) -> Message:
    message = turn.messages.filter(role=Message.Role.USER).order_by("created_at", "id").first()
    if message is None:
        raise TurnError(_("that turn has no message of yours to send again"))
    return message


def turn_regenerate(*, user: Any, conversation_id: int, turn_id: Any) -> Turn | None:
    """A new answer to the same message: a sibling turn (same text, origin, model and tool
    scope); the old answer stays reachable as a branch."""
    turn = _turn_of(user, conversation_id, turn_id)
    _idle(turn)
    message = _first_message(turn)
    new = turn_start(
        conversation=turn.conversation,
        user_id=turn.conversation.owner_id,
        text=message.content,
        model=turn.model,
        origin=message.origin,
        scope=turn.tool_scope,
        branch_of=turn,
    )
    conversation_snapshot_publish(turn.conversation)
    return new


def turn_edit(*, user: Any, conversation_id: int, turn_id: Any, text: Any) -> Turn | None:
    """Send an edited version of a message: a sibling turn from the new text, the person's
    own (whatever wrote the first version)."""
    if not isinstance(text, str):
        raise TurnError(_("'text' must be a string"))
    turn = _turn_of(user, conversation_id, turn_id)
    _idle(turn)
    _first_message(turn)
    new = turn_start(
        conversation=turn.conversation,
        user_id=turn.conversation.owner_id,
        text=text,
        branch_of=turn,
    )
    conversation_snapshot_publish(turn.conversation)
    return new


def branch_choose(*, user: Any, conversation_id: int, turn_id: Any) -> None:
    """Show the branch through ``turn_id`` (a switcher's ‹ or ›): its latest turn becomes the
    head. Not while a turn runs: the running turn is on the shown path."""
    turn = _turn_of(user, conversation_id, turn_id)
    _idle(turn)
    tree = selectors.turn_tree(conversation_id)
    leaf = tree.latest_leaf(turn.pk)
    Turn.objects.filter(pk=leaf).update(chosen_at=timezone.now())
    conversation_snapshot_publish(turn.conversation)
