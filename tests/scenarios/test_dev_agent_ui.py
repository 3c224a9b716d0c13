"""The coding-agent scenario as a person sees it: typed into the chat page in real Chromium,
watched card by card while the real server, worker and sandbox do the work."""

from __future__ import annotations

import threading

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import login, wait_connected
from tests.scenarios.agent import assert_no_surprises, scripted_agent
from tests.scenarios.plans import DONE, SUBJECT, TASK, native_plan
from tests.scenarios.workspace import git, workspace_of

pytestmark = [pytest.mark.e2e, pytest.mark.modes]

SCREENSHOT = "var/scenario-dev.png"


def screenshot_whole_conversation(page) -> None:
    """The message list scrolls inside the page, so a full-page shot would show only its
    end: grow the viewport until the list fits, then take it."""
    overflow = page.evaluate(
        "(() => { const m = document.getElementById('messages');"
        " return m.scrollHeight - m.clientHeight; })()"
    )
    size = page.viewport_size
    page.set_viewport_size({"width": size["width"], "height": size["height"] + overflow})
    page.screenshot(path=SCREENSHOT, full_page=True)


def cards(page, tool: str):
    return page.locator(".toolcall", has=page.locator(".tool-name", has_text=tool))


def test_a_person_watches_the_agent_fix_the_code_and_commit(
    page, user, dev_conversation, llm, provider
):
    plan = native_plan()
    seen_failure = threading.Event()
    fix = next(step for step in plan if step.name == "fix the code")
    fix.gate = seen_failure  # the agent goes on only once the page showed the failed run
    scripted_agent(llm, plan, dialect="openai", task=TASK)

    login(page, "alice", "alice-password-1")
    page.goto(f"/c/{dev_conversation.pk}/")
    wait_connected(page)
    page.get_by_label("Message").fill(TASK)
    page.get_by_role("button", name="Send").click()

    runs = cards(page, "run_tests")
    expect(runs.nth(0).locator(".status-word")).to_have_text("failed", timeout=60_000)
    expect(runs.nth(0).locator(".toolcall-error")).to_contain_text("tests failed: 1 failed")
    expect(runs.nth(0).locator(".toolcall-output")).to_contain_text("assert -1 == 5")
    expect(page.get_by_role("button", name="Stop")).to_be_visible()  # the turn goes on
    seen_failure.set()

    expect(runs.nth(1).locator(".status-word")).to_have_text("succeeded", timeout=30_000)
    commit = cards(page, "git_commit")
    expect(commit.locator(".status-word")).to_have_text("succeeded")
    expect(page.get_by_text(DONE)).to_be_visible()
    expect(page.get_by_role("button", name="Stop")).to_be_hidden()
    expect(runs).to_have_count(2)
    expect(cards(page, "write_file")).to_have_count(3)
    expect(cards(page, "write_file").locator(".status-word")).to_have_text(["succeeded"] * 3)
    expect(cards(page, "git_add").locator(".status-word")).to_have_text("succeeded")
    runs.nth(0).locator(".toolcall-details summary").click()  # show the failure's output
    expect(runs.nth(0).locator(".toolcall-result")).to_contain_text('"returncode": 1')
    screenshot_whole_conversation(page)

    assert_no_surprises(llm)
    assert git(workspace_of(dev_conversation), "log", "--format=%s").splitlines() == [SUBJECT]
