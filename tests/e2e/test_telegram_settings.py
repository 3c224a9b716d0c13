"""Tools Manager → Messaging in Chromium: an admin sets up the Telegram channel of
send_message (bot token, allowed chats, a person's own chat, a loopback Bot API with the
private-host exception); the token is write-only (never in the page again), and a call then
reaches the loopback Bot API with the chat and text. Both widths, both colour schemes, axe."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.db import connection
from playwright.sync_api import expect

from tests.e2e.conftest import login
from tests.e2e.test_approval_pages import shots
from tests.httpserver import serving
from tests.tools.calls import ok, run_tool
from tests.tools.messaging.test_telegram import KEY, TOKEN, BotApi, _bot_api

pytestmark = [pytest.mark.e2e]


def _send_as(user: Any) -> dict[str, Any]:
    try:
        call = run_tool("send_message", user=user, channel="telegram", chat_id="me", text="Hi")
        return ok(call)
    finally:
        connection.close()


def test_an_admin_sets_up_telegram_and_the_token_stays_hidden(page, staff_user):
    with serving("127.0.0.1", default=_bot_api, server_class=BotApi) as bot_api:
        login(page, "root", "root-password-1")
        page.goto("/tools/groups/messaging/edit/")
        token = page.get_by_label("Telegram bot token")
        expect(token).to_have_attribute("type", "password")
        token.fill(TOKEN)
        page.get_by_label("Telegram chats").fill("-1001234567890\n@team_news")
        page.get_by_label("Telegram people").fill("root=555000111")
        page.get_by_label("Telegram api url").fill(bot_api.url(""))
        page.get_by_label("Private allowed").fill("127.0.0.1")
        # Until the POST is answered: "networkidle" can hold before the form's request
        # starts, and the page below was then read (or the POST cut off) before the save.
        with page.expect_response(lambda r: r.request.method == "POST"):
            page.get_by_role("button", name="Save").click()
        page.wait_for_load_state("networkidle")

        page.goto("/tools/groups/messaging/edit/")
        expect(page.get_by_label("Telegram chats")).to_have_value("-1001234567890\n@team_news")
        expect(page.get_by_role("textbox", name="Telegram bot token")).to_have_value("")
        expect(page.get_by_role("switch", name="Remove the stored telegram")).to_be_visible()
        assert KEY not in page.content()
        shots(page, "messaging-telegram")

        # Playwright's sync API keeps an event loop in this thread; the ORM runs in another.
        with ThreadPoolExecutor(1) as pool:
            result = pool.submit(_send_as, staff_user).result()
        assert result["delivered"] is True
        assert bot_api.sent == [{"chat_id": 555000111, "text": "Hi"}]
        page.goto("/tools/audit/")
        assert KEY not in page.content()
