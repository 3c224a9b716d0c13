"""Members' own agents and prompts in real Chromium (issue 39, item 9), at a laptop's and a
phone's width, light and dark: alice builds an agent from her grants and shares it with
"support", and a prompt with it; carol (support) picks the agent in the chat and inserts the
prompt from the message box's "/" menu; bob (sales) sees neither.

Screenshots for the docs through ``docs_shot``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from chat_app.models import Agent, Prompt
from tests.e2e.conftest import docs_shot, login, wait_connected
from tests.e2e.test_layout import axe_violations
from tests.library.conftest import teams_make

pytestmark = [pytest.mark.e2e]

SIZES = {1280: {"width": 1280, "height": 800}, 390: {"width": 390, "height": 844}}
BODY = "Summarise yesterday's tickets: what was solved, what waits on whom."


@pytest.fixture
def teams(user: Any, other_user: Any) -> dict[str, Any]:
    return teams_make(user, other_user)


@pytest.fixture
def open_page(browser: Any, app_server: str) -> Iterator[Any]:
    contexts: list[Any] = []
    errors: list[str] = []

    def opened(viewport: dict[str, int]) -> Any:
        context = browser.new_context(base_url=app_server, viewport=viewport)
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(15_000)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        return page

    yield opened
    for context in contexts:
        context.close()
    assert not errors, errors


def _shots(page: Any, name: str) -> list[str]:
    """Light and dark, each checked by axe."""
    page.evaluate("document.documentElement.dataset.theme = 'light'")
    docs_shot(page, name, full_page=True)
    problems = axe_violations(page)
    page.evaluate("document.documentElement.dataset.theme = 'dark'")
    docs_shot(page, f"{name.rsplit('-', 1)[0]}-dark-{name.rsplit('-', 1)[1]}", full_page=True)
    problems += [f"dark: {p}" for p in axe_violations(page)]
    page.evaluate("document.documentElement.dataset.theme = 'light'")
    return problems


def test_a_member_builds_and_shares_an_agent_and_a_prompt(open_page, teams):
    problems: list[str] = []
    for width, viewport in SIZES.items():
        name, shortcut = f"Helpdesk {width}", f"standup{width}"

        # alice builds the agent from what she is granted, shared with support.
        page = open_page(viewport)
        login(page, "alice", "alice-password-1")
        page.goto("/my/agents/")
        form = page.get_by_role("form", name="New agent")
        expect(form.get_by_label("shell_exec")).to_have_count(0)  # not granted to her
        form.get_by_label("Name").fill(name)
        form.get_by_label("Description").fill("Answers the support queue")
        form.get_by_label("System prompt").fill("Answer briefly; cite the ticket number.")
        form.get_by_label("current_time").check()
        form.get_by_label("memory_search").check()
        form.get_by_label("support").check()
        form.get_by_role("button", name="Save agent").click()
        expect(page.get_by_text(f"Agent “{name}” saved.")).to_be_visible()
        mine = page.get_by_role("list", name="Your agents")
        expect(mine.locator("li", has_text=name).get_by_text("shared with support")).to_be_visible()
        agent = Agent.objects.get(name=name)
        assert agent.owner_id == teams["alice"].pk
        assert sorted(agent.tools) == ["current_time", "memory_search"]
        problems += _shots(page, f"my-agents-{width}")

        # ... and a prompt, shared the same way.
        page.goto("/my/prompts/")
        form = page.get_by_role("form", name="New prompt")
        form.get_by_label("Title").fill(f"Daily standup {width}")
        form.get_by_label("Shortcut (optional)").fill(shortcut)
        form.get_by_label("Text").fill(BODY)
        form.get_by_label("support").check()
        form.get_by_role("button", name="Save prompt").click()
        expect(page.get_by_text(f"Prompt “Daily standup {width}” saved.")).to_be_visible()
        assert Prompt.objects.filter(shortcut=shortcut).exists()
        problems += _shots(page, f"my-prompts-{width}")

        # carol (support) picks the agent in the chat and inserts the prompt from "/".
        page = open_page(viewport)
        login(page, "carol", "carol-password-1")
        wait_connected(page)
        picker = page.get_by_label("Agent", exact=True)
        picker.select_option(label=f"{name} (by alice)")
        expect(page.locator("#agent-bar").get_by_text("saved")).to_be_visible()
        box = page.get_by_label("Message")
        box.fill(f"/{shortcut}")
        menu = page.get_by_role("listbox", name="Commands and prompts")
        expect(menu).to_be_visible()
        expect(menu.get_by_role("option").first).to_contain_text(f"Daily standup {width}")
        expect(menu.get_by_role("option").first).to_contain_text("by alice")
        problems += _shots(page, f"slash-menu-{width}")
        box.press("Enter")
        expect(menu).to_be_hidden()
        expect(box).to_have_value(BODY)
        # A slash command from the same menu: "/cur" finds current_time.
        box.fill("/cur")
        expect(menu.get_by_role("option", name="/current_time")).to_be_visible()
        menu.get_by_role("option", name="/current_time").click()
        expect(box).to_have_value("/current_time ")

        # bob (sales) sees neither.
        page = open_page(viewport)
        login(page, "bob", "bob-password-1")
        wait_connected(page)
        options = page.get_by_label("Agent", exact=True).locator("option")
        expect(options.filter(has_text="Helpdesk")).to_have_count(0)
        box = page.get_by_label("Message")
        box.fill("/")
        expect(page.get_by_role("listbox", name="Commands and prompts")).to_be_visible()
        expect(page.get_by_role("option", name="Daily standup")).to_have_count(0)
        # A command typed out in full is sent by Enter, menu or not. (The first size's answer
        # is already in bob's conversation: the new one is counted, not merely found.)
        answers = page.locator(".message").get_by_text("Slash commands")
        before = answers.count()
        box.fill("/help")
        box.press("Enter")
        expect(answers).to_have_count(before + 1)
        expect(answers.last).to_be_visible()
        expect(box).to_have_value("")
        page.goto("/my/agents/")
        expect(page.get_by_text("Nobody has shared an agent with your groups yet.")).to_be_visible()
        expect(page.get_by_text("Helpdesk")).to_have_count(0)

    # An admin closes "support" to sharing on its page: carol no longer finds the agents.
    get_user_model().objects.create_superuser("ada", password="ada-password-1")
    page = open_page(SIZES[1280])
    login(page, "ada", "ada-password-1")
    page.goto(f"/people/groups/{teams['support'].pk}/")
    page.get_by_role("button", name="Forbid sharing with this group").click()
    expect(page.get_by_text("Members may no longer share agents and prompts")).to_be_visible()
    expect(page.get_by_role("button", name="Allow sharing with this group")).to_be_visible()
    problems += _shots(page, "group-sharing-1280")
    page = open_page(SIZES[1280])
    login(page, "carol", "carol-password-1")
    page.goto("/my/agents/")
    expect(page.get_by_text("Nobody has shared an agent with your groups yet.")).to_be_visible()
    assert not problems, "\n".join(problems)
