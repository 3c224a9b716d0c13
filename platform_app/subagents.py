"""Subagents: a task handed to a helper that runs as its own turn in a child conversation.

``subagent_spawn`` creates the child conversation, stores the task as its first message and
queues the turn exactly as the chat does (``turns.turn_start``), then returns: nothing waits
for the child. When the child's turn ends, ``turns.turn_finish`` sends ``turn_finished``;
``subagent_turn_finished`` (connected in ``platform_app.apps``) claims the subagent with
a conditional UPDATE (so its answer is delivered once) and posts the answer into
``inject_into`` (the parent conversation when the spawn said "parent") as a message the model
reads as input. A parent turn that is still running sees it in its next round's history; a
finished one, in the next turn. As seed 002 has it, a null ``inject_into`` only logs the
answer (on the Subagent row, and in the helper's own conversation), and a helper that answers
``{"silent": true, "reason": "..."}`` is not posted anywhere: nobody gets an empty
notification.

Depth: a conversation that is not a subagent's is depth 0; a subagent spawned from depth d is
at d + 1, and the Subagents group's ``max_depth`` (at most 2) bounds it. ``max_concurrent`` is
checked in the transaction that creates the subagent, one spawn of a user at a time, so
spawns racing each other cannot pass it together.

Context by name (seed 002): a helper spawned again under a name it had before in the same
conversation starts with the last ``CONTEXT_MESSAGES`` messages of its previous conversation
(copied in, so each helper conversation stays its own), not from nothing. It never sees the
parent conversation. It reads the user's core memory but cannot change it
(``platform_app.executors.memory.tools.refuse_core_writes_from_a_helper``).

Stop: Stop on a turn sends ``turn_stopping``; ``subagent_parent_stopping`` (connected in
``platform_app.apps``) stops the running subagents that turn started, and theirs stop in
turn. A spawn that was still running when Stop came stops its helper as soon as it exists.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from platform_app.models import Subagent
from tools_app.errors import PolicyDenied, ToolError

logger = logging.getLogger(__name__)

HARD_MAX_DEPTH = 2
CONTEXT_MESSAGES = 5  # seed 002: "last 5 messages from its own isolated history"
# Appended to the helper's task: how to say there is nothing to report (seed 002).
SILENT_NOTE = (
    "\n\n(You are a subagent. If you find nothing worth reporting, answer with exactly "
    '{"silent": true, "reason": "<why, in a few words>"} and nothing else: then nobody is '
    "notified.)"
)
_FENCED = re.compile(r"^```(?:json)?\s*(?P<body>.*?)\s*```$", re.DOTALL)


def silent_reason(answer: str) -> str | None:
    """The reason of a silent answer (``{"silent": true, "reason": "..."}``, fenced or not),
    or None when the answer is something to report."""
    text = answer.strip()
    fenced = _FENCED.match(text)
    if fenced:
        text = fenced.group("body")
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(value, dict) or value.get("silent") is not True:
        return None
    return str(value.get("reason") or "nothing to report")[:2000]


def conversation_depth(conversation_id: int | None) -> int:
    if conversation_id is None:
        return 0
    depth = (
        Subagent.objects.filter(conversation_id=conversation_id)
        .values_list("depth", flat=True)
        .first()
    )
    return int(depth or 0)


def limits_check(
    *, user_id: int, conversation_id: int | None, max_depth: int, max_concurrent: int
) -> int:
    """The depth the new subagent would have; PolicyDenied past a limit."""
    depth = conversation_depth(conversation_id) + 1
    limit = min(max_depth, HARD_MAX_DEPTH)
    if depth > limit:
        raise PolicyDenied(
            f"subagents nest at most {limit} deep and this conversation is already at depth "
            f"{depth - 1}; do the task here instead"
        )
    running = Subagent.objects.filter(user_id=user_id, status=Subagent.Status.RUNNING).count()
    if running >= max_concurrent:
        raise PolicyDenied(
            f"{running} subagent(s) of yours are running; the limit is {max_concurrent} at "
            "once — wait for one to finish"
        )
    return depth


@dataclass
class Spawn:
    name: str
    message: str
    model: str = ""
    inject_into: int | None = None


def subagent_spawn(
    *,
    user_id: int,
    spec: Spawn,
    parent_conversation_id: int | None,
    parent_call_id: int | None,
    max_depth: int,
    max_concurrent: int,
    max_rounds: int,
    scope: list[str] | None = None,
) -> Subagent:
    """Create the child conversation and queue its turn; returns at once. ``scope``: the tool
    list of the spawning call; the helper's turn binds every call within it."""
    from chat_app.models import Conversation, Message, Turn
    from chat_app.services.turns import TurnError, turn_start, turn_stop
    from tools_app.models import ToolCall

    parent = (
        Conversation.objects.filter(pk=parent_conversation_id).first()
        if parent_conversation_id is not None
        else None
    )
    parent_turn_id = (
        ToolCall.objects.filter(pk=parent_call_id).values_list("turn_id", flat=True).first()
        if parent_call_id is not None
        else None
    )
    with transaction.atomic():
        _one_spawn_at_a_time(user_id)
        depth = limits_check(
            user_id=user_id,
            conversation_id=parent_conversation_id,
            max_depth=max_depth,
            max_concurrent=max_concurrent,
        )
        child = Conversation.objects.create(
            owner_id=user_id,
            title=f"Subagent: {spec.name}"[:200],
            agent_id=parent.agent_id if parent else None,
            provider_id=parent.provider_id if parent else None,
        )
        subagent = Subagent.objects.create(
            user_id=user_id,
            name=spec.name,
            message=spec.message,
            model=spec.model,
            depth=depth,
            parent_conversation=parent,
            parent_turn_id=parent_turn_id,
            parent_call_id=parent_call_id,
            inject_into_id=spec.inject_into,
            conversation=child,
        )
        if parent is not None:
            _carry_context(subagent)
        try:
            turn = turn_start(
                conversation=child,
                user_id=user_id,
                # A slash command runs as written, with no model to tell anything.
                text=spec.message
                if spec.message.lstrip().startswith("/")
                else spec.message + SILENT_NOTE,
                model=spec.model,
                max_rounds=max_rounds,
                origin=Message.Origin.TASK,
                source=Turn.Source.SUBAGENT,
                scope=scope,
            )
        except TurnError as exc:
            raise ToolError(f"the subagent could not start: {exc}") from exc
        if turn is not None:
            Subagent.objects.filter(pk=subagent.pk).update(turn=turn)
            subagent.turn = turn
    # The round is queued when the transaction commits; a turn that ended already (a slash
    # command refused at once) is delivered here, since the hook could not find it then. Its
    # status is read back: the turn ended through another copy of the row.
    ended = (
        Turn.objects.filter(pk=turn.pk)
        .exclude(status=Turn.Status.RUNNING)
        .values_list("status", flat=True)
        .first()
        if turn is not None
        else Subagent.Status.FAILED
    )
    if ended is not None:
        subagent_deliver(subagent.pk, turn_status=ended)
    elif (
        turn is not None
        and parent_turn_id is not None
        and Turn.objects.filter(pk=parent_turn_id, cancel_requested=True).exists()
    ):
        # Stop came while this call was running, before the helper existed.
        turn_stop(turn=turn)
    return subagent


def _carry_context(subagent: Subagent) -> int:
    """Copy the last messages of the previous helper of this name in this conversation into
    the new one's (seed 002); the number copied."""
    from chat_app.models import Message

    previous = (
        Subagent.objects.filter(
            user_id=subagent.user_id,
            name=subagent.name,
            parent_conversation_id=subagent.parent_conversation_id,
        )
        .exclude(pk=subagent.pk)
        .order_by("-pk")
        .values_list("conversation_id", flat=True)
        .first()
    )
    if previous is None:
        return 0
    last = list(
        Message.objects.filter(
            conversation_id=previous,
            role__in=(Message.Role.USER, Message.Role.ASSISTANT),
            state=Message.State.COMPLETE,
        )
        .exclude(content="")
        .order_by("-created_at", "-id")[:CONTEXT_MESSAGES]
    )
    # No turn: messages of no turn belong to every branch of the new conversation.
    Message.objects.bulk_create(
        Message(
            conversation_id=subagent.conversation_id,
            role=m.role,
            origin=m.origin,
            content=m.content,
        )
        for m in reversed(last)
    )
    return len(last)


def _one_spawn_at_a_time(user_id: int) -> None:
    """Hold the user's other spawns until this transaction ends. PostgreSQL: the user's row,
    ``FOR NO KEY UPDATE`` (rows that merely reference the user are not held up). SQLite:
    nothing to do, its immediate transactions already take the writers one at a time."""
    from django.contrib.auth import get_user_model

    list(get_user_model().objects.select_for_update(no_key=True).filter(pk=user_id).only("pk"))


def subagent_describe(subagent: Subagent) -> dict[str, Any]:
    return {
        "name": subagent.name,
        "status": subagent.status,
        "depth": subagent.depth,
        "conversation_id": subagent.conversation_id,
        "conversation_url": f"/c/{subagent.conversation_id}/",
        # None: the answer is only logged (kept on the subagent and in its conversation).
        "result_to": subagent.inject_into_id,
    }


# --- the hook: the child's turn ended -------------------------------------------------------


def subagent_turn_finished(sender: object, turn: Any, **kwargs: object) -> None:
    """``turn_finished`` receiver: one indexed SELECT for a subagent's turn, none for others."""
    if getattr(turn, "source", None) != "subagent":  # Turn.Source.SUBAGENT
        return
    subagent_id = (
        Subagent.objects.filter(turn_id=turn.pk, status=Subagent.Status.RUNNING)
        .values_list("pk", flat=True)
        .first()
    )
    if subagent_id is not None:
        subagent_deliver(subagent_id, turn_status=turn.status)


def subagent_parent_stopping(sender: object, turn: Any, **kwargs: object) -> None:
    """``turn_stopping`` receiver: the running subagents ``turn`` started stop with it."""
    from chat_app.models import Turn
    from chat_app.services.turns import turn_stop

    started = Subagent.objects.filter(parent_turn_id=turn.pk, status=Subagent.Status.RUNNING)
    for child in Turn.objects.filter(pk__in=started.values("turn_id"), status=Turn.Status.RUNNING):
        try:
            turn_stop(turn=child)
        except Exception:  # one helper that cannot be stopped must not keep the others going
            logger.exception("turn %s: could not stop its subagent's turn %s", turn.pk, child.pk)


def subagent_deliver(subagent_id: int, *, turn_status: str) -> bool:
    """Claim the finished subagent and post its answer; False if someone else did."""
    from chat_app.events import conversation_publish, message_publish
    from chat_app.models import Conversation, Message
    from tools_app import selectors

    status = turn_status if turn_status in Subagent.Status.values else "failed"
    if status == Subagent.Status.RUNNING:
        return False
    claimed = Subagent.objects.filter(pk=subagent_id, status=Subagent.Status.RUNNING).update(
        status=status, finished_at=timezone.now()
    )
    if not claimed:
        return False
    subagent = Subagent.objects.get(pk=subagent_id)
    settings = selectors.group_settings("subagents")
    limit = int(getattr(settings, "max_result_chars", 8000))
    answer = _answer(subagent)
    reason = silent_reason(answer) if status == Subagent.Status.SUCCEEDED else None
    if reason is not None:
        Subagent.objects.filter(pk=subagent_id).update(result=reason, silent=True)
        logger.info(
            "subagent %s (%s) had nothing to report: %s", subagent_id, subagent.name, reason
        )
        return True
    if len(answer) > limit:
        cut = f"[cut at {limit:,} characters; the rest is in its conversation]"
        answer = f"{answer[:limit]}\n\n{cut}"
    Subagent.objects.filter(pk=subagent_id).update(result=answer)
    target = subagent.inject_into_id
    if target is None:
        logger.info(
            "subagent %s (%s) %s; its answer is only logged", subagent_id, subagent.name, status
        )
        return True
    if not Conversation.objects.filter(pk=target).exists():
        return True
    word = {"succeeded": "finished"}.get(status, f"ended ({Subagent.Status(status).label})")
    content = (
        f"**Subagent “{subagent.name}” {word}** — "
        f"[its conversation](/c/{subagent.conversation_id}/)\n\n{answer}"
    )
    with transaction.atomic():
        message = Message.objects.create(
            conversation_id=target,
            role=Message.Role.USER,
            origin=Message.Origin.SUBAGENT,
            content=content,
        )
        Subagent.objects.filter(pk=subagent_id).update(delivered_to=message)
        Conversation.objects.filter(pk=target).update(updated_at=timezone.now())
    message_publish(message, calls=[])
    conversation = Conversation.objects.filter(pk=target).first()
    if conversation is not None:
        conversation_publish(conversation)
    return True


def _answer(subagent: Subagent) -> str:
    from chat_app.models import Message

    if subagent.turn_id is None:
        return "(the subagent did not start)"
    replies = Message.objects.filter(turn_id=subagent.turn_id, role=Message.Role.ASSISTANT).exclude(
        content=""
    )
    last = replies.order_by("-created_at", "-id").first()
    text = last.content.strip() if last is not None else ""
    if subagent.status != Subagent.Status.SUCCEEDED:
        from chat_app.models import Turn

        error = Turn.objects.filter(pk=subagent.turn_id).values_list("error", flat=True).first()
        detail = f"It ended as {subagent.status}" + (f": {error}" if error else "") + "."
        return f"{detail}\n\n{text}".strip() if text else detail
    return text or "(the subagent gave no answer)"
