"""Real local web servers for the browser tests.

``Site`` serves pages from a table and records every HTTP request AND every TCP connection it
accepts, so a test can prove that nothing reached a victim, not even a bare connect.
Servers listen on separate loopback addresses because the SSRF guard's exceptions
(``private_allowed``) are per host/IP, not per port: the page server (127.0.0.1) is allowed,
the victim (127.0.0.2) never is, and 127.0.0.3 is allowed by the address guard but not by
the domain allowlist.
"""

from __future__ import annotations

import contextlib
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

Response = tuple[int, list[tuple[str, str]], bytes]
Page = Callable[["Request"], Response]


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    site: Site


def html(title: str, body: str, *, head: str = "") -> Response:
    doc = (
        f"<!doctype html><html><head><title>{title}</title>{head}</head><body>{body}</body></html>"
    )
    return 200, [("Content-Type", "text/html; charset=utf-8")], doc.encode()


class _Handler(BaseHTTPRequestHandler):
    server: Site
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        request = Request(
            self.command,
            self.path,
            {k: v[0] for k, v in parse_qs(parts.query).items()},
            {k.lower(): v for k, v in self.headers.items()},
            self.server,
        )
        self.server.record(request)
        page = self.server.pages.get(parts.path)
        status, headers, body = page(request) if page else (200, [], b"victim says hello")
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.send_response(status)
            names = {k.lower() for k, _ in headers}
            if "content-type" not in names:
                self.send_header("Content-Type", "text/plain; charset=utf-8")
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    do_POST = do_GET


class Site(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, host: str, pages: dict[str, Page] | None = None) -> None:
        self.host = host
        self.pages: dict[str, Page] = pages or {}
        self.hits: list[Request] = []
        self.connections = 0
        self._lock = threading.Lock()
        super().__init__((host, 0), _Handler)
        self.port: int = self.server_address[1]

    def server_bind(self) -> None:
        socketserver.TCPServer.server_bind(self)  # no reverse DNS lookup
        self.server_name, self.server_port = self.host, self.server_address[1]

    def get_request(self) -> tuple[socket.socket, object]:
        sock, addr = super().get_request()
        with self._lock:
            self.connections += 1
        return sock, addr

    def handle_error(self, request: object, client_address: object) -> None:
        pass

    def record(self, request: Request) -> None:
        with self._lock:
            self.hits.append(request)

    def reset(self) -> None:
        with self._lock:
            self.hits.clear()
            self.connections = 0

    def paths(self) -> list[str]:
        with self._lock:
            return [h.path for h in self.hits]

    @property
    def origin(self) -> str:
        return f"http://{self.host}:{self.port}"

    def url(self, path: str = "/") -> str:
        return self.origin + path

    def assert_untouched(self) -> None:
        # Give a straggling request (a timer, a beacon) a moment to show up.
        time.sleep(0.3)
        assert self.hits == [] and self.connections == 0, (
            f"{self.host} was reached: {self.connections} connection(s), "
            f"requests {[h.path for h in self.hits]}"
        )


@contextlib.contextmanager
def serving(host: str, pages: dict[str, Page] | None = None) -> Iterator[Site]:
    site = Site(host, pages)
    thread = threading.Thread(target=site.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield site
    finally:
        site.shutdown()
        site.server_close()
