"""Fixtures for the research tools: a SearXNG-like and a Tavily-like API, a page server and a
victim, each a real HTTP server on a loopback address of its own (see ``servers.py``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest

from tests.tools.conftest import Tools, make_tools
from tests.tools.http.conftest import fake_dns  # noqa: F401  (fixture)
from tools_app.services.settings import group_settings_save

from .servers import SEARXNG_ROUTES, TAVILY_ROUTES, Hit, Response, Server, html_page, serving

SEARXNG_HOST = "127.0.0.21"
TAVILY_HOST = "127.0.0.22"
PAGES_HOST = "127.0.0.23"
VICTIM_HOST = "127.0.0.24"  # never allowed anywhere
TAVILY_KEY = "tvly-test-7b1f0c9e5d2a4e3f"

ARTICLE = """<!doctype html>
<html lang="en"><head>
<meta charset="utf-8"><title>Hedgehogs in winter - Garden Wildlife</title>
<style>body { font-family: sans-serif } .secret-style-marker { color: red }</style>
<script>var trackingMarker = "script-should-not-appear"; document.title = "x";</script>
</head><body>
<nav><a href="/">Home</a> | <a href="/about">About us</a> | <a href="/shop">Shop</a></nav>
<main><article>
<h1>How hedgehogs survive the winter</h1>
<p>Hedgehogs hibernate from about November to March. Their body temperature drops from
35 degrees to as low as 5 degrees, and their heart rate slows to a few beats a minute.</p>
<p>Before hibernating they build a nest of dry leaves under hedges or in compost heaps,
so leaving a wild corner in the garden gives them a safe place to sleep.</p>
<table><tr><th>Month</th><th>Activity</th></tr><tr><td>March</td><td>Waking up</td></tr></table>
</article></main>
<script>console.log("another-script-marker")</script>
<footer>Copyright 2026 Garden Wildlife. Cookie settings.</footer>
</body></html>"""

LATIN1 = (
    "<html><head><meta charset='iso-8859-1'><title>Crème brûlée</title></head><body>"
    "<article><p>La crème brûlée est un dessert composé d'une crème à base de jaune "
    "d'œuf recouverte d'une couche de sucre caramélisé, servie froide.</p></article>"
    "</body></html>"
).encode("latin-1", "replace")


def _article(hit: Hit, server: Server) -> Response:
    return html_page(ARTICLE)


def _latin1(hit: Hit, server: Server) -> Response:
    return html_page(LATIN1, charset=None)


def _plain(hit: Hit, server: Server) -> Response:
    return 200, [("Content-Type", "text/plain; charset=utf-8")], b"Just plain text.\n"


def _pdf(hit: Hit, server: Server) -> Response:
    return 200, [("Content-Type", "application/pdf")], b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n" * 50


def _json(hit: Hit, server: Server) -> Response:
    return 200, [("Content-Type", "application/json")], b'{"not": "a page"}'


def _big(hit: Hit, server: Server) -> Response:
    paragraphs = "".join(
        f"<p>Paragraph {n}: " + "the quick brown fox jumps over the lazy dog. " * 20 + "</p>\n"
        for n in range(5000)
    )
    return html_page("<html><body><article>" + paragraphs + "</article></body></html>")


def _redirect(hit: Hit, server: Server) -> Response:
    return 302, [("Location", hit.query["to"])], b""


def _slow(hit: Hit, server: Server) -> Response:
    time.sleep(3)  # longer than the page timeout the test sets
    return html_page("<html><body><p>too late</p></body></html>")


def _error(hit: Hit, server: Server) -> Response:
    return 500, [], b"internal error"


def _moved(hit: Hit, server: Server) -> Response:
    # A "search backend" that sends the client, body and key, elsewhere.
    return 307, [("Location", server.redirect_to)], b""


PAGE_ROUTES = {
    ("GET", "/article"): _article,
    ("GET", "/latin1"): _latin1,
    ("GET", "/plain"): _plain,
    ("GET", "/report.pdf"): _pdf,
    ("GET", "/data.json"): _json,
    ("GET", "/big"): _big,
    ("GET", "/redirect"): _redirect,
    ("GET", "/error"): _error,
    ("GET", "/slow"): _slow,
    ("POST", "/moved/search"): _moved,
}


def redirect_url(pages: Server, to: str) -> str:
    return pages.url(f"/redirect?to={quote(to, safe='')}")


@pytest.fixture(scope="session")
def _searxng_server() -> Iterator[Server]:
    with serving(SEARXNG_HOST, SEARXNG_ROUTES) as server:
        yield server


@pytest.fixture(scope="session")
def _tavily_server() -> Iterator[Server]:
    with serving(TAVILY_HOST, TAVILY_ROUTES) as server:
        server.api_key = TAVILY_KEY
        yield server


@pytest.fixture(scope="session")
def _pages_server() -> Iterator[Server]:
    with serving(PAGES_HOST, PAGE_ROUTES) as server:
        yield server


@pytest.fixture(scope="session")
def _victim_server() -> Iterator[Server]:
    with serving(VICTIM_HOST, {("*", "/"): _plain, ("GET", "/secret"): _plain}) as server:
        yield server


def _fresh(server: Server) -> Server:
    server.reset()
    server.results = []
    server.redirect_to = ""
    return server


@pytest.fixture
def searxng(_searxng_server: Server) -> Server:
    return _fresh(_searxng_server)


@pytest.fixture
def tavily(_tavily_server: Server) -> Server:
    return _fresh(_tavily_server)


@pytest.fixture
def pages(_pages_server: Server) -> Server:
    return _fresh(_pages_server)


@pytest.fixture
def victim(_victim_server: Server) -> Server:
    return _fresh(_victim_server)


@pytest.fixture
def tools(owner: Any) -> Tools:
    return make_tools(owner, "http", slot=4)


def save(user: Any, group: str, **values: Any) -> None:
    """Store a group's settings through the Tools Manager's service (secrets included)."""
    group_settings_save(user=user, group=group, values=values)


def use_searxng(user: Any, server: Server, **extra: Any) -> None:
    save(
        user,
        "research",
        search_backend="searxng",
        search_url=server.url("/"),
        search_private_allowed=[server.host],
        **extra,
    )


def use_tavily(user: Any, server: Server, key: str = TAVILY_KEY, **extra: Any) -> None:
    save(
        user,
        "research",
        search_backend="tavily",
        search_url=server.url(""),
        search_api_key=key,
        search_private_allowed=[server.host],
        **extra,
    )


def allow_pages(user: Any, *hosts: str, **extra: Any) -> None:
    """The HTTP group's policy, which extract_page_content follows."""
    save(user, "http", private_allowed=list(hosts), **extra)
