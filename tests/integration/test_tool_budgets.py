"""Per-tool budgets are data (``Agent.tool_budgets``, tool name → calls per turn): any tool
can be given one, the old ``max_clarifications`` / ``max_searches`` columns and YAML keys
carry over, and the admin shows and checks them."""

from __future__ import annotations

from importlib import import_module

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from chat_app.agent_kinds import kind_for
from chat_app.models import Agent, Conversation, Turn
from chat_app.services.agents import (
    AgentImportError,
    agents_export,
    agents_import,
    researcher_ensure,
)
from tools_app.registry import get_tool
from tools_app.runtime import BindContext
from tools_app.services.binding import CallRequest, toolcall_bind

pytestmark = pytest.mark.modes  # JSON and the migration on SQLite and PostgreSQL


def test_it_limits_any_tool_by_its_budget(user):
    agent = Agent.objects.create(
        name="Clock",
        all_tools=False,
        tools=["current_time"],
        tool_budgets={"current_time": 1},
    )
    conversation = Conversation.objects.create(owner=user, agent=agent)
    turn = Turn.objects.create(conversation=conversation, user=user)
    tools = [get_tool("current_time")]
    offer = kind_for(agent).offer(turn, tools)
    assert [t.tool_name for t in offer.tools] == ["current_time"]
    assert "current_time 0 of 1" in offer.note
    ctx = BindContext(user_id=user.pk, conversation_id=conversation.pk, source="chat")
    statuses = []
    for i in range(2):
        call = toolcall_bind(
            request=CallRequest(tool="current_time", arguments={}, index=i),
            ctx=ctx,
            turn_id=turn.pk,
            allowed_tools=["current_time"],
            unavailable=offer.unavailable,
        )
        offer.bound(call)
        statuses.append(call.status)
    assert statuses == ["queued", "denied"]
    assert "the limit of 1 calls for this turn is spent" in call.error
    assert kind_for(agent).offer(turn, tools).tools == []  # the next round: not offered


def test_the_researcher_keeps_its_budgets(db):
    assert researcher_ensure().tool_budgets == {"clarification": 3, "web_search": 4}


def test_a_new_profile_may_ask_three_clarifications(db):
    assert Agent.objects.create(name="New").tool_budgets == {"clarification": 3}


@pytest.mark.parametrize(
    "budgets", [5, {"web_search": -1}, {"web_search": "8"}, {"web_search": True}, {" ": 2}]
)
def test_it_refuses_a_budget_that_is_not_calls_per_tool(db, budgets):
    with pytest.raises(ValidationError):
        Agent(name="Bad", tool_budgets=budgets).full_clean()


def test_yaml_writes_tool_budgets(db):
    Agent.objects.create(name="Dev", tool_budgets={"web_search": 4})
    text = agents_export()
    assert "tool_budgets:" in text and "max_searches" not in text
    Agent.objects.all().delete()
    agents = {a.name: a for a in agents_import(text)}
    assert agents["Dev"].tool_budgets == {"web_search": 4}


def test_yaml_of_the_old_keys_still_imports(db):
    old = (
        "agents:\n"
        "- name: Old\n  max_clarifications: 0\n  max_searches: 5\n"
        "- name: Searcher\n  max_searches: 2\n"
    )
    agents = {a.name: a for a in agents_import(old)}
    assert agents["Old"].tool_budgets == {"web_search": 5}  # 0 was "no limit"
    assert agents["Searcher"].tool_budgets == {"clarification": 3, "web_search": 2}
    agents_import("agents:\n- name: Searcher\n  max_searches: 0\n")
    assert Agent.objects.get(name="Searcher").tool_budgets == {"clarification": 3}
    with pytest.raises(AgentImportError, match="not both"):
        agents_import("agents:\n- name: X\n  max_searches: 1\n  tool_budgets: {}\n")


def test_the_admin_shows_and_saves_tool_budgets(admin_client, db):
    researcher_ensure()
    page = admin_client.get("/admin/chat_app/agent/").content.decode()
    assert "clarification 3, web_search 4" in page
    data = {
        "name": "Budgeted",
        "description": "",
        "system_prompt": "",
        "model": "",
        "all_tools": "on",
        "tools": "[]",
        "max_rounds": 0,
        "max_calls_per_turn": 10,
        "max_calls_per_conversation": 200,
        "kind": "tool_calling",
        "max_iterations": 0,
        "tool_budgets": '{"web_search": -2}',
        "untrusted_sinks": "approval",
        # What the admin's form shows prefilled (tool search, issue 38).
        "tool_schema_budget": 1000,
        "always_on_tools": "[]",
    }
    refused = admin_client.post("/admin/chat_app/agent/add/", data)
    assert refused.status_code == 200 and "0 or more" in refused.content.decode()
    saved = admin_client.post(
        "/admin/chat_app/agent/add/", {**data, "tool_budgets": '{"http_request": 3}'}
    )
    assert saved.status_code == 302, saved.content.decode()[:2000]
    assert Agent.objects.get(name="Budgeted").tool_budgets == {"http_request": 3}


@pytest.mark.django_db(transaction=True)
def test_the_migration_moves_the_columns_into_tool_budgets():
    before, after = (
        [("chat_app", "0009_provider_allowed_models")],
        [("chat_app", "0010_agent_tool_budgets")],
    )
    executor = MigrationExecutor(connection)
    try:
        executor.migrate(before)
        old = MigrationExecutor(connection).loader.project_state(before).apps
        OldAgent = old.get_model("chat_app", "Agent")
        OldAgent.objects.create(name="Limited", max_clarifications=1, max_searches=6)
        OldAgent.objects.create(name="Unlimited", max_clarifications=0, max_searches=0)
        shipped = import_module("chat_app.migrations.0006_agent_kinds_limits_and_plan")
        shipped._researcher(old, None)  # as a fresh database has it
        executor = MigrationExecutor(connection)
        executor.migrate(after)
        new = executor.loader.project_state(after).apps.get_model("chat_app", "Agent")
        budgets = dict(new.objects.values_list("name", "tool_budgets"))
        assert budgets["Limited"] == {"clarification": 1, "web_search": 6}
        assert budgets["Unlimited"] == {}
        assert budgets["Researcher"] == {"clarification": 3, "web_search": 4}
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
