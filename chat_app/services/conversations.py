"""What an owner does to a whole conversation: pin, archive, and the sidebar's date groups."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from django.utils import timezone
from django.utils.formats import date_format
from django.utils.translation import gettext

from chat_app.models import Conversation


def conversation_pin(conversation: Conversation, *, pinned: bool) -> Conversation:
    conversation.pinned_at = timezone.now() if pinned else None
    # Not a touch: pinning must not move the conversation within its date group.
    Conversation.objects.filter(pk=conversation.pk).update(pinned_at=conversation.pinned_at)
    return conversation


def conversation_archive(conversation: Conversation, *, archived: bool) -> Conversation:
    conversation.archived_at = timezone.now() if archived else None
    Conversation.objects.filter(pk=conversation.pk).update(archived_at=conversation.archived_at)
    return conversation


@dataclass
class Group:
    label: str
    conversations: list[Conversation] = field(default_factory=list)


def _group_label(day: date, today: date) -> str:
    age = (today - day).days
    if age <= 0:
        return gettext("Today")
    if age == 1:
        return gettext("Yesterday")
    if age <= 7:
        return gettext("Previous 7 days")
    if age <= 30:
        return gettext("Previous 30 days")
    # The month's name in the page's language ("F": its standalone form).
    return date_format(day, "F Y") if day.year != today.year else date_format(day, "F")


def sidebar_groups(conversations: Any, *, now: datetime | None = None) -> list[Group]:
    """``conversations`` (most recent first) as the sidebar shows them: Pinned, Today,
    Yesterday, Previous 7 days, Previous 30 days, then one group per month."""
    today = timezone.localdate(now or timezone.now())
    pinned = Group(gettext("Pinned"))
    groups: dict[str, Group] = {}
    for conversation in conversations:
        if conversation.pinned_at is not None:
            pinned.conversations.append(conversation)
            continue
        label = _group_label(timezone.localdate(conversation.updated_at), today)
        groups.setdefault(label, Group(label)).conversations.append(conversation)
    pinned.conversations.sort(key=lambda c: c.pinned_at or c.updated_at, reverse=True)
    return ([pinned] if pinned.conversations else []) + list(groups.values())
