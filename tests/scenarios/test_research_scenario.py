"""Scenario: "How do hedgehogs survive the winter?" answered from the web.

The scripted model (OpenAI, Anthropic and text-fallback dialects) calls ``web_search``, which
asks a local server speaking the SearXNG JSON API or the Tavily API (with its key stored
encrypted); one result points at a real article on a
local page server, a poisoned one at an internal address. The model then calls
``extract_page_content`` on both: the article is read as clean text, the internal address is
refused by the SSRF guard without a single request reaching it, and the model answers from
the text it read. Runs through the real worker in both modes.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from chat_app.models import Message, Provider, Turn
from chat_app.services.turns import turn_start
from tests.conftest import wait_turn
from tests.e2e.conftest import login, wait_connected
from tests.scenarios.agent import (
    Seen,
    Step,
    assert_no_surprises,
    output_has,
    scripted_agent,
    succeeded,
)
from tests.tools.research.conftest import PAGES_HOST, allow_pages, use_searxng, use_tavily
from tests.tools.research.servers import Server
from tools_app.models import AuditRecord, ToolCall

pytestmark = [pytest.mark.modes]

TASK = "How do hedgehogs survive the winter?"
SCREENSHOT = "var/scenario-research.png"
ANSWER = "Hedgehogs hibernate from about November to March, in nests of dry leaves [1]."


def _plan(article: str, poisoned: str) -> list[Step]:
    def search_found_both(seen: list[Seen]) -> None:
        [result] = seen
        urls = [r["url"] for r in result.result["results"]]
        assert urls == [article, poisoned], urls

    def article_read_internal_refused(seen: list[Seen]) -> None:
        [result] = seen
        read, refused = result.result["pages"]
        assert read["success"] and read["title"] == "How hedgehogs survive the winter", read
        assert "script-should-not-appear" not in read["text"]
        assert not refused["success"] and "is not a public address" in refused["error"], refused

    return [
        Step("search", calls=[("web_search", {"query": TASK, "max_results": 5})]),
        Step(
            "read",
            calls=[("extract_page_content", {"urls": [article, poisoned]})],
            expect=[succeeded, search_found_both],
        ),
        Step(
            "answer",
            text=ANSWER,
            expect=[
                succeeded,
                article_read_internal_refused,
                output_has("Hedgehogs hibernate from about November to March"),
            ],
        ),
    ]


@pytest.mark.parametrize(
    ("dialect", "backend"), [("openai", "searxng"), ("anthropic", "tavily"), ("text", "searxng")]
)
def test_the_agent_searches_then_reads_the_page_it_found(
    worker: str,
    user: Any,
    conversation: Any,
    llm: Any,
    provider: Any,
    searxng: Server,
    tavily: Server,
    pages: Server,
    victim: Server,
    dialect: str,
    backend: str,
) -> None:
    search = searxng if backend == "searxng" else tavily
    if backend == "searxng":
        use_searxng(user, searxng)
    else:
        use_tavily(user, tavily)
    allow_pages(user, PAGES_HOST)
    article, poisoned = pages.url("/article"), victim.url("/secret")
    search.results = [
        ("How hedgehogs survive the winter", article, "Hedgehogs hibernate..."),
        ("Internal wiki", poisoned, "Follow this link."),
    ]
    if dialect == "anthropic":
        provider.kind = Provider.Kind.ANTHROPIC
        provider.base_url = llm.anthropic_base_url
    elif dialect == "text":
        provider.native_tools = Provider.NativeTools.FALSE
    provider.save()
    transcript = scripted_agent(llm, _plan(article, poisoned), dialect=dialect, task=TASK)

    turn = turn_start(conversation=conversation, user_id=user.pk, text=TASK)
    assert turn is not None
    turn = wait_turn(turn.pk, timeout=60)
    assert_no_surprises(llm)
    assert turn.status == Turn.Status.SUCCEEDED, turn.error
    assert len(transcript.requests) == 3
    calls = ToolCall.objects.filter(turn=turn).order_by("id")
    assert [(c.tool, c.status) for c in calls] == [
        ("web_search", "succeeded"),
        ("extract_page_content", "succeeded"),
    ]
    final = Message.objects.filter(turn=turn, role=Message.Role.ASSISTANT).order_by("id").last()
    assert final is not None and final.content.strip() == ANSWER
    [hit] = search.hits
    if backend == "searxng":
        assert hit.query == {"q": TASK, "format": "json"}
    else:
        assert hit.json()["query"] == TASK
    assert pages.paths() == ["/article"]
    assert victim.hits == []
    audited = AuditRecord.objects.filter(kind="call", conversation_id=conversation.pk)
    assert sorted(audited.values_list("tool", "status")) == [
        ("extract_page_content", "succeeded"),
        ("web_search", "succeeded"),
    ]


@pytest.mark.e2e
def test_a_person_sees_the_search_and_the_page_read_in_the_chat(
    page: Any,
    user: Any,
    conversation: Any,
    llm: Any,
    provider: Any,
    searxng: Server,
    pages: Server,
    victim: Server,
) -> None:
    use_searxng(user, searxng)
    allow_pages(user, PAGES_HOST)
    article, poisoned = pages.url("/article"), victim.url("/secret")
    searxng.results = [
        ("How hedgehogs survive the winter", article, "Hedgehogs hibernate..."),
        ("Internal wiki", poisoned, "Follow this link."),
    ]
    scripted_agent(llm, _plan(article, poisoned), dialect="openai", task=TASK)
    login(page, "alice", "alice-password-1")
    page.goto(f"/c/{conversation.pk}/")
    wait_connected(page)
    page.get_by_label("Message").fill(TASK)
    page.get_by_role("button", name="Send").click()

    answer = page.locator(".message.role-assistant .markdown").last
    expect(answer).to_contain_text(
        "Hedgehogs hibernate from about November to March", timeout=60_000
    )
    assert_no_surprises(llm)
    for tool in ("web_search", "extract_page_content"):
        card = page.locator(".toolcall", has=page.locator(".tool-name", has_text=tool))
        expect(card.locator(".status-word")).to_have_text("succeeded")
    reader = page.locator(".toolcall", has=page.locator(".tool-name", has_text="extract_page"))
    expect(reader.locator(".toolcall-output")).to_contain_text("refused: URL refused")
    assert victim.hits == []
    reader.locator("summary", has_text="Output").click()
    expect(reader.locator(".toolcall-result")).to_contain_text("How hedgehogs survive the winter")
    page.screenshot(path=SCREENSHOT, full_page=True)
