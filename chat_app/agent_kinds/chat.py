"""``tool_calling``: the model picks among the profile's tools, nothing is forced."""

from __future__ import annotations

from chat_app.agent_kinds.base import AgentKind, RoundOffer
from chat_app.agent_kinds.tool_names import AGENT_GROUP
from chat_app.models import Turn
from tools_app.registry import BaseTool


class ChatKind(AgentKind):
    """A profile with every tool is offered them all but the Agent group (that is for
    profiles that list it), and nothing is counted: no budget queries on this hot path. A
    profile that lists its tools (the Agent tools among them, perhaps) gets them within the
    turn's budgets."""

    def offer(self, turn: Turn, tools: list[type[BaseTool]]) -> RoundOffer:
        if self.agent.all_tools:
            return RoundOffer(tools=[t for t in tools if t.tool_group != AGENT_GROUP])
        return self.offer_within_budgets(turn, tools)
