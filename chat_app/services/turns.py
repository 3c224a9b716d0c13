"""Turns: start one, stop one, move it on when its tool calls finish, finish it once.

A chat turn is a small state machine stored on the Turn row (``phase``), so no Celery task
ever waits for another: ``agent_round`` streams one model reply and dispatches its tool calls;
the tool call that finishes last moves the turn back to ``model`` and queues the next round.
Every transition is a conditional UPDATE, so concurrent finishers cannot run a round twice.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import Exists, Q
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from chat_app.agent_kinds import FINAL_ANSWER, kind_for_conversation, kind_for_turn
from chat_app.events import conversation_publish, message_publish, turn_publish
from chat_app.models import Conversation, Message, Turn
from chat_app.services.agents import agent_for_conversation
from chat_app.services.slash import slash_run
from chat_app.services.titles import DEFAULT_TITLE, title_from
from chat_app.services.uploads import clean_attachments
from chat_app.signals import turn_finished, turn_stopping
from chat_app.turn_tree import Running, TurnTree, turn_tree, turn_tree_and_running
from infra import access, metrics, tracing
from infra.celery_app import app as celery_app
from infra.prepared import Prepared
from tools_app import selectors
from tools_app.models import ToolCall
from tools_app.services.execution import toolcall_cancel

logger = logging.getLogger(__name__)


class TurnError(Exception):
    """A person asked for something a turn cannot do right now (clear words in ``args[0]``)."""


AGENT_ROUND_TASK = "chat_app.tasks.agent_round"


# An agent runner living in this process (embedded mode) registers itself here: it takes a
# round directly while it has a free slot (the in-memory queue would only serialize the turn
# id and hand it back to the same process). Registered rather than imported, so the turn
# services do not depend on the runner that depends on them.
_local_runner: Callable[[int], bool] | None = None


def round_handoff_set(take: Callable[[int], bool] | None) -> None:
    """``take(turn_id)`` returns True when the in-process runner took the round."""
    global _local_runner
    _local_runner = take


def round_send(turn_id: int) -> None:
    """Put a round on the ``agent`` queue (Celery's message, sent by name: the agent runner
    consumes it, and so would a plain Celery worker told to), unless a runner in this process
    takes it first (``round_handoff_set``)."""
    take = _local_runner
    if take is not None and take(turn_id):
        return
    try:
        celery_app.send_task(AGENT_ROUND_TASK, (turn_id,), queue="agent")
    except Exception as exc:  # the reaper queues it again once the broker is back
        logger.warning(
            "turn %s: the broker is unreachable (%s); the round stays queued", turn_id, exc
        )


def _queue_round(turn_id: int) -> None:
    transaction.on_commit(lambda: round_send(turn_id))


def turn_start(
    *,
    conversation: Conversation,
    user_id: int,
    text: str,
    model: str = "",
    max_rounds: int | None = None,
    origin: str = "",
    source: str = Turn.Source.CHAT,
    scope: list[str] | None = None,
    branch_of: Turn | None = None,
    attachments: list[dict[str, Any]] | None = None,
    schedule_id: int | None = None,
) -> Turn | None:
    """Store the user's message and queue the turn's first round. ``branch_of``: a turn this
    one stands beside (an edited or regenerated message, chat_app.services.branches).
    ``model``, ``max_rounds``,
    ``origin`` and ``scope`` are for turns the platform starts (a schedule firing, a
    subagent): ``scope`` is the tool list of the call that started it (``ToolCall.scope``),
    which every call of the turn binds within, a ``/`` message's included. ``source``: what
    started the turn (``Turn.Source``), kept on the turn for the audit and usage figures.
    ``schedule_id``: the schedule firing it, kept on the turn before any of its calls binds."""
    text = text.strip()
    if not text:
        raise TurnError(_("the message is empty"))
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > settings.CHAT_MAX_MESSAGE_BYTES:
        raise TurnError(
            _("the message is too large: %(size)s KB (the limit is %(limit)s KB)")
            % {"size": size // 1024, "limit": settings.CHAT_MAX_MESSAGE_BYTES // 1024}
        )
    if "\x00" in text or _has_lone_surrogate(text):
        raise TurnError(
            _("the message contains characters that cannot be stored (NUL or a lone surrogate)")
        )
    # At most one turn of a conversation runs. A message for the model reads the tree of
    # turns anyway (its turn's parent): one read tells both.
    tree: TurnTree | None = None
    if text.startswith("/"):
        running = _running(conversation)
    else:
        tree, running = turn_tree_and_running(conversation.pk)
    # A turn waiting for the person's answer goes on with this message.
    if running is not None and running.phase == Turn.Phase.CLARIFY:
        waiting = Turn.objects.filter(pk=running.id, status=Turn.Status.RUNNING).first()
        if waiting is not None and kind_for_conversation(conversation).resume(
            turn=waiting, text=text
        ):
            conversation_touch(conversation)
            return waiting
        running = _running(conversation)
        tree = None  # the resume may have changed it
    if running is not None:
        raise TurnError(_("the agent is still working on the previous message; press Stop first"))
    language_changed = False
    if source == Turn.Source.CHAT:
        # A person wrote (the chat page): the conversation follows their language from now on
        # (stored with the turn's own update of the conversation, below).
        language = translation.get_language() or ""
        if language and language != conversation.language:
            conversation.language = language
            language_changed = True
    trace = tracing.turn_context_new()  # '' unless tracing is on
    with tracing.span("turn start", parent=trace, attributes={"cc.turn.source": source}):
        return _turn_start(
            conversation=conversation,
            user_id=user_id,
            text=text,
            model=model,
            max_rounds=max_rounds,
            origin=origin,
            source=source,
            scope=scope,
            branch_of=branch_of,
            attachments=attachments,
            trace=trace,
            schedule_id=schedule_id,
            language_changed=language_changed,
            tree=tree,
        )


def _running(conversation: Conversation) -> Running | None:
    """The conversation's running turn (one unordered query), when the tree is not read."""
    found = conversation.turns.filter(status=Turn.Status.RUNNING).order_by()[:1]
    return next((Running(t.pk, t.phase) for t in found), None)


def _turn_start(
    *,
    conversation: Conversation,
    user_id: int,
    text: str,
    model: str,
    max_rounds: int | None,
    origin: str,
    source: str,
    scope: list[str] | None,
    branch_of: Turn | None,
    attachments: list[dict[str, Any]] | None,
    trace: str,
    schedule_id: int | None = None,
    language_changed: bool = False,
    tree: TurnTree | None = None,
) -> Turn | None:
    if text.startswith("/"):
        slashed, dispatched = slash_run(
            conversation=conversation,
            user_id=user_id,
            text=text,
            origin=origin,
            source=source,
            scope=scope,
            branch_of=branch_of,
            trace=trace,
            schedule_id=schedule_id,
        )
        # A slash-only conversation is named after its first command.
        if conversation_touch(conversation, first_text=text, language=language_changed):
            conversation_publish(conversation)
        # A call refused at binding ends the turn now. A dispatched one is left to its worker,
        # which ends the turn only once the call's finished card is sent: ended from here
        # meanwhile, the turn's end could reach the page (and an API client following the
        # turn) before the card.
        if slashed is not None and not dispatched:
            turn_advance(slashed.pk)
        return slashed
    with selectors.config_pinned():  # the profile from memory while the token stands
        agent = agent_for_conversation(conversation)
    turn = Turn(
        conversation=conversation,
        user_id=user_id,
        kind=Turn.Kind.CHAT,
        source=source,
        max_rounds=max_rounds or agent.max_rounds or settings.AGENT_MAX_ROUNDS,
        model=model,
        tool_scope=scope,
        schedule_id=schedule_id,
        heartbeat_at=timezone.now(),  # queued at
        trace_context=trace,
    )
    # One read of the tree (the caller's, when it read it): the new turn's parent (the head,
    # unless it is a branch) and the branch switcher its message shows.
    tree = tree if tree is not None else turn_tree(conversation.pk)
    if branch_of is not None:
        turn.branch_from(branch_of)
    else:
        turn.parent_id = tree.head()
        turn._root = turn.parent_id is None  # type: ignore[attr-defined]
    message = Message(
        conversation=conversation,
        role=Message.Role.USER,
        content=text,
        origin=origin,
        attachments=attachments or [],
    )
    with transaction.atomic():
        turn.save()
        message.turn = turn
        message.save()
        titled = conversation_touch(conversation, first_text=text, language=language_changed)
    message.branch = tree.branch_info_added(turn.pk, turn.parent_id)
    # The person's message goes out before the round is queued: whatever the round publishes
    # (its reply, a refused call's card) must follow it on the page.
    message_publish(message, calls=[])
    _queue_round(turn.pk)
    if titled:
        conversation_publish(conversation)
    turn_publish(turn)
    return turn


def _has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def conversation_language(conversation: Conversation) -> str:
    """The language its notices are written in: that of the person who last wrote in it."""
    return conversation.language or settings.LANGUAGE_CODE


def conversation_touch(
    conversation: Conversation, *, first_text: str = "", language: bool = False
) -> bool:
    """Bump the conversation; its first message names it; ``language``: its (changed)
    ``language`` is stored too. True when the title changed."""
    fields = ["updated_at", "language"] if language else ["updated_at"]
    title = title_from(first_text) if first_text and conversation.title == DEFAULT_TITLE else ""
    if title:
        conversation.title = title
        fields.append("title")
    if fields == ["updated_at"]:  # every message but a conversation's first: one statement
        conversation.updated_at = timezone.now()  # what ``auto_now`` sets on a save
        with transaction.mark_for_rollback_on_error():  # as a save marks its block
            if not _TOUCH.update(pk=conversation.pk, updated_at=conversation.updated_at):
                raise DatabaseError("Save with update_fields did not affect any rows.")
        return False
    conversation.save(update_fields=fields)
    return "title" in fields


# The bump of a conversation (compiled once per process, ``infra.prepared``). Conversation has
# no ``save()`` override and no receiver of its saves.
_TOUCH = Prepared(
    lambda pk, updated_at: (Conversation.objects.filter(pk=pk), {"updated_at": updated_at}),
    pk=int,
    updated_at=dt.datetime,
)


_FINISH = Prepared(
    lambda pk, status, finished_at, error: (
        Turn.objects.filter(pk=pk, status=Turn.Status.RUNNING),
        {"status": status, "phase": Turn.Phase.DONE, "finished_at": finished_at, "error": error},
    ),
    pk=int,
    status=str,
    finished_at=dt.datetime,
    error=str,
)


def turn_finish(turn: Turn, *, status: str, error: str = "", notice: str = "") -> bool:
    """Finish a running turn exactly once; optionally leave a notice for the person."""
    finished_at = timezone.now()
    with transaction.atomic():
        done = _FINISH.update(pk=turn.pk, status=status, finished_at=finished_at, error=error)
        if not done:
            return False
        message = None
        if notice:  # written with the status, so whoever sees the turn finished sees it too
            message = Message.objects.create(
                conversation_id=turn.conversation_id,
                turn=turn,
                role=Message.Role.NOTICE,
                content=notice,
            )
    # What this UPDATE wrote, without reading the row back: only it ends a turn.
    turn.status, turn.phase, turn.finished_at, turn.error = (
        status,
        Turn.Phase.DONE,
        finished_at,
        error,
    )
    _turn_ended(turn)
    if message is not None:
        message_publish(message, calls=[])
    turn_publish(turn)
    # HOOK (platform tools): a finished subagent posts its answer into its parent conversation
    # (platform_app.subagents); receivers never break the turn-ending path.
    for receiver, result in turn_finished.send_robust(sender=Turn, turn=turn):
        if isinstance(result, Exception):
            logger.error("turn %s: %r failed", turn.pk, receiver, exc_info=result)
    return True


def _turn_ended(turn: Turn) -> None:
    """Count the turn, and end its span (here, whichever process ended it)."""
    metrics.TURNS.labels(turn.status, turn.source).inc()
    if turn.trace_context:
        tracing.turn_span_end(
            turn.trace_context,
            started_at=turn.started_at.timestamp(),
            attributes={
                "cc.turn.id": turn.pk,
                "cc.turn.status": turn.status,
                "cc.turn.source": turn.source,
                "cc.turn.kind": turn.kind,
                "cc.turn.tool_rounds": turn.round,
                "cc.conversation.id": turn.conversation_id,
            },
            error=turn.error if turn.status == Turn.Status.FAILED else "",
        )


def turn_stop(*, turn: Turn) -> None:
    """Stop: cancel the model stream (the round notices within ~0.2 s), cancel pending calls
    and kill running ones. The turn finishes as cancelled when nothing is left running."""
    Turn.objects.filter(pk=turn.pk, status=Turn.Status.RUNNING).update(cancel_requested=True)
    turn.refresh_from_db()
    if not turn.is_running:
        return
    kind_for_turn(turn).stop(turn)
    for call in turn.tool_calls.exclude(status__in=ToolCall.TERMINAL):
        toolcall_cancel(call)
    # HOOK (platform tools): the subagents this turn started stop with it.
    for receiver, result in turn_stopping.send_robust(sender=Turn, turn=turn):
        if isinstance(result, Exception):
            logger.error("turn %s: %r failed", turn.pk, receiver, exc_info=result)
    # A round that is queued but not yet streaming will never notice: finish it here.
    if Turn.objects.filter(pk=turn.pk, status=Turn.Status.RUNNING, phase=Turn.Phase.MODEL).exists():
        turn_finish(turn, status=Turn.Status.CANCELLED)
    else:
        turn_advance(turn.pk)


def turn_advance(turn_id: int) -> None:
    """Called whenever a tool call of the turn finishes: when none is left unfinished, finish
    a slash/cancelled turn or queue the next model round."""
    if _back_to_model(turn_id):
        _queue_round(turn_id)
        return
    # Otherwise look closer (a call still running, Stop, a slash command, final_answer, or
    # nothing to do). get(), not first(): an ORDER BY makes Django's compiler hash every
    # selected column, which costs more than the query itself on this hot path.
    try:
        turn = Turn.objects.get(pk=turn_id)
    except Turn.DoesNotExist:
        return
    if not turn.is_running or turn.phase != Turn.Phase.TOOLS:
        return
    # One query answers both "is any call unfinished?" and the kind's "did a call end the
    # turn?" (it reads the call only when one may have).
    calls = list(turn.tool_calls.order_by().values_list("status", "tool"))
    if any(status not in ToolCall.TERMINAL for status, _ in calls):
        return
    if turn.cancel_requested:
        turn_finish(turn, status=Turn.Status.CANCELLED)
    elif turn.kind == Turn.Kind.SLASH:
        ok = all(status == ToolCall.Status.SUCCEEDED for status, _ in calls)
        turn_finish(turn, status=Turn.Status.SUCCEEDED if ok else Turn.Status.FAILED)
    elif kind_for_turn(turn).finish(turn, finish=turn_finish, calls=calls):
        return
    elif Turn.objects.filter(pk=turn.pk, status=Turn.Status.RUNNING, phase=Turn.Phase.TOOLS).update(
        phase=Turn.Phase.MODEL, heartbeat_at=timezone.now(), requeued=0
    ):
        _queue_round(turn.pk)


def _back_to_model(turn_id: int) -> bool:
    """The common case of turn_advance in one conditional UPDATE: a chat turn, not stopped,
    none of whose calls is unfinished or a successful final_answer, goes back to the model.
    When calls finish together, only the UPDATE that matches advances the turn."""
    return _BACK_TO_MODEL.update(pk=turn_id, now=timezone.now()) > 0


def _back_to_model_query(pk: int, now: dt.datetime) -> tuple[Any, dict[str, Any]]:
    holding = ToolCall.objects.filter(turn_id=pk).filter(
        ~Q(status__in=ToolCall.TERMINAL) | Q(tool=FINAL_ANSWER, status=ToolCall.Status.SUCCEEDED)
    )
    return Turn.objects.filter(
        ~Exists(holding),
        pk=pk,
        status=Turn.Status.RUNNING,
        phase=Turn.Phase.TOOLS,
        kind=Turn.Kind.CHAT,
        cancel_requested=False,
    ), {"phase": Turn.Phase.MODEL, "heartbeat_at": now, "requeued": 0}


# Every finished call of a model's round runs it: compiled once per process (infra.prepared).
_BACK_TO_MODEL = Prepared(_back_to_model_query, pk=int, now=dt.datetime)


# Unordered: every message sent runs this, and an ORDER BY costs Django more than the query.
_CONVERSATION = Prepared(lambda pk: Conversation.objects.filter(pk=pk).order_by()[:1], pk=int)


def _owned_conversation(user: Any, conversation_id: int) -> Conversation:
    conversation = _CONVERSATION.one(pk=conversation_id)
    # Sending, stopping, editing: the owner only (an auditor reads, never acts). Someone
    # else's conversation answers as one that does not exist.
    if conversation is None or not access.conversation_changeable(
        user, owner_id=conversation.owner_id
    ):
        raise TurnError(_("conversation not found"))
    return conversation


def turn_send(*, user: Any, conversation_id: int, text: str, files: Any = None) -> Turn | None:
    """``files``: workspace names the person uploaded for this message (checked here)."""
    conversation = _owned_conversation(user, conversation_id)
    return turn_start(
        conversation=conversation,
        user_id=conversation.owner_id,
        text=text,
        attachments=clean_attachments(conversation, files) if files else None,
    )


def toolcall_retry(*, user: Any, conversation_id: int, call_id: Any) -> Turn | None:
    """The card's Retry: the same call (tool and stored arguments) once more, as a ``/``
    command of the conversation's owner, so it takes the same binding as any other call
    (grants, policy, the person's connection, approval). Only the owner's own calls of this
    conversation refused for want of a connection (the Connect card's Retry): any other
    replayed as a ``/`` command would escape what held it (a guard on a model's call)."""
    import json

    from tools_app.models import ToolCall

    conversation = _owned_conversation(user, conversation_id)
    call = ToolCall.objects.filter(
        pk=call_id if isinstance(call_id, int) else -1,
        conversation=conversation,
        status__in=(ToolCall.Status.FAILED, ToolCall.Status.DENIED),
    ).first()
    result = call.result if call is not None else None
    if call is None or call.imported or not (isinstance(result, dict) and result.get("connect")):
        raise TurnError(_("that call cannot be retried"))
    arguments = call.arguments if isinstance(call.arguments, dict) else {}
    text = f"/{call.tool} {json.dumps(arguments, ensure_ascii=False)}"
    return turn_start(conversation=conversation, user_id=conversation.owner_id, text=text)


def person_turns_stop(*, user_id: int) -> int:
    """Stop every running turn of the person's conversations (their account was
    deactivated): the model stream is cancelled and running tools are killed. How many."""
    running = Turn.objects.filter(conversation__owner_id=user_id, status=Turn.Status.RUNNING)
    stopped = 0
    for turn in running:
        turn_stop(turn=turn)
        stopped += 1
    return stopped


def turn_stop_current(*, user: Any, conversation_id: int) -> None:
    conversation = _owned_conversation(user, conversation_id)
    for turn in conversation.turns.filter(status=Turn.Status.RUNNING):
        turn_stop(turn=turn)
