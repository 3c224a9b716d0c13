"""A clarification pauses the turn until the person answers.

A bound ``clarification`` call is not run: it waits for the person (call ``awaiting_input``,
turn phase ``clarify``). Their next message finishes it with the answer as its result and the
same turn goes on; Stop withdraws the question."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from chat_app.agent_kinds.tool_names import CLARIFICATION
from chat_app.events import message_publish, turn_publish
from chat_app.models import Message, Turn
from tools_app.models import ToolCall
from tools_app.services.execution import toolcall_finish

ONE_AT_A_TIME = "one clarification at a time: wait for the user's answer to the first"


def clarification_hold(call: ToolCall) -> bool:
    """True when the bound call waits for the person instead of running (clarification).

    Both steps or neither: the chat turn goes to phase ``clarify`` only if it is running, not
    stopped and between tools (or holding another question of the same round), and the call to
    ``awaiting_input`` only if it is still queued. Otherwise the call goes on as any other
    (dispatched, or cancelled by the Stop under way). The turn's row is updated first, so a
    Stop racing an approval is ordered by its lock: whichever comes second sees the other."""
    if call.tool != CLARIFICATION or call.turn_id is None:
        return False
    turn_id = call.turn_id
    with transaction.atomic():
        paused = Turn.objects.filter(
            pk=turn_id,
            status=Turn.Status.RUNNING,
            kind=Turn.Kind.CHAT,
            cancel_requested=False,
            phase__in=(Turn.Phase.TOOLS, Turn.Phase.CLARIFY),
        ).update(phase=Turn.Phase.CLARIFY)
        if not paused:
            return False
        if not ToolCall.objects.filter(pk=call.pk, status=ToolCall.Status.QUEUED).update(
            status=ToolCall.Status.AWAITING_INPUT
        ):
            transaction.set_rollback(True)  # the turn's phase too
            return False
    call.status = ToolCall.Status.AWAITING_INPUT
    # The page learns it may send again (the answer) once the binding transaction commits.
    transaction.on_commit(lambda: _turn_publish_by_id(turn_id))
    return True


def _turn_publish_by_id(turn_id: int) -> None:
    turn = Turn.objects.filter(pk=turn_id).first()
    if turn is not None:
        turn_publish(turn)


def clarification_answer(*, turn: Turn, text: str) -> bool:
    """The person answered: their message joins the turn, the waiting call finishes with the
    answer as its result and the turn goes on. False when the turn was not waiting."""
    with transaction.atomic():
        if not Turn.objects.filter(
            pk=turn.pk, status=Turn.Status.RUNNING, phase=Turn.Phase.CLARIFY
        ).update(phase=Turn.Phase.TOOLS, heartbeat_at=timezone.now()):
            return False
        message = Message.objects.create(
            conversation_id=turn.conversation_id, turn=turn, role=Message.Role.USER, content=text
        )
    message_publish(message, calls=[])
    for call in ToolCall.objects.filter(turn=turn, status=ToolCall.Status.AWAITING_INPUT):
        toolcall_finish(
            call,
            status=ToolCall.Status.SUCCEEDED,
            result={
                "success": True,
                "questions": (call.arguments or {}).get("questions"),
                "answer": text,
            },
            duration_ms=int((timezone.now() - call.created_at).total_seconds() * 1000),
            only_if=ToolCall.Status.AWAITING_INPUT,
        )
    turn.refresh_from_db()
    turn_publish(turn)
    return True


def clarification_withdraw(turn: Turn) -> None:
    """Stop while waiting for an answer: the question is withdrawn, the turn can finish."""
    Turn.objects.filter(pk=turn.pk, phase=Turn.Phase.CLARIFY).update(phase=Turn.Phase.TOOLS)
    reason = "cancelled by the user"
    for call in ToolCall.objects.filter(turn=turn, status=ToolCall.Status.AWAITING_INPUT):
        toolcall_finish(
            call,
            status=ToolCall.Status.CANCELLED,
            result={"success": False, "error": reason},
            error=reason,
            duration_ms=0,
            only_if=ToolCall.Status.AWAITING_INPUT,
        )
