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
import socketserver
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

Response = tuple[int, list[tuple[str, str]], bytes]


@dataclass
class Hit:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


Route = Callable[[Hit, "Server"], Response]


def as_json(status: int, data: Any) -> Response:
    return status, [("Content-Type", "application/json")], json.dumps(data).encode()


def html_page(body: bytes | str, status: int = 200, charset: str | None = "utf-8") -> Response:
    kind = "text/html" + (f"; charset={charset}" if charset else "")
    raw = body.encode() if isinstance(body, str) else body
    return status, [("Content-Type", kind)], raw


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _any(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        hit = Hit(
            self.command,
            parts.path,
            {k: v[0] for k, v in parse_qs(parts.query).items()},
            {k.lower(): v for k, v in self.headers.items()},
            body,
        )
        app = self.server.app
        app.record(hit)
        route = app.routes.get((self.command, parts.path)) or app.routes.get(("*", parts.path))
        status, headers, payload = route(hit, app) if route else (404, [], b"not found")
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.send_response(status)
            if not any(k.lower() == "content-type" for k, _ in headers):
                self.send_header("Content-Type", "text/plain; charset=utf-8")
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(payload)
        self.close_connection = True

    do_GET = do_POST = do_HEAD = _any


@dataclass
class Server:
    host: str
    routes: dict[tuple[str, str], Route]
    hits: list[Hit] = field(default_factory=list)
    # What the search APIs answer: (title, url, snippet) triples.
    results: list[tuple[str, str, str]] = field(default_factory=list)
    api_key: str = ""
    redirect_to: str = ""  # where a redirecting route sends the client
    _httpd: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def port(self) -> int:
        assert self._httpd is not None
        return int(self._httpd.server_address[1])

    def url(self, path: str = "/") -> str:
        return f"http://{self.host}:{self.port}{path}"

    def record(self, hit: Hit) -> None:
        with self._lock:
            self.hits.append(hit)

    def paths(self) -> list[str]:
        with self._lock:
            return [h.path for h in self.hits]

    def reset(self) -> None:
        with self._lock:
            self.hits.clear()


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, server: Server) -> None:
        self.app = server
        super().__init__((server.host, 0), _Handler)

    def server_bind(self) -> None:
        socketserver.TCPServer.server_bind(self)  # no reverse DNS lookup
        self.server_name, self.server_port = self.app.host, self.server_address[1]

    def handle_error(self, request: object, client_address: object) -> None:
        pass


@contextlib.contextmanager
def serving(host: str, routes: dict[tuple[str, str], Route] | None = None) -> Iterator[Server]:
    server = Server(host, dict(routes or {}))
    httpd = _HTTPServer(server)
    server._httpd = httpd
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()


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
