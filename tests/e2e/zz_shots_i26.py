from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from chat_app.models import Conversation, Message
from tests.e2e.conftest import login
from tools_app.models import ToolCall

pytestmark = [pytest.mark.e2e]
OUT = Path("var/shots-i26")


def test_shots(browser, app_server):
    OUT.mkdir(parents=True, exist_ok=True)
    get_user_model().objects.create_superuser("ada", password="ada-password-1")
    ada = get_user_model().objects.get(username="ada")
    conversation = Conversation.objects.create(owner=ada, title="Hedgehogs in winter")
    Message.objects.create(
        conversation=conversation, role="user", content="Write a report on hedgehogs"
    )
    reply = Message.objects.create(
        conversation=conversation, role="assistant", content="Here is the report.", state="complete"
    )
    ToolCall.objects.create(
        conversation=conversation,
        message=reply,
        user=ada,
        tool="create_report",
        group="agent",
        status="succeeded",
        arguments={"title": "Hedgehogs in winter", "confidence": "high", "reasoning": "enough"},
        result={
            "success": True,
            "file_name": "20261127_120000_Hedgehogs_in_winter.md",
            "path": "reports/20261127_120000_Hedgehogs_in_winter.md",
            "word_count": 420,
            "sources_count": 2,
            "timestamp": "2026-11-27T12:00:00+00:00",
            "sources": [
                {
                    "number": 1,
                    "title": "How hedgehogs survive the winter - Garden Wildlife",
                    "url": "https://garden.example/hedgehogs/winter",
                },
                {"number": 3, "title": "", "url": "https://en.example.org/wiki/Hedgehog"},
            ],
        },
    )
    for scheme in ("light", "dark"):
        for width, height in ((1280, 800), (390, 844)):
            ctx = browser.new_context(
                base_url=app_server,
                viewport={"width": width, "height": height},
                color_scheme=scheme,
            )
            page = ctx.new_page()
            login(page, "ada", "ada-password-1")
            page.goto("/tools/")
            page.wait_for_load_state("networkidle")
            page.screenshot(path=str(OUT / f"tools-{scheme}-{width}.png"))
            page.locator("#group-browser").screenshot(
                path=str(OUT / f"tools-browser-row-{scheme}-{width}.png")
            )
            page.goto("/tools/groups/docker/docs/")
            page.wait_for_load_state("networkidle")
            page.screenshot(path=str(OUT / f"docs-{scheme}-{width}.png"), full_page=False)
            page.goto(f"/c/{conversation.pk}/")
            page.wait_for_load_state("networkidle")
            card = page.locator(".toolcall").first
            card.screenshot(path=str(OUT / f"report-{scheme}-{width}.png"))
            ctx.close()
