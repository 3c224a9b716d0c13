"""The interface every agent kind implements, and what one model round offers."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field

from chat_app.agent_kinds import clarification, final_answer
from chat_app.agent_kinds.budgets import Budget, turn_budget
from chat_app.agent_kinds.tool_names import CLARIFICATION
from chat_app.models import Agent, Turn
from tools_app.models import ToolCall
from tools_app.registry import BaseTool


@dataclass
class RoundOffer:
    """What one round offers the model, and why the rest is not offered: binding refuses a
    call to a tool in ``unavailable`` with its reason."""

    tools: list[type[BaseTool]]
    budget: Budget | None = None  # None: this round counts nothing
    tool_choice: str | None = None  # the tool the model must call (native tool calling)
    unavailable: dict[str, str] = field(default_factory=dict)
    note: str = ""  # added to the round's system prompt

    @classmethod
    def within(
        cls,
        tools: list[type[BaseTool]],
        *,
        budget: Budget,
        unavailable: dict[str, str],
        note: str = "",
        tool_choice: str | None = None,
    ) -> RoundOffer:
        """``tools`` less what is unavailable; the prompt note ends with the budget."""
        return cls(
            tools=[t for t in tools if t.tool_name not in unavailable],
            budget=budget,
            tool_choice=tool_choice,
            unavailable=unavailable,
            note=f"{note}\n{budget.line()}".strip(),
        )

    def bound(self, call: ToolCall) -> None:
        """Count a call bound in this round, so a later call of the same round sees it."""
        if self.budget is None or call.policy_verdict != "allowed":
            return
        spent = self.budget.count(call.tool)
        if spent:
            self.unavailable[call.tool] = spent
        if call.tool == CLARIFICATION:
            self.unavailable[CLARIFICATION] = clarification.ONE_AT_A_TIME


class AgentKind(ABC):
    """How a kind of agent profile (``Agent.kind``) runs a chat turn: ``offer`` is what sets
    kinds apart (the tools each round offers, a forced tool, a note for the model).

    ``hold``, ``resume``, ``stop`` and ``finish`` carry out what the Agent tools mean for a
    turn: a clarification waits for the person, their answer resumes the turn, Stop withdraws
    the question, a successful final_answer ends the turn. Every kind shares them: they act
    on the calls the turn holds, and a person may switch a conversation's profile while a
    question waits (the switch applies from the next round), so the turn must still be
    answerable, stoppable and finishable under the new kind. A kind that never offers those
    tools never sets them off."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    @abstractmethod
    def offer(self, turn: Turn, tools: list[type[BaseTool]]) -> RoundOffer:
        """The tools this round offers (a subset of ``tools``: enabled and allowed)."""

    def offer_within_budgets(self, turn: Turn, tools: list[type[BaseTool]]) -> RoundOffer:
        """``tools`` less what the turn's budget took away."""
        budget = turn_budget(turn.pk, self.agent)
        unavailable, note = budget.refusals({t.tool_name for t in tools})
        return RoundOffer.within(tools, budget=budget, unavailable=unavailable, note=note)

    def hold(self, call: ToolCall) -> bool:
        """True when the bound (or approved) call waits for the person instead of running."""
        return clarification.clarification_hold(call)

    def resume(self, *, turn: Turn, text: str) -> bool:
        """The person's message answers the question the turn waits on: the same turn goes
        on. False when it was not waiting (the message starts a turn of its own)."""
        return clarification.clarification_answer(turn=turn, text=text)

    def stop(self, turn: Turn) -> None:
        """Stop: withdraw a question waiting for an answer, so the turn can finish."""
        clarification.clarification_withdraw(turn)

    def finish(
        self,
        turn: Turn,
        *,
        finish: Callable[..., object],
        calls: list[tuple[str, str]] | None = None,
    ) -> bool:
        """True when the turn's calls ended it (a successful final_answer), through
        ``finish`` (``turn_finish``); ``calls``: the turn's calls as (status, tool)."""
        return final_answer.final_answer_end_turn(turn, finish=finish, calls=calls)
