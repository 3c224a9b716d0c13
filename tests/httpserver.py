"""Real HTTP servers for the tests, started in the test process on a loopback address.

``serving(host, routes)`` answers each request with the route for its path and records it, and
every TCP connection it accepts, so an SSRF test can prove that nothing reached a server, not
even a bare connect. The SSRF guard's exceptions are per host, not per port, so tests give
each server a loopback address of its own (127.0.0.2, ``::1``...). ``serving_asgi(app)``
serves an ASGI application (FastAPI, the MCP SDK's servers) with uvicorn.

A route takes the request (``Hit``) and returns ``(status, headers, body)``. The reply gets a
``Content-Type`` (text/plain unless the route names one), a ``Content-Length`` for a bytes body
(unless the route declares its own) and ``Connection: close``; a body that is an iterable of
chunks is sent chunk by chunk as they come (a server that drips its answer).
"""

from __future__ import annotations

import contextlib
import json
import socket
import socketserver
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

Response = tuple[int, list[tuple[str, str]], bytes | Iterable[bytes]]


@dataclass
class Hit:
    """One request, as the server saw it."""

    method: str
    target: str  # as sent: the path and the query
    path: str
    query: dict[str, str]  # the first value of each parameter
    headers: dict[str, str]  # names lower-cased
    body: bytes
    server: Any  # the HttpServer (or subclass) that got it

    def json(self) -> Any:
        return json.loads(self.body)


Route = Callable[[Hit], Response]
Routes = dict[Any, Route]  # keys: a path, or (method, path) with "*" for any method


def not_found(hit: Hit) -> Response:
    return 404, [], b"not found"


class _Handler(BaseHTTPRequestHandler):
    server: HttpServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _any(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        hit = Hit(
            method=self.command,
            target=self.path,
            path=parts.path,
            query={k: v[0] for k, v in parse_qs(parts.query).items()},
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            server=self.server,
        )
        self.server.record(hit)
        status, headers, payload = self.server.route_for(hit)(hit)
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._reply(status, headers, payload)
        self.close_connection = True

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _any

    def _reply(self, status: int, headers: list[tuple[str, str]], body: Any) -> None:
        names = {name.lower() for name, _ in headers}
        self.send_response(status)
        if "content-type" not in names:
            self.send_header("Content-Type", "text/plain; charset=utf-8")
        for name, value in headers:
            self.send_header(name, value)
        if isinstance(body, bytes) and "content-length" not in names:
            self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command == "HEAD":
            return
        if isinstance(body, bytes):
            self.wfile.write(body)
            return
        self.wfile.flush()
        for chunk in body:
            self.wfile.write(chunk)
            self.wfile.flush()


class HttpServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        host: str = "127.0.0.1",
        routes: Routes | None = None,
        *,
        default: Route = not_found,
        tls: ssl.SSLContext | None = None,
        port: int = 0,
    ) -> None:
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.host = host
        self.routes: Routes = dict(routes or {})
        self.default = default
        self.hits: list[Hit] = []
        self.connections = 0
        self.sni_names: list[str | None] = []
        self._lock = threading.Lock()
        self._tls = tls
        if tls is not None:
            tls.sni_callback = self._remember_sni
        super().__init__((host, port), _Handler)
        self.port: int = self.server_address[1]

    def server_bind(self) -> None:
        # Skip HTTPServer's reverse lookup of the bind address: slow and pointless here.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.host, self.server_address[1]

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, addr = super().get_request()
        with self._lock:
            self.connections += 1
        if self._tls is not None:
            try:
                sock.settimeout(5)
                sock = self._tls.wrap_socket(sock, server_side=True)
                sock.settimeout(None)
            except (ssl.SSLError, OSError):
                sock.close()
                raise
        return sock, addr

    def _remember_sni(self, sock: ssl.SSLObject, name: str | None, ctx: ssl.SSLContext) -> None:
        self.sni_names.append(name)

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # aborted clients are expected in these tests

    def route_for(self, hit: Hit) -> Route:
        return (
            self.routes.get((hit.method, hit.path))
            or self.routes.get(("*", hit.path))
            or self.routes.get(hit.path)
            or self.default
        )

    def record(self, hit: Hit) -> None:
        with self._lock:
            self.hits.append(hit)

    def paths(self) -> list[str]:
        with self._lock:
            return [h.path for h in self.hits]

    def reset(self) -> None:
        with self._lock:
            self.hits.clear()
            self.connections = 0

    @property
    def origin(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self._tls else 'http'}://{host}:{self.port}"

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
def serving(
    host: str = "127.0.0.1",
    routes: Routes | None = None,
    *,
    default: Route = not_found,
    tls: ssl.SSLContext | None = None,
    port: int = 0,
    server_class: type[HttpServer] = HttpServer,
) -> Iterator[Any]:
    """A server on ``host`` (a free port unless ``port``) for the duration of the block."""
    server = server_class(host, routes, default=default, tls=tls, port=port)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serving_asgi(app: Any, **config: Any) -> Iterator[str]:
    """``app`` served by uvicorn on a free loopback port; yields its base URL. ``config``:
    more of uvicorn's settings (``lifespan``, ``timeout_graceful_shutdown``...)."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **config)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test ASGI server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
