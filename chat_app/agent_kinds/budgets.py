"""A turn's budget: its iterations and the calls of each counted tool, against the limits of
the agent profile (``Agent.max_iterations``, ``Agent.tool_budgets``).

An *iteration* is a round that called something other than ``reasoning``, so in a
schema-guided agent a forced reasoning round and the action after it count once. A tool's
calls count when policy allowed them (a refused call spends nothing)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count

from chat_app.agent_kinds.tool_names import CLARIFICATION, FINAL_TOOLS, REASONING, SEARCH_TOOL
from chat_app.models import Agent
from tools_app.models import ToolCall

# Always counted: the budget's words name them even without a limit (the model and the Agent
# cards read "clarifications" and "searches"). Any other tool is counted once the profile
# gives it a limit, under its own name.
ALWAYS_COUNTED = (CLARIFICATION, SEARCH_TOOL)
LABELS = {CLARIFICATION: "clarifications", SEARCH_TOOL: "searches"}


@dataclass
class Budget:
    iterations: int
    max_iterations: int
    calls: dict[str, int]  # allowed calls of this turn, per counted tool
    limits: dict[str, int]  # the profile's tool budgets (a tool missing or 0: no limit)

    @property
    def iterations_spent(self) -> bool:
        return bool(self.max_iterations) and self.iterations >= self.max_iterations

    def as_dict(self) -> dict[str, str]:
        """The budget in words ("3 of 10"), for the Agent tools' results, cards and plan."""

        def of(used: int, limit: int) -> str:
            # Past the limit only the final tools run; they finish, they do not overspend.
            return f"{min(used, limit)} of {limit}" if limit else f"{used} (no limit)"

        words = {"iterations": of(self.iterations, self.max_iterations)}
        for tool, used in self.calls.items():
            words[LABELS.get(tool, tool)] = of(used, self.limits.get(tool, 0))
        return words

    def line(self) -> str:
        """The budget as the round's prompt states it."""
        words = ", ".join(f"{name} {value}" for name, value in self.as_dict().items())
        return f"Budget of this turn: {words}."

    def refusals(self, names: set[str]) -> tuple[dict[str, str], str]:
        """What the budget takes away from a round offering ``names`` (tool → why), and a
        note for the prompt when it is the iteration limit."""
        if self.iterations_spent:
            reason = (
                f"the iteration limit of {self.max_iterations} is reached: only final_answer "
                "and create_report are available now; finish the task with them"
            )
            note = f"The iteration limit is reached. {reason[0].upper()}{reason[1:]}."
            return {name: reason for name in names - FINAL_TOOLS}, note
        spent = {
            tool: spent_reason(tool, limit)
            for tool, used in self.calls.items()
            if (limit := self.limits.get(tool, 0)) and used >= limit
        }
        return spent, ""

    def count(self, tool: str) -> str | None:
        """Count one more allowed call of ``tool``; why it is no longer available when that
        spent its limit."""
        if tool not in self.calls:
            return None
        self.calls[tool] += 1
        limit = self.limits.get(tool, 0)
        return spent_reason(tool, limit) if limit and self.calls[tool] >= limit else None


def spent_reason(tool: str, limit: int) -> str:
    if tool == CLARIFICATION:
        return (
            f"clarification is no longer available: {limit} clarifications were asked in "
            "this turn; go on with sensible assumptions"
        )
    if tool == SEARCH_TOOL:
        return (
            f"{tool} is no longer available: the search limit of {limit} for this turn is "
            "spent; work with what you found"
        )
    return (
        f"{tool} is no longer available: the limit of {limit} calls for this turn is spent; "
        "go on without it"
    )


def turn_budget(turn_id: int, agent: Agent) -> Budget:
    limits = {tool: limit for tool, limit in (agent.tool_budgets or {}).items() if limit}
    counted = [*ALWAYS_COUNTED, *sorted(set(limits) - set(ALWAYS_COUNTED))]
    calls = ToolCall.objects.filter(turn_id=turn_id)
    used = dict(
        calls.filter(policy_verdict="allowed", tool__in=counted)
        .order_by()  # no default ordering in the GROUP BY
        .values_list("tool")
        .annotate(n=Count("id"))
    )
    return Budget(
        iterations=calls.exclude(tool=REASONING).values("message_id").distinct().count(),
        max_iterations=agent.max_iterations,
        calls={tool: used.get(tool, 0) for tool in counted},
        limits=limits,
    )
