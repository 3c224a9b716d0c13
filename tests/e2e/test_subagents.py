"""A person asks for something the agent hands to a helper: the subagent_spawn card says
"started" and links to the helper's conversation while the helper still works; the helper's
answer then arrives live in the person's conversation as a Subagent result (real Chromium,
server, runner and workers; the model is the scripted one)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from playwright.sync_api import expect

from platform_app.models import Subagent
from tests.e2e.conftest import login, wait_connected
from tests.llm_server import Call, Reply

pytestmark = [pytest.mark.e2e, pytest.mark.modes]

TASK = "Count the moons of Mars."


def test_a_subagent_starts_and_its_answer_arrives_later(page, user, llm, provider):
    gate = threading.Event()

    def model(body: dict[str, Any]) -> Reply:
        users = [m["content"] for m in body["messages"] if m["role"] == "user"]
        if users and users[0].startswith(TASK):
            assert gate.wait(30)
            return Reply(text="Mars has **two** moons: Phobos and Deimos.")
        if not any(m["role"] == "tool" for m in body["messages"]):
            spawn = {"name": "astronomer", "message": TASK, "inject_into": "parent"}
            return Reply(calls=[Call("subagent_spawn", spawn)])
        return Reply(text="I asked a helper; its answer will appear here.")

    llm.set_default(model)
    login(page, "alice", "alice-password-1")
    wait_connected(page)
    page.get_by_label("Message").fill("How many moons does Mars have?")
    page.keyboard.press("Enter")
    spawned = page.locator(".toolcall", has=page.locator(".tool-name", has_text="subagent_spawn"))
    expect(spawned.locator(".status-word")).to_have_text("succeeded")
    expect(page.locator(".message.role-assistant").last).to_contain_text("I asked a helper")
    link = spawned.get_by_role("link", name="Open the subagent's conversation (astronomer)")
    child = Subagent.objects.get(name="astronomer").conversation_id
    expect(link).to_have_attribute("href", f"/c/{child}/")
    assert Subagent.objects.get(name="astronomer").status == "running"

    gate.set()
    result = page.locator(".message.origin-subagent")
    expect(result.locator(".who")).to_have_text("Subagent result", timeout=20_000)
    expect(result).to_contain_text("Subagent “astronomer” finished")
    expect(result.locator("strong", has_text="two")).to_be_visible()
    page.screenshot(path="var/test-subagents-e2e.png", full_page=True)

    link.click()
    page.wait_for_url(f"**/c/{child}/")
    expect(page.locator(".message.origin-task")).to_contain_text(TASK)
    expect(page.locator(".message.role-assistant")).to_contain_text("Phobos and Deimos")
