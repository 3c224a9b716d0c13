"""Reads for the chat: a user's conversations and the state a page (re)loads from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Prefetch, QuerySet
from django.template.loader import render_to_string

from chat_app.agent_kinds import latest_plan_html
from chat_app.models import Conversation, Message, Turn
from tools_app.models import ToolCall
from tools_app.services.audit import AUDIT_CONVERSATIONS_PERMISSION


def conversations_for(user: Any) -> QuerySet[Conversation]:
    return Conversation.objects.filter(owner=user)


SIDEBAR_LIMIT = 300


def sidebar_conversations(user: Any) -> list[Conversation]:
    """The owner's conversations that are not archived, most recent first (pinned ones too:
    the sidebar puts them on top)."""
    mine = conversations_for(user).filter(archived_at__isnull=True)
    return list(mine.only("id", "title", "pinned_at", "updated_at")[:SIDEBAR_LIMIT])


def archived_conversations(user: Any) -> QuerySet[Conversation]:
    return conversations_for(user).filter(archived_at__isnull=False)


def conversation_for(user: Any, conversation_id: int) -> Conversation | None:
    return conversations_for(user).filter(pk=conversation_id).first()


def may_read_others_conversations(user: Any) -> bool:
    """Holds the auditor permission (through a group, or as a superuser). Being staff is not
    enough: a conversation is its owner's."""
    return bool(getattr(user, "is_active", False) and user.has_perm(AUDIT_CONVERSATIONS_PERMISSION))


def conversation_for_viewer(user: Any, conversation_id: int) -> Conversation | None:
    """The owner's conversation; an auditor may also look at anyone's (read-only, and each
    such read is audited: chat_app.services.privacy)."""
    if may_read_others_conversations(user):
        return Conversation.objects.select_related("owner").filter(pk=conversation_id).first()
    return conversation_for(user, conversation_id)


@dataclass(frozen=True)
class BranchInfo:
    """Where a turn stands among its siblings: ``index`` of ``count`` (1-based)."""

    index: int
    count: int
    previous: int | None
    next: int | None


@dataclass
class TurnTree:
    order: list[int]  # every turn, oldest first
    parent: dict[int, int | None]
    path: list[int]  # the shown path, first turn first
    at: dict[int, Any]  # when each was started, or last chosen
    children: dict[int | None, list[int]]  # oldest first; None: the first turns

    def latest_leaf(self, start: int) -> int:
        """From ``start`` down, the child last started or chosen at each step: the branch as
        it was last seen."""
        node = start
        while True:
            children = self.children.get(node)
            if not children:
                return node
            node = max(children, key=lambda t: (self.at[t], t))

    def siblings(self, turn_id: int) -> list[int]:
        return self.children.get(self.parent.get(turn_id), [])

    def branch_info(self, turn_id: int) -> BranchInfo | None:
        siblings = self.siblings(turn_id)
        if len(siblings) < 2:
            return None
        i = siblings.index(turn_id)
        return BranchInfo(
            index=i + 1,
            count=len(siblings),
            previous=siblings[i - 1] if i > 0 else None,
            next=siblings[i + 1] if i + 1 < len(siblings) else None,
        )

    def is_linear(self) -> bool:
        return len(self.path) == len(self.order)


def turn_tree(conversation_id: int) -> TurnTree:
    rows = list(
        Turn.objects.filter(conversation_id=conversation_id)
        .order_by("started_at", "id")
        .values_list("id", "parent_id", "started_at", "chosen_at")
    )
    parent: dict[int, int | None] = {row[0]: row[1] for row in rows}
    children: dict[int | None, list[int]] = {}
    for row in rows:
        children.setdefault(row[1], []).append(row[0])
    path: list[int] = []
    if rows:
        head = max(rows, key=lambda r: (r[3] or r[2], r[0]))[0]  # as turn_head_id
        node: int | None = head
        while node is not None and node not in path:
            path.append(node)
            node = parent.get(node)
        path.reverse()
    return TurnTree(
        order=[r[0] for r in rows],
        parent=parent,
        path=path,
        at={r[0]: r[3] or r[2] for r in rows},
        children=children,
    )


def shown_messages(conversation_id: int, messages: list[Message]) -> list[Message]:
    """``messages`` (of the conversation, in order) on the shown path, each user message of a
    turn with siblings carrying ``branch`` (a BranchInfo) for the switcher."""
    tree = turn_tree(conversation_id)
    on_path = set(tree.path)
    shown = []
    for message in messages:
        if message.turn_id is not None and message.turn_id not in on_path:
            continue
        if message.role == Message.Role.USER and message.turn_id is not None:
            message.branch = tree.branch_info(message.turn_id)  # type: ignore[attr-defined]
        shown.append(message)
    return shown


def conversation_messages(conversation: Conversation) -> list[Message]:
    """The messages of the shown branch (with the switcher's ``branch`` on user messages)."""
    calls = ToolCall.objects.order_by("index", "id")
    messages = list(
        conversation.messages.order_by("created_at", "id").prefetch_related(
            Prefetch("tool_calls", queryset=calls)
        )
    )
    return shown_messages(conversation.pk, messages)


def running_turn(conversation: Conversation) -> Turn | None:
    return conversation.turns.filter(status=Turn.Status.RUNNING).order_by("-id").first()


def conversation_snapshot_for(*, user: Any, conversation_id: int) -> dict[str, Any] | None:
    conversation = conversation_for_viewer(user, conversation_id)
    if conversation is None:
        return None
    return conversation_snapshot(conversation)


def conversation_snapshot(conversation: Conversation) -> dict[str, Any]:
    turn = running_turn(conversation)
    html = render_to_string(
        "chat/page.html#messages", {"messages": conversation_messages(conversation)}
    )
    return {
        "type": "snapshot",
        "conversation_id": conversation.pk,
        "running": turn is not None,
        "waiting": turn is not None and turn.phase == Turn.Phase.CLARIFY,
        "plan_html": latest_plan_html(conversation),
        "turn_id": turn.pk if turn else None,
        "html": html,
    }
