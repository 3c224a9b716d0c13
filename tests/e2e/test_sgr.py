"""A person working with the Researcher (a schema-guided agent) in real Chromium: the turn
pauses on a clarification with the questions shown and the input focused, the answer resumes
it, the plan checklist follows live, and the report downloads from its card."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from playwright.sync_api import expect

from chat_app.models import Conversation
from chat_app.services.agents import researcher_ensure
from tests.e2e.conftest import login, wait_connected
from tests.integration.test_sgr import (
    ADAPT,
    CLARIFY,
    FINAL,
    PLAN,
    REPORT,
    REPORT_TEXT,
    TOOLS,
    think,
)
from tests.llm_server import Reply
from tools_app.runtime import workspace_dir_for, workspace_id_for

pytestmark = [pytest.mark.e2e, pytest.mark.modes]


def card(page, tool: str):
    return page.locator(".toolcall", has=page.locator(".tool-name", has_text=tool))


def test_a_person_answers_a_clarification_and_downloads_the_report(page, user, llm, provider):
    agent = researcher_ensure()
    agent.tools = TOOLS
    agent.save()
    conversation = Conversation.objects.create(owner=user, title="Research", agent=agent)
    workspace = workspace_dir_for(workspace_id_for(conversation_id=conversation.pk, user_id=None))
    shutil.rmtree(workspace / "reports", ignore_errors=True)  # ids repeat after a flush
    llm.script(
        Reply(calls=[think("ambiguous")], chunk_delay=0.01),
        Reply(text="One question first.", calls=[CLARIFY], chunk_delay=0.01),
    )
    login(page, "alice", "alice-password-1")
    wait_connected(page)
    message = page.get_by_label("Message")
    message.fill("Tell me about jaguar")
    page.get_by_role("button", name="Send").click()

    question = card(page, "clarification")
    expect(question.locator(".status-word")).to_have_text("waiting for your answer")
    expect(question.locator(".clarify-questions")).to_contain_text(
        "Do you mean the car maker or the animal?"
    )
    expect(card(page, "reasoning").locator(".agent-steps li")).to_have_count(2)
    expect(message).to_be_focused()
    expect(page.get_by_role("button", name="Send")).to_be_enabled()
    expect(page.get_by_role("button", name="Stop")).to_be_visible()
    page.screenshot(path="var/test-sgr-clarification.png", full_page=True)
    page.reload()  # the pause survives a reload: still answerable, input focused
    wait_connected(page)
    expect(question.locator(".status-word")).to_have_text("waiting for your answer")
    expect(message).to_be_focused()
    expect(page.get_by_role("button", name="Send")).to_be_enabled()

    llm.script(
        Reply(calls=[think("the car maker")], chunk_delay=0.01),
        Reply(calls=[PLAN], chunk_delay=0.01),
        Reply(calls=[think("plan made")], chunk_delay=0.01),
        Reply(calls=[ADAPT, REPORT], chunk_delay=0.01),
        Reply(calls=[think("report written")], chunk_delay=0.01),
        Reply(calls=[FINAL], chunk_delay=0.01),
    )
    message.fill("The car maker")
    message.press("Enter")
    expect(question.locator(".clarify-answer")).to_contain_text("The car maker")
    expect(page.locator(".message.role-assistant .markdown").last).to_contain_text(
        "Jaguar is a car maker; the report has the details.", timeout=30_000
    )
    expect(page.get_by_role("button", name="Stop")).to_be_hidden()
    plan = page.locator("#plan-area .plan-panel")
    expect(plan).to_contain_text("Report on Jaguar cars")
    expect(plan.locator(".plan-step.done")).to_have_count(1)
    expect(plan.locator(".plan-budget")).to_have_text("4 of 10 iterations used")
    expect(plan.locator(".plan-state")).to_have_text("completed")
    report_card = card(page, "create_report")
    expect(report_card.locator(".report-meta")).to_contain_text("11 words · 1 source ·")
    expect(page.locator("#reports-list a")).to_have_count(1)
    page.screenshot(path="var/test-sgr-report.png", full_page=True)
    report_card.screenshot(path="var/test-sgr-report-card.png")

    with page.expect_download() as info:
        report_card.get_by_role("link", name="Download").click()
    download = info.value
    assert download.suggested_filename.endswith("_Jaguar_cars.md")
    assert Path(download.path()).read_text() == REPORT_TEXT
