"""Small real HTTP servers for the research tools, started inside the test process.

``searxng_api`` answers like a SearXNG instance (``GET /search?q=...&format=json``; other
formats are refused with 403, as SearXNG does when a format is not enabled), ``tavily_api``
like Tavily (``POST /search`` with a JSON body, the key as a bearer token or as ``api_key`` in
the body; 401 otherwise). ``pages`` serves documents from a table. Every server records what it
receives, so an SSRF test can prove nothing reached it. They listen on loopback addresses of
their own: the SSRF guard's exceptions are per host, not per port.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

from tests.httpserver import Hit, HttpServer, Response
from tests.httpserver import serving as shared_serving

__all__ = ["Hit", "Response", "Route", "Server", "as_json", "html_page", "serving"]


class Server(HttpServer):
    """A recording server plus what the fake search APIs answer."""

    # What the search APIs answer: (title, url, snippet) triples.
    results: list[tuple[str, str, str]]
    api_key: str = ""
    redirect_to: str = ""  # where a redirecting route sends the client

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.results = []


Route = Callable[[Hit, Server], Response]


def as_json(status: int, data: Any) -> Response:
    return status, [("Content-Type", "application/json")], json.dumps(data).encode()


def html_page(body: bytes | str, status: int = 200, charset: str | None = "utf-8") -> Response:
    kind = "text/html" + (f"; charset={charset}" if charset else "")
    raw = body.encode() if isinstance(body, str) else body
    return status, [("Content-Type", kind)], raw


@contextlib.contextmanager
def serving(host: str, routes: dict[tuple[str, str], Route] | None = None) -> Iterator[Server]:
    """Routes by (method, path), "*" for any method; each gets the request and the server."""

    def bound(route: Route) -> Callable[[Hit], Response]:
        return lambda hit: route(hit, hit.server)

    table = {key: bound(route) for key, route in (routes or {}).items()}
    with shared_serving(host, table, server_class=Server) as server:
        yield server


# --- SearXNG ---------------------------------------------------------------------------------
def _searxng_search(hit: Hit, server: Server) -> Response:
    if hit.query.get("format") != "json":
        return 403, [], b"Forbidden"
    query = hit.query.get("q", "")
    results = [
        {
            "url": url,
            "title": title,
            "content": snippet,
            "engine": "duckduckgo",
            "engines": ["duckduckgo"],
            "parsed_url": list(urlsplit(url)),
            "template": "default.html",
            "positions": [n + 1],
            "score": 1.0 / (n + 1),
            "category": "general",
        }
        for n, (title, url, snippet) in enumerate(server.results)
    ]
    return as_json(
        200,
        {
            "query": query,
            "number_of_results": len(results),
            "results": results,
            "answers": [],
            "corrections": [],
            "infoboxes": [],
            "suggestions": [],
            "unresponsive_engines": [],
        },
    )


SEARXNG_ROUTES: dict[tuple[str, str], Route] = {("GET", "/search"): _searxng_search}


# --- Tavily ----------------------------------------------------------------------------------
def _tavily_search(hit: Hit, server: Server) -> Response:
    try:
        body = hit.json()
    except ValueError:
        return as_json(400, {"detail": {"error": "invalid JSON body"}})
    bearer = hit.headers.get("authorization", "").removeprefix("Bearer ").strip()
    if server.api_key not in (bearer, body.get("api_key")):
        return as_json(401, {"detail": {"error": "Unauthorized: missing or invalid API key."}})
    limit = int(body.get("max_results", 5))
    results = [
        {"title": title, "url": url, "content": snippet, "score": 0.9, "raw_content": None}
        for title, url, snippet in server.results[:limit]
    ]
    return as_json(
        200,
        {
            "query": body.get("query"),
            "follow_up_questions": None,
            "answer": None,
            "images": [],
            "results": results,
            "response_time": 0.01,
        },
    )


TAVILY_ROUTES: dict[tuple[str, str], Route] = {("POST", "/search"): _tavily_search}
