"""The plan, kept on the turn (``Turn.plan``): the plan tools write it, and the chat's
checklist (``templates/chat/_plan.html``) follows it live through a ``plan`` event."""

from __future__ import annotations

from typing import Any

from django.template.loader import render_to_string
from django.utils import timezone

from chat_app.agent_kinds.budgets import Budget, turn_budget
from chat_app.agent_kinds.tool_names import PLAN_TOOLS
from chat_app.models import Conversation, Turn
from chat_app.services.agents import agent_for_conversation
from infra.events import conversation_group, publish
from tools_app.models import ToolCall


def plan_apply(*, call_id: int, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """Store the new plan on the call's turn (when it has one) and publish the checklist.

    ``generate_plan`` (the seed's fields): ``research_goal``, ``planned_steps``,
    ``search_strategies``. ``adapt_plan``: ``new_goal`` (empty keeps the goal),
    ``plan_changes``, ``next_steps`` (what is left), ``done_steps`` (numbers of the current
    plan's steps now done): the checklist keeps the steps done so far, then the next ones."""
    call = ToolCall.objects.filter(pk=call_id).only("turn_id").first()
    turn = Turn.objects.filter(pk=call.turn_id).first() if call and call.turn_id else None
    plan: dict[str, Any] = dict(turn.plan) if turn and turn.plan else {}
    if tool == "generate_plan":
        plan["goal"] = args["research_goal"]
        plan["steps"] = [{"text": text, "done": False} for text in args["planned_steps"]]
        plan["strategies"] = list(args.get("search_strategies") or [])
    else:
        done_now = set(args.get("done_steps") or [])
        kept = [
            {"text": step["text"], "done": True}
            for i, step in enumerate(plan.get("steps") or [], start=1)
            if step.get("done") or i in done_now
        ]
        plan["steps"] = kept + [{"text": text, "done": False} for text in args["next_steps"]]
        if args.get("new_goal"):
            plan["goal"] = args["new_goal"]
        plan.setdefault("changes", []).append(
            {
                "changes": args.get("plan_changes", []),
                "reasoning": args.get("reasoning", ""),
                "at": timezone.now().isoformat(timespec="seconds"),
            }
        )
    plan["reasoning"] = args.get("reasoning", "")
    plan["version"] = int(plan.get("version", 0)) + 1
    if turn is not None:
        Turn.objects.filter(pk=turn.pk).update(plan=plan)
        turn.plan = plan
        plan_publish(turn)
    return plan


def plan_html(turn: Turn | None, budget: Budget | None = None) -> str:
    if turn is None or not turn.plan:
        return ""
    return render_to_string(
        "chat/_plan.html",
        {"turn": turn, "plan": turn.plan, "budget": budget.as_dict() if budget else None},
    )


def _plan_send(turn: Turn, conversation_id: int, budget: Budget) -> None:
    publish(
        [conversation_group(conversation_id)],
        {
            "type": "plan",
            "turn_id": turn.pk,
            "version": turn.plan.get("version", 0),
            "html": plan_html(turn, budget),
        },
    )


def plan_publish(turn: Turn) -> None:
    agent = agent_for_conversation(Conversation.objects.get(pk=turn.conversation_id))
    _plan_send(turn, turn.conversation_id, turn_budget(turn.pk, agent))


def turn_plan_html(conversation: Conversation, turn: Turn | None) -> str:
    """The plan checklist of ``turn`` (the conversation's latest, read by the caller:
    ``selectors.turn_state``), or "" when it has none."""
    if turn is None or not turn.plan:
        return ""
    return plan_html(turn, turn_budget(turn.pk, agent_for_conversation(conversation)))


def budget_for_call(call_id: int) -> dict[str, str] | None:
    """The turn's budget as words ("3 of 10"), for the Agent tools' results and cards; the
    plan checklist (which shows it too) is refreshed on the way."""
    call = ToolCall.objects.filter(pk=call_id).select_related("conversation", "turn").first()
    if call is None or call.turn is None or call.conversation is None:
        return None
    budget = turn_budget(call.turn.pk, agent_for_conversation(call.conversation))
    if call.turn.plan and call.tool not in PLAN_TOOLS:
        _plan_send(call.turn, call.conversation.pk, budget)
    return budget.as_dict()
