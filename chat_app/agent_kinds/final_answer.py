"""A successful ``final_answer`` ends the turn with its status, its answer shown as the
assistant's last message."""

from __future__ import annotations

from collections.abc import Callable

from chat_app.agent_kinds.plan import plan_publish
from chat_app.agent_kinds.tool_names import FINAL_ANSWER
from chat_app.events import message_publish
from chat_app.models import Message, Turn
from tools_app.models import ToolCall


def final_answer_end_turn(
    turn: Turn,
    *,
    finish: Callable[..., object],
    calls: list[tuple[str, str]] | None = None,
) -> bool:
    """If the turn's tools included a successful final_answer, end the turn with its status
    (through ``finish``: the turn services' ``turn_finish``, passed in so this module does not
    import them back) and show its answer as the assistant's message. True when it did (or
    someone else did). ``calls``: the turn's calls as (status, tool) when the caller has them,
    which answers the common case ("no final_answer") without a query."""
    if calls is not None and (ToolCall.Status.SUCCEEDED, FINAL_ANSWER) not in calls:
        return False
    # Unordered, one column: an ORDER BY on ToolCall costs Django more than the query.
    finals = list(
        ToolCall.objects.filter(turn=turn, tool=FINAL_ANSWER, status=ToolCall.Status.SUCCEEDED)
        .order_by()
        .values_list("pk", flat=True)
    )
    if not finals:
        return False
    call = ToolCall.objects.get(pk=max(finals))
    if not Turn.objects.filter(
        pk=turn.pk, status=Turn.Status.RUNNING, phase=Turn.Phase.TOOLS
    ).update(phase=Turn.Phase.DONE):
        return True  # another finisher got here first
    result = call.result or {}
    arguments = call.arguments or {}
    status = result.get("status") or arguments.get("status") or "completed"
    message = Message.objects.create(
        conversation_id=turn.conversation_id,
        turn=turn,
        role=Message.Role.ASSISTANT,
        content=str(result.get("answer") or arguments.get("answer") or ""),
    )
    message_publish(message, calls=[])
    if turn.plan:  # the checklist says how it ended
        Turn.objects.filter(pk=turn.pk).update(plan={**turn.plan, "status": status})
        turn.refresh_from_db(fields=["plan"])
        plan_publish(turn)
    if status == "failed":
        finish(turn, status=Turn.Status.FAILED, error="the agent reported the task failed")
    else:
        finish(turn, status=Turn.Status.SUCCEEDED)
    return True
