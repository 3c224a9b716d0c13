"""The tools the agent kinds know by name. The Agent tools themselves (schemas, activities)
are platform_app's ``agent`` group; ``web_search`` is the research group's, counted by name
whichever package provides it."""

from __future__ import annotations

AGENT_GROUP = "agent"
REASONING = "reasoning"
CLARIFICATION = "clarification"
FINAL_ANSWER = "final_answer"
CREATE_REPORT = "create_report"
PLAN_TOOLS = frozenset({"generate_plan", "adapt_plan"})
SEARCH_TOOL = "web_search"
# What is still offered once a turn's iterations are spent: the tools that finish.
FINAL_TOOLS = frozenset({FINAL_ANSWER, CREATE_REPORT})
# Tool search (issue 38): platform_app's ``tool_search`` group; the loop offers it, and loads
# what it finds, when a person's tools outweigh the profile's schema budget.
TOOL_SEARCH = "tool_search"
