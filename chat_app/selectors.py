"""Reads for the chat: a user's conversations and the state a page (re)loads from."""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch, Q, QuerySet, Subquery
from django.template.loader import render_to_string

from chat_app.agent_kinds import turn_plan_html
from chat_app.models import Conversation, Message, Provider, Turn
from chat_app.turn_tree import BranchInfo, TurnTree, turn_tree  # noqa: F401  (re-exported)
from infra import access
from infra.prepared import Prepared
from tools_app.models import ToolCall


def conversations_for(user: Any) -> QuerySet[Conversation]:
    return Conversation.objects.filter(owner=user)


SIDEBAR_LIMIT = 300


_SIDEBAR = Prepared(
    lambda owner_id, source: Conversation.objects.filter(
        owner_id=owner_id, archived_at__isnull=True, source=source
    ).only("id", "title", "pinned_at", "updated_at")[:SIDEBAR_LIMIT],
    owner_id=int,
    source=str,
)


def sidebar_conversations(user: Any, source: str = Conversation.Source.CHAT) -> list[Conversation]:
    """The owner's conversations from ``source`` (the chat, or the API: the sidebar's two
    lists) that are not archived, most recent first (pinned ones too: the sidebar puts them
    on top)."""
    if getattr(user, "pk", None) is None:
        return []
    return _SIDEBAR.rows(owner_id=user.pk, source=source)


_HAS_SOURCE = Prepared(
    lambda owner_id, source: (
        conversations_for(owner_id)
        .filter(source=source)
        .order_by()
        .values_list("pk", flat=True)[:1]
    ),
    owner_id=int,
    source=str,
)


def has_api_conversations(user: Any) -> bool:
    """Whether the sidebar shows its API list's tab."""
    return bool(_HAS_SOURCE.rows(owner_id=int(user.pk), source=Conversation.Source.API))


def latest_conversation(user: Any, source: str = Conversation.Source.CHAT) -> Conversation | None:
    """The owner's most recent conversation from ``source`` that is not archived."""
    return conversations_for(user).filter(archived_at__isnull=True, source=source).first()


def archived_conversations(user: Any) -> QuerySet[Conversation]:
    return conversations_for(user).filter(archived_at__isnull=False)


# The page and the websocket read these on every load: compiled once (infra.prepared).
_OWN = Prepared(
    lambda owner_id, pk: Conversation.objects.filter(owner_id=owner_id, pk=pk).order_by("pk")[:1],
    owner_id=int,
    pk=int,
)


def conversation_for(user: Any, conversation_id: int) -> Conversation | None:
    if getattr(user, "pk", None) is None:
        return None
    return _OWN.one(owner_id=user.pk, pk=conversation_id)


def may_read_others_conversations(user: Any) -> bool:
    """Holds the auditor permission (through a group, or as a superuser). Being staff is not
    enough: a conversation is its owner's."""
    return access.auditor(user)


def conversation_for_viewer(user: Any, conversation_id: int) -> Conversation | None:
    """The owner's conversation; an auditor may also look at anyone's (read-only, and each
    such read is audited: chat_app.services.privacy)."""
    own = conversation_for(user, conversation_id)
    if own is not None or not may_read_others_conversations(user):
        return own  # the owner's first: no permission lookup for the common case
    return Conversation.objects.select_related("owner").filter(pk=conversation_id).first()


def shown_messages(conversation_id: int, messages: list[Message]) -> list[Message]:
    """``messages`` (of the conversation, in order) on the shown path, each user message of a
    turn with siblings carrying ``branch`` (a BranchInfo) for the switcher."""
    if not any(message.turn_id is not None for message in messages):
        return messages  # no turn (a new conversation): every message is on the path
    tree = turn_tree(conversation_id)
    on_path = set(tree.path)
    shown = []
    for message in messages:
        if message.turn_id is not None and message.turn_id not in on_path:
            continue
        if message.role == Message.Role.USER and message.turn_id is not None:
            message.branch = tree.branch_info(message.turn_id)
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


def _turn_state(conversation_id: int) -> QuerySet[Turn]:
    latest_id = Turn.objects.filter(conversation_id=conversation_id).order_by("-id").values("pk")
    return Turn.objects.filter(
        Q(status=Turn.Status.RUNNING) | Q(pk=Subquery(latest_id[:1])),
        conversation_id=conversation_id,
    ).order_by("-id")


_TURN_STATE = Prepared(_turn_state, conversation_id=int)


def turn_state(conversation: Conversation) -> tuple[Turn | None, Turn | None]:
    """(the running turn, the latest turn) in one read: what the page and the websocket's
    snapshot show (the spinner, the plan checklist)."""
    turns = _TURN_STATE.rows(conversation_id=conversation.pk)
    running = next((t for t in turns if t.status == Turn.Status.RUNNING), None)
    return running, (turns[0] if turns else None)


def turn_waiting(turn: Turn | None) -> bool:
    """Is ``turn`` (the running one) waiting for the person's answer to a clarification?"""
    return turn is not None and turn.phase == Turn.Phase.CLARIFY


def conversation_snapshot(conversation: Conversation) -> dict[str, Any]:
    turn, latest = turn_state(conversation)
    html = render_to_string(
        "chat/page.html#messages", {"messages": conversation_messages(conversation)}
    )
    return {
        "type": "snapshot",
        "conversation_id": conversation.pk,
        "running": turn is not None,
        "waiting": turn_waiting(turn),
        "plan_html": turn_plan_html(conversation, latest),
        "turn_id": turn.pk if turn else None,
        "html": html,
    }


def provider_kinds_configured() -> list[str]:
    """The kinds of LLM provider the admins configured (OpenAI's, the default, when none is
    yet): those whose SDK a runner imports ahead of its first round."""
    kinds = set(Provider.objects.values_list("kind", flat=True).distinct())
    return sorted(kinds & set(Provider.Kind.values)) or [Provider.Kind.OPENAI.value]
