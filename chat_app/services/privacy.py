"""A conversation is its owner's. Someone else reads it only with the auditor permission
(``chat_app.audit_conversations``, see ``selectors.may_read_others_conversations``), and each
such read is written to the audit log: who read whose conversation, when, through what."""

from __future__ import annotations

from typing import Any

from chat_app import selectors
from chat_app.models import Conversation
from infra import access


def conversation_read_record(*, user: Any, conversation: Conversation, via: str) -> None:
    """Audit the read when ``user`` is not the owner (an owner's reads are not recorded)."""
    access.conversation_read(user, conversation, via=via)


def conversation_read(*, user: Any, conversation_id: int, via: str) -> Conversation | None:
    """The conversation if ``user`` may read it (None: not theirs, no permission, or gone —
    the same answer, no hint which), with the read audited when it is someone else's."""
    conversation = selectors.conversation_for_viewer(user, conversation_id)
    if conversation is not None:
        conversation_read_record(user=user, conversation=conversation, via=via)
    return conversation
