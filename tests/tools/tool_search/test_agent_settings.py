"""The agent-profile page sets tool search per profile: the schema budget and the always-on
tools (names checked against the registered tools); a client that leaves them out keeps them.
The YAML export carries both."""

from __future__ import annotations

from typing import Any

import pytest

from chat_app.models import Agent
from chat_app.services.agents import agent_default, agents_export
from tests.admin_pages.test_agents import _form

pytestmark = [pytest.mark.django_db]


def test_it_saves_the_budget_and_the_always_on_tools(admin_client: Any) -> None:
    agent_default()
    page = admin_client.get("/agents/new/").content.decode()
    assert 'name="tool_schema_budget"' in page and 'name="always_on"' in page
    response = admin_client.post(
        "/agents/new/",
        {
            **_form(tool_schema_budget=600, always_on="current_time, file_read"),
            "all_tools": "on",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    agent = Agent.objects.get(name="Ops")
    assert agent.tool_schema_budget == 600
    assert agent.always_on_tools == ["current_time", "file_read"]
    assert (
        'value="current_time file_read"'
        in admin_client.get(f"/agents/{agent.pk}/").content.decode()
    )
    # Left out (an older page, a script): both stay as they were.
    response = admin_client.post(f"/agents/{agent.pk}/", {**_form(), "all_tools": "on"})
    assert response.status_code == 302
    agent.refresh_from_db()
    assert (agent.tool_schema_budget, agent.always_on_tools) == (600, ["current_time", "file_read"])
    assert "always_on_tools" in agents_export() and "tool_schema_budget" in agents_export()


def test_an_unknown_always_on_tool_is_refused(admin_client: Any) -> None:
    agent_default()
    response = admin_client.post(
        "/agents/new/", {**_form(always_on="current_time no_such_tool"), "all_tools": "on"}
    )
    assert response.status_code == 400  # the form again, with the error
    assert "no tool named no_such_tool" in response.content.decode()
    assert not Agent.objects.filter(name="Ops").exists()
