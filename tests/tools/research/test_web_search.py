"""web_search through the real path (binding + execution) against local servers speaking the
SearXNG JSON API and the Tavily API."""

from __future__ import annotations

import json
from typing import Any

from tests.tools.conftest import Tools
from tools_app.models import AuditRecord, ToolCall, ToolGroupConfig

from .conftest import TAVILY_KEY, save, use_searxng, use_tavily
from .servers import Server

WIKI = "https://en.wikipedia.org/wiki/Hedgehog"
RESULTS = [
    ("Hedgehogs - Wikipedia", WIKI, "A hedgehog is a  spiny\nmammal."),
    ("Hibernation facts", "https://example.org/hibernation", "Hedgehogs hibernate in winter."),
    ("Garden wildlife", "https://example.net/garden", "Leave a wild corner."),
]  # fmt: skip


def test_it_searches_a_searxng_instance(tools: Tools, owner: Any, searxng: Server) -> None:
    use_searxng(owner, searxng)
    searxng.results = list(RESULTS)
    call = tools.call("web_search", query="hedgehog hibernation", max_results=5)
    assert call.status == ToolCall.Status.SUCCEEDED, call.result
    assert call.result["results"] == [
        {
            "source": 1,
            "title": "Hedgehogs - Wikipedia",
            "url": "https://en.wikipedia.org/wiki/Hedgehog",
            "snippet": "A hedgehog is a spiny mammal.",
        },
        {
            "source": 2,
            "title": "Hibernation facts",
            "url": "https://example.org/hibernation",
            "snippet": "Hedgehogs hibernate in winter.",
        },
        {
            "source": 3,
            "title": "Garden wildlife",
            "url": "https://example.net/garden",
            "snippet": "Leave a wild corner.",
        },
    ]
    [hit] = searxng.hits
    assert (hit.method, hit.path) == ("GET", "/search")
    assert hit.query == {"q": "hedgehog hibernation", "format": "json"}
    assert "SearXNG: 3 results" in call.output


def test_the_admin_caps_the_number_of_results(tools: Tools, owner: Any, searxng: Server) -> None:
    use_searxng(owner, searxng, max_results=2)
    searxng.results = list(RESULTS)
    call = tools.call("web_search", query="hedgehogs", max_results=10)
    assert call.status == ToolCall.Status.SUCCEEDED, call.result
    assert [r["title"] for r in call.result["results"]] == [
        "Hedgehogs - Wikipedia",
        "Hibernation facts",
    ]
    call = tools.call("web_search", query="hedgehogs", max_results=1)
    assert len(call.result["results"]) == 1


def test_it_searches_a_tavily_compatible_api(tools: Tools, owner: Any, tavily: Server) -> None:
    use_tavily(owner, tavily)
    tavily.results = list(RESULTS)
    call = tools.call("web_search", query="hedgehogs", max_results=2)
    assert call.status == ToolCall.Status.SUCCEEDED, call.result
    assert [r["url"] for r in call.result["results"]] == [
        "https://en.wikipedia.org/wiki/Hedgehog",
        "https://example.org/hibernation",
    ]
    [hit] = tavily.hits
    assert (hit.method, hit.path) == ("POST", "/search")
    assert hit.json() == {"api_key": TAVILY_KEY, "query": "hedgehogs", "max_results": 2}
    assert hit.headers["authorization"] == f"Bearer {TAVILY_KEY}"


def test_the_api_key_never_shows_in_the_call_or_the_audit(
    tools: Tools, owner: Any, tavily: Server
) -> None:
    use_tavily(owner, tavily, key="tvly-wrong-key-123456")
    call = tools.call("web_search", query="hedgehogs")
    assert call.status == ToolCall.Status.FAILED
    assert "401" in call.error and "invalid API key" in call.error, call.error
    use_tavily(owner, tavily)
    ok = tools.call("web_search", query="hedgehogs")
    assert ok.status == ToolCall.Status.SUCCEEDED, ok.result
    everything = json.dumps(
        [
            [c.arguments, c.result, c.error, c.output]
            for c in ToolCall.objects.filter(tool="web_search")
        ]
        + [r.detail for r in AuditRecord.objects.all()]
        + list(ToolGroupConfig.objects.values_list("settings", flat=True))
    )
    for key in (TAVILY_KEY, "tvly-wrong-key-123456"):
        assert key not in everything


def test_without_a_backend_it_says_what_to_configure(tools: Tools) -> None:
    call = tools.call("web_search", query="hedgehogs")
    assert call.status == ToolCall.Status.FAILED
    assert call.error.startswith("web search is not configured: an admin must choose"), call.error


def test_a_tavily_backend_without_a_key_says_so(tools: Tools, owner: Any, tavily: Server) -> None:
    use_tavily(owner, tavily, key="")
    call = tools.call("web_search", query="hedgehogs")
    assert call.status == ToolCall.Status.FAILED
    assert "has no API key" in call.error
    assert tavily.hits == []


def test_a_backend_on_a_private_address_needs_the_admin(
    tools: Tools, owner: Any, searxng: Server
) -> None:
    save(owner, "research", search_backend="searxng", search_url=searxng.url("/"))
    call = tools.call("web_search", query="hedgehogs")
    assert call.status == ToolCall.Status.DENIED
    assert "is not a public address: loopback" in call.error, call.error
    assert searxng.hits == []


def test_a_backend_at_a_metadata_address_is_refused(tools: Tools, owner: Any) -> None:
    save(
        owner,
        "research",
        search_backend="searxng",
        search_url="http://169.254.169.254/latest/",
        search_private_allowed=["metadata.internal"],
    )
    call = tools.call("web_search", query="hedgehogs")
    assert call.status == ToolCall.Status.DENIED
    assert "cloud metadata" in call.error, call.error


def test_a_searxng_without_the_json_format_is_explained(
    tools: Tools, owner: Any, searxng: Server
) -> None:
    # The admin pointed at an HTML-only page: the guard lets it through, the answer is refused.
    save(
        owner,
        "research",
        search_backend="searxng",
        search_url=searxng.url("/nothing-here"),
        search_private_allowed=[searxng.host],
    )
    call = tools.call("web_search", query="hedgehogs")
    assert call.status == ToolCall.Status.FAILED
    assert call.error == "the search backend answered 404: not found"
    assert searxng.paths() == ["/nothing-here/search"]


def test_a_redirecting_backend_does_not_get_the_key_sent_elsewhere(
    tools: Tools, owner: Any, pages: Server, victim: Server
) -> None:
    save(
        owner,
        "research",
        search_backend="tavily",
        search_url=pages.url("/moved"),
        search_api_key=TAVILY_KEY,
        search_private_allowed=[pages.host, victim.host],
    )
    pages.redirect_to = victim.url("/steal")  # even a host the admin allowed gets nothing
    call = tools.call("web_search", query="hedgehogs")
    assert call.status == ToolCall.Status.FAILED
    assert call.error == "the search backend answered 307: (empty body)"
    assert pages.paths() == ["/moved/search"]
    assert victim.hits == []
    assert TAVILY_KEY not in json.dumps([call.result, call.error, call.output])
