"""SGR Deep Research's ``agents.yaml`` (seed 004) as our agent profiles.

Its shape: ``agents:`` is a mapping of name → definition (ours is a list), with
``base_class`` (``SGRAgent`` ...), ``tools`` by class name (``WebSearchTool`` ...),
``execution`` (``max_clarifications``, ``max_iterations``), ``search`` (``max_searches``,
``max_results``, ``content_limit``), ``llm`` and ``prompts``; ``llm``, ``search``,
``execution`` and ``prompts`` at the top are every agent's defaults. Each definition becomes
an item of our own shape, which ``agents_import`` then validates and saves as usual:

* ``max_clarifications`` / ``max_searches`` → ``tool_budgets`` (clarification, web_search);
* ``max_results`` / ``content_limit`` → ``tool_limits`` of the research group (the profile
  lowers the deployment's limits, never raises them);
* what belongs to the deployment, not a profile (API keys and URLs, report and log
  directories, the LLM's connection) is left out, with a note saying where it is set here.
Anything else unknown is refused, naming it, as for our own shape.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _

from tools_app.registry import get_tool

# SGR's tool classes (seed 004) → our tools.
SGR_TOOLS = {
    "ReasoningTool": "reasoning",
    "FinalAnswerTool": "final_answer",
    "CreateReportTool": "create_report",
    "ClarificationTool": "clarification",
    "GeneratePlanTool": "generate_plan",
    "AdaptPlanTool": "adapt_plan",
    "WebSearchTool": "web_search",
    "ExtractPageContentTool": "extract_page_content",
}
_BY_LOWER = {name.lower(): ours for name, ours in SGR_TOOLS.items()}  # SGR's own tool_name
SGR_KINDS = {
    "SGRAgent": "sgr",
    "SGRToolCallingAgent": "sgr_tool_calling",
    "SGRAutoToolCallingAgent": "sgr_tool_calling",
    "SGRSOToolCallingAgent": "sgr_tool_calling",
    "ToolCallingAgent": "tool_calling",
}
_SECTIONS = ("llm", "search", "execution", "prompts")
# Keys a profile takes, per section: section → key → (our field, budget tool or limit).
_DEPLOYMENT = {
    "llm": {"api_key", "base_url", "proxy", "temperature", "max_tokens", "timeout"},
    "search": {"tavily_api_key", "tavily_api_base_url", "api_key", "base_url"},
    "execution": {"reports_dir", "logs_dir", "max_steps", "mcp_context_limit"},
    "prompts": {
        "system_prompt_file",
        "initial_user_request_file",
        "clarification_response_file",
        "initial_user_request_str",
        "clarification_response_str",
    },
}
_WHERE = {
    "llm": "Admin → Providers",
    "search": "Tools Manager → Research",
    "execution": "the deployment (reports are kept per conversation)",
    "prompts": "the profile's system prompt (files are not read)",
}


class SgrShapeError(ValueError):
    pass


def is_sgr_shape(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("agents"), dict)


def sgr_items(data: dict[str, Any], notes: list[str]) -> list[dict[str, Any]]:
    """Our import items from an SGR ``agents.yaml``; ``notes`` gets what was left out."""
    unknown = set(data) - {"agents", "mcp", *_SECTIONS}
    if unknown:
        raise SgrShapeError(_("unknown top-level keys %(sorted)s") % {"sorted": sorted(unknown)})
    if "mcp" in data:
        notes.append(_("mcp: add MCP servers in the Tools Manager (Import an MCP server)"))
    defaults = {s: data.get(s) or {} for s in _SECTIONS}
    items = []
    for name, definition in data["agents"].items():
        if not isinstance(definition, dict):
            raise SgrShapeError(_("agent %(name)s: expected a mapping") % {"name": repr(name)})
        items.append(_item(str(name), definition, defaults, notes))
    return items


def _section(name: str, definition: dict[str, Any], defaults: dict[str, Any]) -> dict[str, Any]:
    own = definition.get(name) or {}
    if not isinstance(own, dict) or not isinstance(defaults[name], dict):
        raise SgrShapeError(_("%(section)s must be a mapping") % {"section": name})
    return {**defaults[name], **own}


def _item(
    name: str, definition: dict[str, Any], defaults: dict[str, Any], notes: list[str]
) -> dict[str, Any]:
    label = repr(name)
    unknown = set(definition) - {"base_class", "tools", "description", *_SECTIONS}
    if unknown:
        raise SgrShapeError(
            _("agent %(name)s: unknown keys %(sorted)s")
            % {"name": label, "sorted": sorted(unknown)}
        )
    item: dict[str, Any] = {"name": name}
    if "description" in definition:
        item["description"] = str(definition["description"] or "")
    base = str(definition.get("base_class") or "SGRAgent").rsplit(".", 1)[-1]
    if base not in SGR_KINDS:
        raise SgrShapeError(
            _("agent %(name)s: base_class %(base)s is not one of %(known)s")
            % {"name": label, "base": repr(base), "known": ", ".join(SGR_KINDS)}
        )
    item["kind"] = SGR_KINDS[base]
    sections = {s: _section(s, definition, defaults) for s in _SECTIONS}
    taken = {
        "llm": {"model"},
        "search": {"max_searches", "max_results", "content_limit"},
        "execution": {"max_clarifications", "max_iterations"},
        "prompts": {"system_prompt_str"},
    }
    for section, values in sections.items():
        left = set(values) - taken[section] - _DEPLOYMENT[section]
        if left:
            raise SgrShapeError(
                _("agent %(name)s: unknown keys in %(section)s: %(sorted)s")
                % {"name": label, "section": section, "sorted": sorted(left)}
            )
        skipped = sorted(set(values) & _DEPLOYMENT[section])
        if skipped:
            notes.append(
                _("agent %(name)s: %(section)s %(keys)s left out: set in %(where)s")
                % {
                    "name": label,
                    "section": section,
                    "keys": ", ".join(skipped),
                    "where": _WHERE[section],
                }
            )
    if sections["llm"].get("model"):
        item["model"] = str(sections["llm"]["model"])
    if sections["prompts"].get("system_prompt_str"):
        item["system_prompt"] = str(sections["prompts"]["system_prompt_str"])
    execution, search = sections["execution"], sections["search"]
    if "max_iterations" in execution:
        iterations = execution["max_iterations"]
        item["max_iterations"] = iterations
        if isinstance(iterations, int) and iterations > 0:
            # Room to finish after the last iteration; an sgr round is reasoning + action.
            per = 1 if item["kind"] == "tool_calling" else 2
            item["max_rounds"] = per * iterations + 4
    budgets = {}
    if "max_clarifications" in execution:
        budgets["clarification"] = execution["max_clarifications"]
    if "max_searches" in search:
        budgets["web_search"] = search["max_searches"]
    if budgets:
        item["tool_budgets"] = budgets
    research = {}
    if "max_results" in search:
        research["max_results"] = search["max_results"]
    if "content_limit" in search:
        research["max_chars_per_page"] = search["content_limit"]
    if research:
        item["tool_limits"] = {"research": research}
    if "tools" in definition:
        item["tools"] = _tools(label, definition["tools"], item["kind"])
        item["all_tools"] = False
    return item


def _tools(label: str, names: Any, kind: str) -> list[str]:
    if not isinstance(names, list):
        raise SgrShapeError(_("agent %(name)s: tools must be a list") % {"name": label})
    out: list[str] = []
    for raw in names:
        text = str(raw)
        ours = SGR_TOOLS.get(text) or _BY_LOWER.get(text.lower()) or text
        if get_tool(ours) is None:
            raise SgrShapeError(
                _("agent %(name)s: unknown tool %(tool)s (SGR's are %(known)s)")
                % {"name": label, "tool": repr(text), "known": ", ".join(SGR_TOOLS)}
            )
        out.append(ours)
    if kind != "tool_calling" and "reasoning" not in out:
        out.insert(0, "reasoning")  # an SGR agent reasons before it acts: its tool is implied
    return list(dict.fromkeys(out))
