"""Message actions in real Chromium: copy, highlighted code, regenerate, edit-and-resend and the
model switcher, at desktop and phone sizes."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import login, wait_connected
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


@pytest.mark.parametrize("size", [(1280, 800), (390, 844)], ids=["desktop", "phone"])
def test_message_actions(browser, app_server, user, llm, provider, size):
    width, height = size
    llm.script(Reply(text=CODE_ANSWER))
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
        answer.get_by_role("button", name="Copy this message").click()
        copied = page.evaluate("navigator.clipboard.readText()")
        assert copied.startswith("Here you go:") and "```python" in copied
        page.screenshot(path=f"docs/screenshots/message-actions-{width}.png")
    finally:
        context.close()
    assert not errors, errors
