"""extract_page_content through the real path: real HTML reduced to its text, per-URL results,
and the limits (URL count, characters per page, the HTTP tool's size cap)."""

from __future__ import annotations

from typing import Any

from tests.tools.conftest import Tools
from tools_app.models import ToolCall

from .conftest import PAGES_HOST, allow_pages, save
from .servers import Server


def _page(call: ToolCall, index: int = 0) -> dict[str, Any]:
    return call.result["pages"][index]


def test_it_returns_the_main_text_without_scripts_styles_or_menus(
    tools: Tools, owner: Any, pages: Server
) -> None:
    allow_pages(owner, PAGES_HOST)
    call = tools.call("extract_page_content", urls=[pages.url("/article")])
    assert call.status == ToolCall.Status.SUCCEEDED, call.result
    page = _page(call)
    assert page["success"] is True
    assert page["url"] == pages.url("/article")
    assert page["title"] == "How hedgehogs survive the winter"
    text = page["text"]
    assert "Hedgehogs hibernate from about November to March." in text
    assert "build a nest of dry leaves under hedges" in text
    assert "Waking up" in text  # tables are kept
    for gone in ("script-should-not-appear", "another-script-marker", "secret-style-marker"):
        assert gone not in text
    for boilerplate in ("About us", "Cookie settings"):
        assert boilerplate not in text
    assert page["chars"] == len(text) and page["truncated"] is False
    assert call.result["read"] == 1 and call.result["failed"] == 0
    assert "200: " in call.output and "characters of text" in call.output


def test_it_reads_the_charset_the_page_declares(tools: Tools, owner: Any, pages: Server) -> None:
    allow_pages(owner, PAGES_HOST)
    call = tools.call("extract_page_content", urls=[pages.url("/latin1")])
    assert call.status == ToolCall.Status.SUCCEEDED, call.result
    assert "La crème brûlée est un dessert" in _page(call)["text"]


def test_one_bad_url_does_not_fail_the_others(tools: Tools, owner: Any, pages: Server) -> None:
    allow_pages(owner, PAGES_HOST)
    urls = [
        pages.url("/article"),
        pages.url("/missing"),
        pages.url("/error"),
        "ftp://example.com/file",
        pages.url("/plain"),
    ]
    call = tools.call("extract_page_content", urls=urls)
    assert call.status == ToolCall.Status.SUCCEEDED, call.result
    results = call.result["pages"]
    assert [p["success"] for p in results] == [True, False, False, False, True]
    assert results[1] == {"url": urls[1], "success": False, "error": "the server answered 404"}
    assert results[2]["error"] == "the server answered 500"
    assert results[3]["error"].startswith("policy: URL refused: scheme 'ftp' is not allowed")
    assert results[4]["text"] == "Just plain text.\n"
    assert (call.result["read"], call.result["failed"]) == (2, 3)


def test_when_no_page_can_be_read_the_call_fails_with_the_details(
    tools: Tools, owner: Any, pages: Server
) -> None:
    allow_pages(owner, PAGES_HOST)
    call = tools.call("extract_page_content", urls=[pages.url("/missing")])
    assert call.status == ToolCall.Status.FAILED
    assert call.error == "none of the 1 pages could be read"
    assert call.result["pages"] == [
        {"url": pages.url("/missing"), "success": False, "error": "the server answered 404"}
    ]


def test_it_refuses_content_that_is_not_a_page(tools: Tools, owner: Any, pages: Server) -> None:
    allow_pages(owner, PAGES_HOST)
    call = tools.call(
        "extract_page_content",
        urls=[pages.url("/report.pdf"), pages.url("/data.json"), pages.url("/article")],
    )
    assert call.status == ToolCall.Status.SUCCEEDED, call.result
    pdf, data, article = call.result["pages"]
    assert pdf["error"].startswith("not an HTML or text page (content type application/pdf)")
    assert data["error"].startswith("not an HTML or text page (content type application/json)")
    assert article["success"] is True


def test_an_oversized_page_is_cut_at_the_http_size_cap(
    tools: Tools, owner: Any, pages: Server
) -> None:
    # The page is about 4.5 MB; the HTTP group keeps 50 KB of it, the text is cut at 2,000.
    allow_pages(owner, PAGES_HOST, max_response_bytes=50_000)
    save(owner, "research", max_chars_per_page=2000)
    call = tools.call("extract_page_content", urls=[pages.url("/big")])
    assert call.status == ToolCall.Status.SUCCEEDED, call.result
    page = _page(call)
    assert page["truncated"] is True
    assert page["chars"] == 2000 == len(page["text"])
    assert page["text"].startswith("Paragraph 0: the quick brown fox jumps over the lazy dog.")
    assert "truncated" in call.output


def test_the_url_count_is_capped_at_binding(tools: Tools, owner: Any, pages: Server) -> None:
    allow_pages(owner, PAGES_HOST)
    save(owner, "research", max_urls=2)
    urls = [pages.url(f"/article?n={n}") for n in range(3)]
    call = tools.call("extract_page_content", urls=urls)
    assert call.status == ToolCall.Status.DENIED
    assert call.error == (
        "policy: 3 URLs given; at most 2 pages may be read per call (split them over several calls)"
    )
    assert pages.hits == []
    # The schema's own cap (seed 004: 1-5 URLs) holds whatever the admin sets.
    save(owner, "research", max_urls=20)  # saved when the cap was 20: read as 5
    call = tools.call("extract_page_content", urls=[pages.url("/article")] * 6)
    assert call.status in (ToolCall.Status.DENIED, ToolCall.Status.FAILED)
    assert "at most 5 items" in call.error, call.error
    assert pages.hits == []


def test_repeated_urls_are_read_once(tools: Tools, owner: Any, pages: Server) -> None:
    allow_pages(owner, PAGES_HOST)
    url = pages.url("/plain")
    call = tools.call("extract_page_content", urls=[url, url])
    assert call.status == ToolCall.Status.SUCCEEDED, call.result
    assert len(call.result["pages"]) == 1
    assert pages.paths() == ["/plain"]


def test_a_slow_page_times_out_alone(tools: Tools, owner: Any, pages: Server) -> None:
    allow_pages(owner, PAGES_HOST)
    save(owner, "research", page_timeout_seconds=1)
    call = tools.call("extract_page_content", urls=[pages.url("/slow"), pages.url("/plain")])
    assert call.status == ToolCall.Status.SUCCEEDED, call.result
    slow, plain = call.result["pages"]
    assert slow == {"url": pages.url("/slow"), "success": False, "error": "timed out after 1 s"}
    assert plain["success"] is True
