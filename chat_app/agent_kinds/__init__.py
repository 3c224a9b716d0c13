"""Agent kinds: how an agent profile's kind (``Agent.kind``) shapes a chat turn.

The model round (``chat_app.services.loop``) and the turn services (``turns``) ask the
profile's kind, through one interface (``AgentKind``, picked by ``kind_for``):

- ``offer``: the tools a round offers, why the rest is not (binding refuses a call to it
  with that reason), a tool to force and a note for the model;
- ``hold``: a bound call that waits for the person instead of running (a clarification);
- ``resume``: the person's answer lets the waiting turn go on;
- ``stop``: Stop withdraws a waiting question;
- ``finish``: a successful ``final_answer`` ends the turn.

The modules: ``base`` (the interface, ``RoundOffer``), ``registry`` (value → kind),
``chat`` (``tool_calling``), ``schema_guided`` (``sgr``, ``sgr_tool_calling``), ``budgets``
(iterations and calls per tool: ``Agent.max_iterations``, ``Agent.tool_budgets``),
``clarification``, ``final_answer``, ``plan`` (the plan on the turn and its checklist),
``tool_names``.
"""

from __future__ import annotations

from chat_app.agent_kinds.base import AgentKind, RoundOffer
from chat_app.agent_kinds.budgets import Budget, turn_budget
from chat_app.agent_kinds.plan import budget_for_call, plan_apply, turn_plan_html
from chat_app.agent_kinds.registry import (
    approved_call_hold,
    kind_for,
    kind_for_conversation,
    kind_for_turn,
)
from chat_app.agent_kinds.tool_names import FINAL_ANSWER

__all__ = [
    "FINAL_ANSWER",
    "AgentKind",
    "Budget",
    "RoundOffer",
    "approved_call_hold",
    "budget_for_call",
    "kind_for",
    "kind_for_conversation",
    "kind_for_turn",
    "plan_apply",
    "turn_budget",
    "turn_plan_html",
]
