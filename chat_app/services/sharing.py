"""Read-only share links: the owner's explicit consent to let signed-in people of this
instance read one conversation, with or without its tool calls. A link is an unguessable
token; revoking it (or deleting the conversation) ends it for good."""

from __future__ import annotations

import secrets

from django.utils import timezone

from chat_app.models import Conversation, ConversationShare


def share_active(conversation: Conversation) -> ConversationShare | None:
    return conversation.shares.filter(revoked_at__isnull=True).first()


def share_create(conversation: Conversation, *, include_tools: bool) -> ConversationShare:
    """A new link (a conversation has at most one: any previous one is revoked)."""
    share_revoke(conversation)
    return ConversationShare.objects.create(
        conversation=conversation, token=secrets.token_urlsafe(32), include_tools=include_tools
    )


def share_revoke(conversation: Conversation) -> int:
    return conversation.shares.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())


def share_for_token(token: str) -> ConversationShare | None:
    """The live share of ``token`` (None: unknown, revoked, or its conversation deleted)."""
    if not token or len(token) > 64:
        return None
    return (
        ConversationShare.objects.select_related("conversation", "conversation__owner")
        .filter(token=token, revoked_at__isnull=True)
        .first()
    )
