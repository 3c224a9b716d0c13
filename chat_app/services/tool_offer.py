"""What a round offers the model, and tool search (issue 38).

``turn_offer`` is the one place that turns a person's grants, the agent profile's tools, the
turn's scope and the kind's budgets into the tools a round may offer: the loop asks it every
round and ``tool_search`` (platform_app) asks it to know what it may find. There is no second
evaluator of grants: it calls ``usable_tools``, made of the steps binding takes (grants, the
switches, and the settings that refuse a function to a person whatever the arguments).

Tool search: when the schemas of those tools weigh more than the profile's
``tool_schema_budget`` (tokens, by the usage estimate) and ``tool_search`` is among them, the
round shows the model only ``tool_search``, the always-on tools and what the turn loaded. The
turn's loaded tools are the ``loaded`` lists of its successful ``tool_search`` calls: kept on
the turn as those calls' results, so a reload, a retry or another runner sees the same list,
and the next turn starts lean again. Every tool the round could have offered stays callable:
binding is the authority (grants, scope, switches), so a model that names a granted tool it
has not loaded is served like before, and one it may not use is refused like before.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from chat_app.agent_kinds import AgentKind, RoundOffer
from chat_app.agent_kinds.tool_names import AGENT_GROUP, TOOL_SEARCH
from chat_app.models import Agent, Turn
from chat_app.services.tool_specs import one_line, tool_specs_chars
from chat_app.services.usage import CHARS_PER_TOKEN
from infra.prepared import Prepared
from tools_app.i18n import text_in
from tools_app.models import ToolCall
from tools_app.registry import GROUPS, BaseTool
from tools_app.runtime import scope_narrow
from tools_app.services.decision import usable_tools

# Always on when the profile names none: the skill index in the system prompt points at
# skill_load, and memory_search is how the agent recalls what the person told it before.
ESSENTIALS = ("skill_load", "memory_search")


def turn_offer(turn: Turn, agent: Agent, kind: AgentKind) -> tuple[RoundOffer, list[str] | None]:
    """What this round may offer (grants ∩ the profile's tools ∩ the turn's scope, enabled,
    within the kind's budgets), and the scope its calls bind within."""
    scope = scope_narrow(turn.tool_scope, agent.allowed_tools())
    # The model is offered only what the person may use (binding refuses the rest anyway).
    offer = kind.offer(turn, usable_tools(turn.user_id, scope))
    return offer, scope


@dataclass
class Shown:
    tools: list[type[BaseTool]]  # the schemas the request carries
    searching: bool  # tool search is on: the rest is found with tool_search


def schema_tokens(tools: list[type[BaseTool]], *, language: str = "") -> int:
    """What these tools' schemas weigh in a request (the usage estimate's tokens)."""
    return -(-tool_specs_chars(tools, strict=True, language=language) // CHARS_PER_TOKEN)


def round_shown(
    offer: RoundOffer, agent: Agent, *, turn_id: int | None, language: str = ""
) -> Shown:
    """The tools a round shows the model, out of ``offer.tools`` (the module's docstring)."""
    search = [t for t in offer.tools if t.tool_name == TOOL_SEARCH]
    rest = [t for t in offer.tools if t.tool_name != TOOL_SEARCH]
    budget = agent.tool_schema_budget
    if not search or not budget or schema_tokens(rest, language=language) <= budget:
        return Shown(tools=rest, searching=False)
    keep = always_on(agent, offer) | turn_loaded(turn_id)
    return Shown(tools=search + [t for t in rest if t.tool_name in keep], searching=True)


def always_on(agent: Agent, offer: RoundOffer) -> set[str]:
    """The profile's always-on tools (the essentials when it names none), the tool the kind
    forces, and the Agent tools a kind offers (they shape the turn, the model must see them)."""
    names = set(agent.always_on_tools or ESSENTIALS)
    if offer.tool_choice:
        names.add(offer.tool_choice)
    names.update(t.tool_name for t in offer.tools if t.tool_group == AGENT_GROUP)
    return names


# Every round after a turn's first runs it: compiled once per process (infra.prepared).
_SEARCHES = Prepared(
    lambda turn_id: ToolCall.objects.filter(
        turn_id=turn_id, tool=TOOL_SEARCH, status=ToolCall.Status.SUCCEEDED
    ).values_list("result", flat=True),
    turn_id=int,
)


def turn_loaded(turn_id: int | None) -> set[str]:
    """The tools this turn's tool_search calls loaded."""
    if turn_id is None:
        return set()
    loaded: set[str] = set()
    for result in _SEARCHES.rows(turn_id=turn_id):
        if isinstance(result, dict) and isinstance(result.get("loaded"), list):
            loaded.update(str(name) for name in result["loaded"])
    return loaded


# --- the search -----------------------------------------------------------------------------
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# Words nearly every description has: they would rank every tool.
_STOP = frozenset((
    "the", "and", "for", "with", "what", "which", "how", "you", "your", "that", "this", "from",
    "are", "can", "into", "use", "tool", "tools", "its", "one", "all", "any", "not", "now",
    "want", "need", "please",
))  # fmt: skip


def _words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _STOP]


def _matches(word: str, candidates: Iterable[str]) -> bool:
    # "schedules" finds "schedule", "timezone" finds "time": a shared start of 4+ letters.
    for other in candidates:
        if word == other:
            return True
        short, long = sorted((word, other), key=len)
        if len(short) >= 4 and long.startswith(short[: max(4, len(short) - 2)]):
            return True
    return False


@dataclass(frozen=True)
class Found:
    name: str
    description: str  # its first sentence, one line
    score: float


# Ranks by meaning: (query, the tools' texts) → the cosine similarity of each text to the query
# (platform_app's tool_search passes the local embedding model's; chat_app knows no model).
Similarity = Callable[[str, list[str]], list[float]]
# What closeness in meaning adds to a tool's score: a word of the name counts 4, so a close
# match (0.5) weighs as much as one word of the name.
MEANING_WEIGHT = 8.0


def tools_search(
    tools: list[type[BaseTool]],
    query: str,
    *,
    limit: int,
    language: str = "",
    similar: Similarity | None = None,
    floor: float = 0.3,
) -> list[Found]:
    """``tools`` that match ``query``, best first: a word in the tool's name counts most, then
    its group's name and label, then its description; with ``similar``, a tool whose name and
    first sentence mean what the query says (cosine ≥ ``floor``) counts too: "clock" finds
    ``current_time``. Only ever ``tools`` (the caller's ``turn_offer``): a query can ask for
    anything, it finds nothing else."""
    words = _words(query)
    rows: list[tuple[str, str, int]] = []
    for tool in tools:
        description = one_line(text_in(tool.description(), language))
        name_words = _words(tool.tool_name.replace("_", " "))
        group = GROUPS.get(tool.tool_group)
        group_words = _words(
            tool.tool_group.replace("_", " ") + " " + str(group.label if group else "")
        )
        text = _words(description)
        score = 0
        for word in words:
            if _matches(word, name_words):
                score += 4
            elif _matches(word, group_words):
                score += 2
            elif _matches(word, text):
                score += 1
        rows.append((tool.tool_name, first_sentence(description), score))
    meanings = (
        similar(query, [f"{tool.replace('_', ' ')}: {line}" for tool, line, _ in rows])
        if similar is not None and rows
        else [0.0] * len(rows)
    )
    found = []
    for (tool_name, line, score), meaning in zip(rows, meanings, strict=True):
        total = score + (MEANING_WEIGHT * meaning if meaning >= floor else 0.0)
        if total > 0:
            found.append(Found(tool_name, line, round(total, 2)))
    found.sort(key=lambda f: (-f.score, f.name))
    return found[:limit]


def first_sentence(text: str, limit: int = 160) -> str:
    sentence = re.split(r"(?<=[.;!?])\s", text, maxsplit=1)[0]
    return sentence if len(sentence) <= limit else sentence[: limit - 1].rstrip() + "…"
