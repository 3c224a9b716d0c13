"""What ``tool_search`` runs: the search over ``turn_offer``'s tools (never a second reading of
the grants), and the names it loads, kept in its result for the loop (``turn_loaded``)."""

from __future__ import annotations

from typing import Any

from chat_app.agent_kinds import kind_for
from chat_app.agent_kinds.tool_names import TOOL_SEARCH
from chat_app.models import Turn
from chat_app.services.agents import agent_for_conversation
from chat_app.services.tool_offer import tools_search, turn_offer
from chat_app.services.turns import conversation_language
from platform_app.executors.tool_search.settings import ToolSearchSettings
from platform_app.executors.tool_search.tools import ToolSearch
from platform_app.memory.similarity import local_similarity
from tools_app.registry import BaseTool, activity
from tools_app.runtime import ActivityContext
from tools_app.services.decision import usable_tools


def _searchable(ctx: ActivityContext[ToolSearchSettings]) -> tuple[list[type[BaseTool]], str]:
    """What the caller could call now, and the language of its descriptions: in a turn, the
    round's own offer; otherwise (the Test button, a slash command, /mcp/) the person's
    granted, enabled tools within the call's scope."""
    turn = None
    if ctx.turn_id is not None:
        turn = Turn.objects.select_related("conversation").filter(pk=ctx.turn_id).first()
    if turn is None:
        return usable_tools(ctx.user_id, ctx.scope), ""
    agent = agent_for_conversation(turn.conversation)
    offer, _scope = turn_offer(turn, agent, kind_for(agent))
    language = agent.tool_language or conversation_language(turn.conversation)
    return offer.tools, language


@activity(TOOL_SEARCH)
def tool_search(args: ToolSearch, ctx: ActivityContext[ToolSearchSettings]) -> dict[str, Any]:
    tools, language = _searchable(ctx)
    tools = [t for t in tools if t.tool_name != TOOL_SEARCH]
    found = tools_search(
        tools,
        args.query,
        limit=ctx.settings.max_results,
        language=language,
        similar=local_similarity if ctx.settings.match_by_meaning else None,
        floor=ctx.settings.meaning_floor,
    )
    names = {t.tool_name for t in tools}
    wanted = [n for n in dict.fromkeys(args.load) if n != TOOL_SEARCH]
    # Not told apart: a name that does not exist and one this person may not use.
    loaded = [n for n in wanted if n in names]
    missing = [n for n in wanted if n not in names]
    if not loaded:
        # None named, or none of the names usable (a small model makes names up): the best
        # matches, but none far below the best: a tool found by one common word of its
        # description would cost its schema in every later round for nothing.
        best = found[0].score if found else 0
        top = found[: ctx.settings.load_top]
        loaded = [f.name for f in top if 2 * f.score >= best]
    if ctx.turn_id is None:
        loaded = []  # no turn to load them into: the names are the answer
    ctx.emit_output(f"{len(found)} tool(s) found, {len(loaded)} loaded\n")
    out: dict[str, Any] = {
        "query": args.query,
        "found": [{"name": f.name, "description": f.description} for f in found],
        "loaded": loaded,
    }
    if missing:
        out["not_available"] = missing
    if not found and not loaded:
        out["note"] = "No tool you may use matches; try other words."
    elif loaded:
        out["note"] = "The loaded tools can be called from your next step."
    return out
