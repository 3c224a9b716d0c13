"""An agent profile can fix the language of the tool descriptions its model reads; empty
follows the conversation's language. Offered on the profile's page and in its YAML."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from chat_app.models import Agent
from chat_app.services.agents import AgentImportError, agents_export, agents_import


@pytest.fixture
def admin_client(db: None) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_user("ada", is_staff=True))
    return client


def test_the_profile_page_offers_each_language_by_its_own_name(admin_client):
    html = admin_client.get("/agents/new/").content.decode()
    assert "Tool descriptions for the model" in html
    assert '<option value="" selected>The conversation&#x27;s language' in html
    assert '<option value="ru">Русский</option>' in html
    assert '<option value="en">English</option>' in html


def test_a_profile_fixed_to_english_is_saved(admin_client):
    response = admin_client.post(
        "/agents/new/",
        {
            "name": "Ops",
            "kind": "tool_calling",
            "tool_language": "en",
            "all_tools": "on",
            "max_rounds": 0,
            "max_iterations": 0,
            "max_calls_per_turn": 10,
            "max_calls_per_conversation": 200,
            "tool_budgets": "",
        },
    )
    assert response.status_code == 302
    assert Agent.objects.get(name="Ops").tool_language == "en"


def test_the_yaml_carries_the_language_and_refuses_an_unknown_one(db):
    Agent.objects.create(name="Russian tools", tool_language="ru")
    assert "tool_language: ru" in agents_export()
    agents_import("agents:\n- name: Fixed\n  tool_language: en\n")
    assert Agent.objects.get(name="Fixed").tool_language == "en"
    with pytest.raises(AgentImportError, match="tool_language must be one of en, ru"):
        agents_import("agents:\n- name: Bad\n  tool_language: xx\n")
    assert not Agent.objects.filter(name="Bad").exists()
