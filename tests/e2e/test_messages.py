"""Message actions in real Chromium: copy, highlighted code, regenerate, edit-and-resend and the
model switcher, at desktop and phone sizes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import expect

from chat_app.models import Provider
from tests.e2e.conftest import docs_shot, login, wait_connected
from tests.llm_server import Reply

pytestmark = [pytest.mark.e2e]

CODE_ANSWER = "Here you go:\n\n```python\ndef greet(name):\n    return f'hi {name}'\n```\n"


def _open(browser: Any, app_server: str, width: int, height: int) -> tuple[Any, Any, list[str]]:
    context = browser.new_context(
        base_url=app_server,
        viewport={"width": width, "height": height},
        permissions=["clipboard-read", "clipboard-write"],
    )
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
    page.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
    return context, page, errors


def _send(page: Any, text: str) -> None:
    page.get_by_label("Message").fill(text)
    page.keyboard.press("Enter")


def _answer(body: dict[str, Any]) -> Reply:
    last = body["messages"][-1]["content"]
    if "greeting" in last:
        return Reply(text=CODE_ANSWER)
    return Reply(text=f"Answer to: {last}")


@pytest.mark.parametrize("size", [(1280, 800), (390, 844)], ids=["desktop", "phone"])
def test_message_actions(browser, app_server, user, llm, provider, size):
    width, height = size
    Provider.objects.create(
        name="second",
        kind="openai",
        base_url=llm.openai_base_url,
        model="scripted-model",
        allowed_models=["big-model"],
    )
    llm.set_default(_answer)
    context, page, errors = _open(browser, app_server, width, height)
    try:
        login(page, "alice", "alice-password-1")
        wait_connected(page)
        _send(page, "Write a greeting function")
        answer = page.locator(".message.role-assistant").last
        code = answer.locator(".code-block pre code.hljs")
        expect(code).to_be_visible()
        expect(code.locator(".hljs-keyword", has_text="def")).to_be_visible()
        # Copy one code block, then the whole message.
        answer.locator(".code-copy").click()
        expect(answer.locator(".code-copy")).to_have_text("Copied")
        copied = page.evaluate("navigator.clipboard.readText()")
        assert copied.startswith("def greet(name):") and "```" not in copied
        answer.get_by_role("button", name="Copy text").click()
        copied = page.evaluate("navigator.clipboard.readText()")
        assert copied.startswith("Here you go:") and "```python" in copied

        # Regenerate: a second answer; the first stays one click away.
        expect(page.get_by_role("button", name="Send", exact=True)).to_be_enabled()
        answer.get_by_role("button", name="Regenerate").click()
        mine = page.locator(".message.role-user").first
        expect(mine.locator(".branch-position")).to_have_text("2/2")
        expect(page.locator(".message.role-assistant .code-block")).to_be_visible()
        expect(page.get_by_role("button", name="Send", exact=True)).to_be_enabled()
        mine.get_by_role("button", name="Previous version").click()
        expect(mine.locator(".branch-position")).to_have_text("1/2")
        expect(page.locator(".message.role-assistant")).to_have_count(1)
        mine.get_by_role("button", name="Next version").click()
        expect(mine.locator(".branch-position")).to_have_text("2/2")

        # Edit and send again: a third branch from the edited text.
        mine.get_by_role("button", name="Edit", exact=True).click()
        page.get_by_label("Edited text").fill("Say goodbye")
        docs_shot(page, f"message-edit-{width}")
        page.get_by_role("button", name="Save edit").click()
        expect(page.locator(".message.role-assistant .markdown")).to_have_text(
            "Answer to: Say goodbye"
        )
        expect(mine.locator(".branch-position")).to_have_text("3/3")
        assert llm.requests[-1]["messages"][-1]["content"] == "Say goodbye"
        assert "greeting" not in json.dumps(llm.requests[-1]["messages"])

        # The model switcher: the next answer comes from the model picked.
        page.locator("#model-choice").select_option(label="big-model")
        expect(page.locator("#model-bar")).to_contain_text("used from the next reply on")
        box = page.locator("#model-choice").bounding_box()  # the note never squeezes it away
        assert box is not None and box["width"] > 120, box
        docs_shot(page, f"model-switcher-{width}")
        _send(page, "Which model are you?")
        last = page.locator(".message.role-assistant").last
        expect(last.locator(".markdown")).to_have_text("Answer to: Which model are you?")
        expect(last.locator(".message-usage")).to_contain_text("big-model")
        assert llm.requests[-1]["model"] == "big-model"
        docs_shot(page, f"message-actions-{width}")
    finally:
        context.close()
    assert not errors, errors


def test_an_auditor_watching_live_gets_no_actions_of_the_owner(
    browser, app_server, user, staff_user, llm, provider
):
    """The live events carry the owner's message (one render for every viewer): an auditor's
    read-only page hides its versions, Edit and Regenerate as the page itself leaves them out."""
    answers = iter(range(1, 100))
    llm.set_default(lambda body: Reply(text=f"Answer {next(answers)}"))
    owner_context, owner, owner_errors = _open(browser, app_server, 1280, 800)
    auditor_context, auditor, auditor_errors = _open(browser, app_server, 1280, 800)
    try:
        login(owner, "alice", "alice-password-1")
        wait_connected(owner)
        _send(owner, "Hello")
        expect(owner.locator(".message.role-assistant .markdown")).to_have_text("Answer 1")
        conversation_path = owner.url.removeprefix(app_server)

        login(auditor, "root", "root-password-1")
        auditor.goto(conversation_path)
        wait_connected(auditor)
        expect(auditor.locator(".message.role-assistant .markdown")).to_have_text("Answer 1")

        # The owner regenerates twice: the auditor's page follows both live.
        for n in (2, 3):
            expect(owner.get_by_role("button", name="Send", exact=True)).to_be_enabled()
            owner.locator(".message.role-assistant").last.get_by_role(
                "button", name="Regenerate"
            ).click()
            expect(owner.locator(".message.role-assistant .markdown")).to_have_text(f"Answer {n}")
        expect(owner.locator(".message.role-user .branch-position")).to_have_text("3/3")
        expect(auditor.locator(".message.role-assistant .markdown")).to_have_text("Answer 3")
        for hidden in (".branch-switch", "[data-msg-action=edit]", "[data-msg-action=regenerate]"):
            expect(auditor.locator(f"#chat {hidden}:visible")).to_have_count(0)
        expect(auditor.get_by_role("button", name="Copy text").first).to_be_visible()
        assert owner_errors == [] and auditor_errors == []
    finally:
        owner_context.close()
        auditor_context.close()
