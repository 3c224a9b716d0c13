"""Seed 004's numbered sources: web_search and extract_page_content register each URL once
per turn and return its number; create_report lists the sources it cites from that registry
and the report card shows them. A real turn through the runner, the scripted model, a
SearXNG-speaking server and a page server."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.template.loader import render_to_string

from chat_app.models import Agent, Conversation, Turn
from chat_app.services.agents import researcher_ensure
from chat_app.services.turns import turn_start
from platform_app.reports import cited_numbers, report_with_sources
from tests.conftest import wait_turn
from tests.llm_server import Call, Reply
from tools_app.executors.research.models import ResearchSource
from tools_app.executors.research.sources import Found, sources_register
from tools_app.models import ToolCall
from tools_app.runtime import workspace_dir_for, workspace_id_for

from .conftest import PAGES_HOST, allow_pages, use_searxng
from .servers import Server

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.mark.modes
def test_a_turns_sources_are_numbered_once_and_the_report_lists_them(
    worker, user, llm, provider, searxng: Server, pages: Server
):
    use_searxng(user, searxng)
    allow_pages(user, PAGES_HOST)
    article, plain = pages.url("/article"), pages.url("/plain")
    searxng.results = [
        ("Hedgehogs in winter", article, "They hibernate."),
        ("Other page", "https://other.example/x", "Something else."),
    ]
    report = (
        "# Hedgehogs\n\nThey hibernate from November [1]. A plain page says more [3].\n\n"
        "## Sources\n[1] my own list, replaced\n"
    )
    agent = researcher_ensure()
    agent.kind = Agent.Kind.REASONING_AS_TOOL  # reasoning is one tool among others here
    agent.save()
    conversation = Conversation.objects.create(owner=user, agent=agent)
    llm.script(
        Reply(calls=[Call("web_search", {"reasoning": "find facts", "query": "hedgehogs"})]),
        # The same article again (by a #fragment) and a new page, in one call.
        Reply(
            calls=[
                Call(
                    "extract_page_content",
                    {"reasoning": "read them", "urls": [article + "#top", plain]},
                )
            ]
        ),
        Reply(
            calls=[
                Call(
                    "create_report",
                    {
                        "reasoning": "enough",
                        "title": "Hedgehogs",
                        "user_request_language_reference": "hedgehogs",
                        "content": report,
                        "confidence": "high",
                    },
                )
            ]
        ),
        Reply(text="Done."),
    )
    turn = wait_turn(turn_start(conversation=conversation, user_id=user.pk, text="hedgehogs").pk)
    assert turn.status == Turn.Status.SUCCEEDED, turn.error
    search, extract, made = (
        ToolCall.objects.get(turn=turn, tool=name)
        for name in ("web_search", "extract_page_content", "create_report")
    )
    assert [r["source"] for r in search.result["results"]] == [1, 2]
    assert [p["source"] for p in extract.result["pages"]] == [1, 3]  # the article kept its 1
    assert "[3] " + plain in extract.output
    numbered = list(ResearchSource.objects.filter(turn=turn).values_list("number", "url", "read"))
    assert numbered == [(1, article, True), (2, "https://other.example/x", False), (3, plain, True)]
    # The model read the numbers: the tool results it got back carry them.
    assert '"source": 3' in str(llm.requests[2]["messages"])

    assert made.status == "succeeded", made.result
    assert [s["number"] for s in made.result["sources"]] == [1, 3]
    workspace = workspace_dir_for(workspace_id_for(conversation_id=conversation.pk, user_id=None))
    written = (workspace / made.result["path"]).read_text()
    assert "my own list, replaced" not in written
    assert written.endswith(
        f"## Sources\n\n- [1] Hedgehogs in winter — <{article}>\n- [3] <{plain}>\n"
        if not extract.result["pages"][1]["title"]
        else f"## Sources\n\n- [1] Hedgehogs in winter — <{article}>\n"
        f"- [3] {extract.result['pages'][1]['title']} — <{plain}>\n"
    )
    card = render_to_string("tools/_toolcall_card.html", {"call": made})
    assert "report-source-list" in card
    assert f'<li value="3"><a href="{plain}"' in card
    assert 'rel="noopener noreferrer nofollow"' in card


@pytest.mark.modes
def test_parallel_calls_of_one_turn_share_the_numbering(user, conversation):
    import threading

    turn = Turn.objects.create(conversation=conversation, user=user)
    urls = [f"https://site{i}.example/" for i in range(6)]
    got: list[list[int]] = []

    def register(chunk: list[str]) -> None:
        got.append(sources_register(turn_id=turn.pk, found=[Found(u) for u in chunk], call_id=None))

    threads = [threading.Thread(target=register, args=(urls[i : i + 4],)) for i in (0, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    numbers = dict(ResearchSource.objects.filter(turn=turn).values_list("url", "number"))
    assert sorted(numbers.values()) == list(range(1, 7))  # each URL once, no gaps
    assert sorted(got) == sorted([[numbers[u] for u in urls[0:4]], [numbers[u] for u in urls[2:6]]])


def test_a_call_outside_a_turn_numbers_its_own_sources():
    assert sources_register(
        turn_id=None, found=[Found("https://a.example/"), Found("https://b.example/"),
                             Found("https://a.example/#x")], call_id=None
    ) == [1, 2, 1]  # fmt: skip


def test_the_report_keeps_its_own_list_when_it_cites_an_unknown_number():
    class Source:
        def __init__(self, number: int) -> None:
            self.number = number

        def as_dict(self) -> dict[str, Any]:
            return {"number": self.number, "title": "", "url": f"https://s{self.number}.example/"}

    registry = {1: Source(1), 2: Source(2)}
    text = "A [1], B [2; 7].\n\n## References\n[7] a book\n"
    cited = report_with_sources(text, registry)
    assert cited.unknown == [7]
    assert "[7] a book" in cited.content  # the model's own list stays
    assert cited.content.endswith("- [2] <https://s2.example/>\n")
    assert cited_numbers("x [3], y [1, 3] z [12]") == [3, 1, 12]


def test_a_source_link_is_never_a_script(user, conversation):
    call = ToolCall.objects.create(
        conversation=conversation,
        user=user,
        tool="create_report",
        status="succeeded",
        arguments={"title": "t", "confidence": "low"},
        result={
            "success": True,
            "file_name": "x.md",
            "sources": [{"number": 1, "title": "evil", "url": "javascript:alert(1)"}],
        },
    )
    card = render_to_string("tools/_toolcall_card.html", {"call": call})
    assert "evil" in card
    assert not re.search(r'href="\s*javascript', card)  # shown as text, never as a link
