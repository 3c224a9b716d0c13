"""History import in real Chromium (issue 39, item 8): a person uploads an Open WebUI, a
ChatGPT and a LibreChat export on Import history, reads the summary, opens each imported
conversation and finds the messages and the version switcher of its branches — at 1280 and
390 px, in the light and the dark theme, with axe-core on the page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from chat_app.models import Conversation
from tests.e2e.conftest import docs_shot, login, wait_connected
from tests.e2e.test_layout import axe_violations

pytestmark = [pytest.mark.e2e]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "imports"
SIZES = {1280: {"width": 1280, "height": 800}, 390: {"width": 390, "height": 844}}
# file, what the summary says, a conversation's title, its shown first answer and its place
# among the versions, the other version and the button that goes to it.
EXPORTS = [
    (
        "openwebui-export.json",
        "2 conversations, 9 messages imported.",
        "Listening ports",
        ("Run sudo ss -tulpn", "2/2"),
        ("Use ss -tlnp to list listening TCP sockets", "Previous version"),
    ),
    (
        "chatgpt-conversations.json",
        "2 conversations, 9 messages imported.",
        "Powers of two",
        # ChatGPT's current_node is on the first answer, the regenerated one came later.
        ("2**64 = 18446744073709551616.", "1/2"),
        ("It is 18,446,744,073,709,551,616.", "Next version"),
    ),
    (
        "librechat-export.json",
        "1 conversation, 5 messages imported.",
        "Backup haiku",
        ("Snapshots every hour", "2/2"),
        ("Quiet night, disks spin", "Previous version"),
    ),
]


def _import(page: Any, name: str) -> None:
    page.goto("/c/import/")
    page.get_by_label("Export file (JSON)").set_input_files(str(FIXTURES / name))
    page.get_by_label("Format").select_option("auto")
    page.get_by_role("button", name="Import", exact=True).click()


@pytest.mark.parametrize("width", [1280, 390])
def test_imported_history_reads_the_same_in_the_chat(browser, app_server, user, width):
    context = browser.new_context(base_url=app_server, viewport=SIZES[width])
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
    try:
        login(page, "alice", "alice-password-1")
        problems: list[str] = []
        for name, said, title, (shown, position), (other, button) in EXPORTS:
            _import(page, name)
            summary = page.locator("#import-summary")
            expect(summary.get_by_role("status")).to_have_text(said)
            if name.startswith("chatgpt"):
                expect(summary).to_contain_text("2 messages skipped: tool call or tool output")
                for theme in ("light", "dark"):
                    page.evaluate(f"document.documentElement.dataset.theme = '{theme}'")
                    problems += [f"{theme}: {line}" for line in axe_violations(page)]
                    docs_shot(page, f"history-import-{theme}-{width}", full_page=True)
                page.evaluate("document.documentElement.dataset.theme = 'light'")
            summary.get_by_role("link", name=title).click()
            wait_connected(page)
            expect(page.locator("#imported-from")).to_contain_text("Imported from")
            answers = page.locator(".message.role-assistant")
            expect(answers.first).to_contain_text(shown)
            mine = page.locator(".message.role-user").first
            expect(mine.locator(".branch-position")).to_have_text(position)
            mine.get_by_role("button", name=button).click()
            other_position = "1/2" if position == "2/2" else "2/2"
            expect(mine.locator(".branch-position")).to_have_text(other_position)
            expect(answers.first).to_contain_text(other)
            if name.startswith("openwebui"):
                for theme in ("light", "dark"):
                    page.evaluate(f"document.documentElement.dataset.theme = '{theme}'")
                    problems += [f"{theme}: {line}" for line in axe_violations(page)]
                    docs_shot(page, f"history-import-branch-{theme}-{width}")
                page.evaluate("document.documentElement.dataset.theme = 'light'")
            width_now = page.evaluate("document.documentElement.scrollWidth")
            assert width_now <= width, (name, width_now)
        assert not problems, "\n".join(problems)
        assert Conversation.objects.filter(owner=user).exclude(imported_from="").count() == 5
    finally:
        context.close()
    assert not errors, errors
