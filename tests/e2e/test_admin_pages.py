"""An admin adds a provider that points at the scripted LLM server, tests the connection
(models, latency, native tool calls) and builds an agent profile with the tool checkboxes;
at 1280x800 and 390x844, with screenshots for the docs (``docs_shot``)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from chat_app.models import Agent, Provider
from tests.e2e.conftest import docs_shot, login, wait_connected
from tests.llm_server import Call, Reply, ScriptedLLM

pytestmark = [pytest.mark.e2e]

KEY = "sk-e2e-admin-key-0001"
WIDE = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


def shot(page: Any, name: str) -> None:
    docs_shot(page, name, full_page=True)


def no_sideways_scroll(page: Any) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], f"the page is {width}px wide"


@pytest.fixture
def admin(transactional_db: None) -> Any:
    return get_user_model().objects.create_user("ada", password="ada-password-1", is_staff=True)


def test_an_admin_adds_a_provider_tests_it_and_builds_an_agent(page, admin):
    with ScriptedLLM(api_key=KEY, extra_models=("scripted-mini",)) as llm:
        llm.script(Reply(calls=[Call("connection_test", {})]))
        page.set_viewport_size(WIDE)
        login(page, "ada", "ada-password-1")
        wait_connected(page)
        page.get_by_role("navigation", name="Main").get_by_role("link", name="Agents").click()
        expect(page.get_by_role("heading", name="Agent profiles", exact=True)).to_be_visible()
        page.get_by_role("navigation", name="Agents").get_by_role("link", name="Providers").click()
        page.get_by_role("link", name="Add provider").click()
        page.get_by_label("Name", exact=True).fill("Scripted")
        page.get_by_label("Kind", exact=True).select_option("openai")
        page.get_by_label("Base URL", exact=True).fill(llm.openai_base_url)
        page.get_by_label("API key", exact=True).fill(KEY)
        page.get_by_label("Default model", exact=True).fill("scripted-model")
        page.get_by_label("Other allowed models", exact=True).fill("scripted-mini")
        page.get_by_label("Temperature", exact=True).fill("0")
        page.get_by_label("Longest reply (tokens)", exact=True).fill("512")
        page.get_by_role("checkbox", name="Default provider").check()
        page.get_by_role("button", name="Add provider").click()
        expect(page.get_by_text("Saved provider Scripted.")).to_be_visible()
        expect(page.get_by_label("Temperature", exact=True)).to_have_value("0.0")
        expect(page.get_by_label("Longest reply (tokens)", exact=True)).to_have_value("512")
        assert KEY not in page.content()

        page.get_by_role("button", name="Test connection").click()
        result = page.locator(".probe-result")
        expect(result).to_contain_text("Connected.")
        expect(result).to_contain_text("2 listed in")
        expect(result).to_contain_text("native tool calls work")
        expect(result.get_by_role("list", name="Models the endpoint lists")).to_contain_text(
            "scripted-mini"
        )
        assert KEY not in page.content()
        assert llm.requests[-1]["tools"][0]["function"]["name"] == "connection_test"
        assert (llm.requests[-1]["temperature"], llm.requests[-1]["max_tokens"]) == (0.0, 64)
        shot(page, "provider-test-1280")
        page.set_viewport_size(PHONE)
        no_sideways_scroll(page)
        shot(page, "provider-test-390")
        page.set_viewport_size(WIDE)

        page.get_by_role("link", name="Providers", exact=True).first.click()
        expect(page.locator(".providers-table")).to_contain_text("Scripted")
        shot(page, "providers-1280")
        page.set_viewport_size(PHONE)
        no_sideways_scroll(page)
        shot(page, "providers-390")
        page.set_viewport_size(WIDE)

        # An agent profile with the Memory group and one single function.
        page.get_by_role("navigation", name="Agents").get_by_role(
            "link", name="Agent profiles"
        ).click()
        page.get_by_role("link", name="Add agent profile").click()
        page.get_by_label("Name", exact=True).fill("Notes")
        page.get_by_label("Provider", exact=True).select_option(label="Scripted · scripted-model")
        tools = page.locator("[data-tool-groups]")
        expect(tools).to_be_hidden()  # every enabled tool, by default
        page.get_by_role("checkbox", name="Every enabled tool").uncheck()
        expect(tools).to_be_visible()
        page.locator("#group-memory").check()
        expect(page.locator("#tool-memory_search")).to_be_checked()  # the group ticks its own
        page.locator("#tool-current_time").check()
        page.locator("#tool-web_search").check()
        expect(page.locator("#group-research")).to_have_js_property("indeterminate", True)
        shot(page, "agent-editor-1280")
        page.set_viewport_size(PHONE)
        no_sideways_scroll(page)
        shot(page, "agent-editor-390")
        page.get_by_role("button", name="Add agent profile").click()
        expect(page.get_by_text("Saved agent profile Notes.")).to_be_visible()
        expect(page.locator("#tool-memory_save")).to_be_checked()
        expect(page.locator("#group-memory")).to_be_checked()
        page.get_by_role("link", name="Agent profiles").first.click()
        expect(page.locator(".agents-table")).to_contain_text("Notes")
        no_sideways_scroll(page)
        shot(page, "agents-390")
        page.set_viewport_size(WIDE)
        shot(page, "agents-1280")

    agent = Agent.objects.get(name="Notes")
    assert agent.provider == Provider.objects.get(name="Scripted", is_default=True)
    assert not agent.all_tools and "memory_core_update" in agent.tools
    assert {"current_time", "web_search"} <= set(agent.tools) and "shell_exec" not in agent.tools
