"""Schema-guided agents: the Agent tools (reasoning, plan, clarification, final answer,
report) structure the turn, within the turn's budgets."""

from __future__ import annotations

from chat_app.agent_kinds.base import AgentKind, RoundOffer
from chat_app.agent_kinds.budgets import turn_budget
from chat_app.agent_kinds.tool_names import REASONING
from chat_app.models import Message, Turn
from tools_app.models import ToolCall
from tools_app.registry import BaseTool


class SchemaGuidedKind(AgentKind):
    """``sgr``: the model must call ``reasoning`` before every action. A round that follows
    anything but ``reasoning`` offers only ``reasoning`` and forces it (``tool_choice`` on
    native tool calling, an instruction in the text fallback); the round after it offers the
    rest. The budget comes first: past the iteration limit only the final tools are offered,
    and nothing is forced."""

    def offer(self, turn: Turn, tools: list[type[BaseTool]]) -> RoundOffer:
        budget = turn_budget(turn.pk, self.agent)
        names = {t.tool_name for t in tools}
        unavailable, note = budget.refusals(names)
        choice = None
        if REASONING in names and not budget.iterations_spent:
            if _reasoning_due(turn):
                reason = "this round you must call reasoning first; act in the next round"
                unavailable.update({name: reason for name in names - {REASONING}})
                choice = REASONING
                note = (
                    "This round, call only the `reasoning` tool: think about where the task "
                    "stands. You will act in the next round."
                )
            else:
                unavailable[REASONING] = "you have just reasoned: act on it now"
                note = (
                    "Act on your reasoning now: call the tool(s) it calls for "
                    "(final_answer when the task is done)."
                )
        return RoundOffer.within(
            tools, budget=budget, unavailable=unavailable, note=note, tool_choice=choice
        )


class ReasoningAsToolKind(AgentKind):
    """``sgr_tool_calling``: ``reasoning`` and the other Agent tools are offered among the
    rest, within the turn's budgets; the model decides when to reason."""

    def offer(self, turn: Turn, tools: list[type[BaseTool]]) -> RoundOffer:
        return self.offer_within_budgets(turn, tools)


def _reasoning_due(turn: Turn) -> bool:
    """Whether the turn's last finished reply did anything but reason successfully."""
    last = (
        Message.objects.filter(turn=turn, role=Message.Role.ASSISTANT)
        .exclude(state=Message.State.STREAMING)
        .order_by("-id")
        .first()
    )
    if last is None:
        return True
    return not last.tool_calls.filter(tool=REASONING, status=ToolCall.Status.SUCCEEDED).exists()
