"""Seed 004's SGR ``agents.yaml`` imports (tool names mapped, per-agent search limits,
deployment keys left out with a note); a profile's limits only ever lower the deployment's,
when its calls run; the Researcher has the seed's defaults and research warnings."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.management import call_command

from chat_app.agent_profiles import RESEARCHER_PROMPT
from chat_app.models import Agent, Conversation
from chat_app.services.agents import (
    AgentImportError,
    agents_export,
    agents_import,
    researcher_ensure,
)
from tests.tools.calls import ok, run_tool
from tests.tools.conftest import configure
from tools_app.registry import get_tool, override_activity

pytestmark = pytest.mark.django_db(transaction=True)

# The seed's "Конфигурация тулов в агентах" block, with its search example's keys.
SEED_YAML = """
search:
  tavily_api_key: "your-tavily-api-key"
  tavily_api_base_url: "https://api.tavily.com"
agents:
  my_agent:
    base_class: "SGRAgent"
    tools:
      - "WebSearchTool"
      - "ExtractPageContentTool"
      - "CreateReportTool"
      - "ClarificationTool"
      - "GeneratePlanTool"
      - "AdaptPlanTool"
      - "FinalAnswerTool"
    execution:
      max_clarifications: 3
      max_iterations: 10
    search:
      max_searches: 4
      max_results: 10
      content_limit: 1500
  research_agent:
    base_class: "sgr_agent_core.agents.SGRToolCallingAgent"
    llm:
      model: "gpt-4o-mini"
      api_key: "sk-not-imported"
    search:
      max_searches: 6
      max_results: 15
    tools:
      - "WebSearchTool"
"""


def test_it_imports_the_seeds_agents_yaml():
    notes: list[str] = []
    saved = {a.name: a for a in agents_import(SEED_YAML, notes=notes)}
    mine = saved["my_agent"]
    assert (mine.kind, mine.all_tools, mine.max_iterations) == ("sgr", False, 10)
    assert mine.tools == [
        "reasoning",  # an SGRAgent reasons first: implied
        "web_search",
        "extract_page_content",
        "create_report",
        "clarification",
        "generate_plan",
        "adapt_plan",
        "final_answer",
    ]
    assert mine.tool_budgets == {"clarification": 3, "web_search": 4}
    assert mine.tool_limits == {"research": {"max_results": 10, "max_chars_per_page": 1500}}
    other = saved["research_agent"]
    assert (other.kind, other.model) == ("sgr_tool_calling", "gpt-4o-mini")
    assert other.tool_budgets == {"web_search": 6}
    assert other.tool_limits == {"research": {"max_results": 15}}
    # Keys and secrets of the deployment never land on a profile; the notes say where.
    assert "sk-not-imported" not in agents_export() and "tavily" not in agents_export()
    assert any("tavily_api_key" in n and "Tools Manager" in n for n in notes)
    assert any("api_key" in n and "Providers" in n for n in notes)


def test_the_command_imports_it_and_prints_the_notes(tmp_path, capsys):
    path = tmp_path / "agents.yaml"
    path.write_text(SEED_YAML)
    call_command("agents", "import", str(path))
    out = capsys.readouterr().out
    assert "imported 2 agent(s): my_agent, research_agent" in out
    assert "note: " in out and "tavily_api_key" in out


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("agents:\n  a:\n    tools: [TeleportTool]\n", "unknown tool 'TeleportTool'"),
        ("agents:\n  a:\n    colour: red\n", "unknown keys ['colour']"),
        ("agents:\n  a:\n    search: {max_pages: 3}\n", "unknown keys in search: ['max_pages']"),
        ("agents:\n  a:\n    base_class: MagicAgent\n", "base_class 'MagicAgent'"),
        ("agents:\n  a:\n    search: {max_results: 0}\n", "a whole number, 1 or more"),
        ("version: 2\nagents:\n  a: {}\n", "unknown top-level keys ['version']"),
    ],
)
def test_it_refuses_what_it_cannot_read_saying_what(text, message):
    with pytest.raises(AgentImportError, match=message.replace("[", r"\[").replace("]", r"\]")):
        agents_import(text)
    assert not Agent.objects.filter(name="a").exists()


def test_our_own_shape_round_trips_the_limits():
    agents_import(SEED_YAML)
    exported = agents_export()
    Agent.objects.all().delete()
    agents_import(exported)
    assert Agent.objects.get(name="my_agent").tool_limits == {
        "research": {"max_results": 10, "max_chars_per_page": 1500}
    }


@pytest.mark.parametrize(
    "limits",
    [
        {"shell": {"calls_per_minute": 1}},  # 0 means unlimited there: not a limit to lower
        {"research": {"search_url": 1}},
        {"nothing": {"max_results": 1}},
        {"research": {"max_results": "5"}},
        ["research"],
    ],
)
def test_a_profile_takes_only_limits_it_can_lower(limits):
    with pytest.raises(AgentImportError, match="agent 'bad': tool_limits: "):
        agents_import(f"agents:\n- name: bad\n  tool_limits: {limits!r}\n".replace("'", '"'))


def _seen_settings(args: Any, ctx: Any) -> dict[str, Any]:
    return {"max_results": ctx.settings.max_results, "chars": ctx.settings.max_chars_per_page}


def test_a_call_runs_under_its_profiles_lower_limits_never_higher(user):
    configure("research", max_results=8, max_chars_per_page=5000)
    low = Agent.objects.create(
        name="low", tool_limits={"research": {"max_results": 3, "max_chars_per_page": 1500}}
    )
    high = Agent.objects.create(
        name="high", tool_limits={"research": {"max_results": 10, "max_chars_per_page": 90_000}}
    )
    plain = Agent.objects.create(name="plain")
    seen = {}
    with override_activity("web_search", _seen_settings):
        for agent in (low, high, plain):
            conversation = Conversation.objects.create(owner=user, agent=agent)
            call = run_tool(
                "web_search", user=user, conversation_id=conversation.pk, query="x", reasoning="y"
            )
            seen[agent.name] = ok(call)
        outside = ok(run_tool("web_search", user=user, query="x", reasoning="y"))
    assert seen["low"]["max_results"] == 3 and seen["low"]["chars"] == 1500
    assert seen["high"]["max_results"] == 8 and seen["high"]["chars"] == 5000
    assert seen["plain"]["max_results"] == 8 and outside["max_results"] == 8


def test_the_researcher_has_the_seeds_defaults_and_warnings():
    researcher = researcher_ensure()
    assert researcher.tool_budgets == {"clarification": 3, "web_search": 4}
    assert "OTHER years or periods" in RESEARCHER_PROMPT
    assert "prefer the snippet" in researcher.system_prompt
    extract = get_tool("extract_page_content").description()
    assert "other years or periods" in extract and "prefer the snippet" in extract
    assert "Snippets often hold the direct answer" in get_tool("web_search").description()
