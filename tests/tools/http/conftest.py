"""Real local HTTP servers for the HTTP tool tests. Every server records the requests it gets,
so an SSRF test can prove that nothing reached it. Servers bind only to loopback addresses."""

from __future__ import annotations

import contextlib
import functools
import gzip
import json
import socket
import socketserver
import ssl
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from tools_app.errors import ToolError

DRIP_LIMIT_SECONDS = 20  # a dripping response stops by itself even if the client never leaves


@dataclass
class Hit:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class _Handler(BaseHTTPRequestHandler):
    server: RecordingServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _any(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        hit = Hit(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        self.server.record(hit)
        route = ROUTES.get(urlsplit(self.path).path, _not_found)
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            route(self, hit)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _any

    def reply(
        self,
        status: int,
        body: bytes = b"",
        content_type: str = "text/plain; charset=utf-8",
        headers: list[tuple[str, str]] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        for name, value in headers or []:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.close_connection = True


def _query(hit: Hit) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(hit.path).query).items()}


def _not_found(h: _Handler, hit: Hit) -> None:
    h.reply(404, b"not found")


def _hello(h: _Handler, hit: Hit) -> None:
    h.reply(200, b"hello")


def _echo(h: _Handler, hit: Hit) -> None:
    data = {
        "method": hit.method,
        "path": hit.path,
        "headers": hit.headers,
        "body": hit.body.decode("utf-8", "replace"),
    }
    h.reply(200, json.dumps(data).encode(), "application/json")


def _redirect(h: _Handler, hit: Hit) -> None:
    q = _query(hit)
    h.reply(int(q.get("code", "302")), b"", headers=[("Location", q["to"])])


def _loop(h: _Handler, hit: Hit) -> None:
    h.reply(302, b"", headers=[("Location", "/loop")])


def _big(h: _Handler, hit: Hit) -> None:
    n = int(_query(hit).get("n", "5000"))
    h.reply(200, (b"abcdefghij" * (n // 10 + 1))[:n])


def _binary(h: _Handler, hit: Hit) -> None:
    h.reply(200, b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40, "image/png")


def _headers(h: _Handler, hit: Hit) -> None:
    h.reply(
        200, b"{}", "application/json", [("X-Custom", "abc"), ("X-Multi", "1"), ("X-Multi", "2")]
    )


def _gzip(h: _Handler, hit: Hit) -> None:
    h.reply(200, gzip.compress(b"compressed hello " * 10), headers=[("Content-Encoding", "gzip")])


def _deflate(h: _Handler, hit: Hit) -> None:
    h.reply(200, zlib.compress(b"deflated hello"), headers=[("Content-Encoding", "deflate")])


@functools.cache
def gzip_bomb() -> bytes:
    # 50 MB of zeros compresses to about 50 KB: small on the wire, huge once decoded.
    return gzip.compress(b"\0" * 50_000_000, compresslevel=9)


def _bomb(h: _Handler, hit: Hit) -> None:
    h.reply(200, gzip_bomb(), "text/plain", [("Content-Encoding", "gzip")])


def _latin1(h: _Handler, hit: Hit) -> None:
    h.reply(200, "café".encode("latin-1"), "text/plain; charset=iso-8859-1")


def _not_utf8(h: _Handler, hit: Hit) -> None:
    h.reply(200, b"\xff\xfe\xfa bad", "text/plain")


def _utf8_cut(h: _Handler, hit: Hit) -> None:
    h.reply(200, "é".encode() * 100, "text/plain; charset=utf-8")


def _drip(h: _Handler, hit: Hit) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "text/plain")
    h.send_header("Content-Length", "100000")
    h.end_headers()
    h.wfile.flush()
    stop = time.monotonic() + DRIP_LIMIT_SECONDS
    while time.monotonic() < stop:
        h.wfile.write(b"x")
        h.wfile.flush()
        time.sleep(0.5)
    h.close_connection = True


def _slow_headers(h: _Handler, hit: Hit) -> None:
    time.sleep(3)
    h.reply(200, b"late")


ROUTES: dict[str, Callable[[_Handler, Hit], None]] = {
    "/hello": _hello,
    "/echo": _echo,
    "/redirect": _redirect,
    "/loop": _loop,
    "/big": _big,
    "/binary": _binary,
    "/headers": _headers,
    "/gzip": _gzip,
    "/deflate": _deflate,
    "/bomb": _bomb,
    "/latin1": _latin1,
    "/not-utf8": _not_utf8,
    "/utf8": _utf8_cut,
    "/drip": _drip,
    "/slow-headers": _slow_headers,
}


class RecordingServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, host: str, tls: ssl.SSLContext | None = None, port: int = 0) -> None:
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.host = host
        super().__init__((host, port), _Handler)
        self.port: int = self.server_address[1]
        self.hits: list[Hit] = []
        self._lock = threading.Lock()
        self._tls = tls
        self.sni_names: list[str | None] = []
        if tls is not None:
            tls.sni_callback = self._remember_sni

    def server_bind(self) -> None:
        # Skip HTTPServer's reverse lookup of the bind address: slow and pointless here.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.host, self.server_address[1]

    def _remember_sni(self, sock: ssl.SSLObject, name: str | None, ctx: ssl.SSLContext) -> None:
        self.sni_names.append(name)

    def get_request(self) -> tuple[socket.socket, object]:
        sock, addr = super().get_request()
        if self._tls is not None:
            try:
                sock.settimeout(5)
                sock = self._tls.wrap_socket(sock, server_side=True)
                sock.settimeout(None)
            except (ssl.SSLError, OSError):
                sock.close()
                raise
        return sock, addr

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # aborted clients are expected in these tests

    def record(self, hit: Hit) -> None:
        with self._lock:
            self.hits.append(hit)

    def url(self, path: str = "/hello") -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        scheme = "https" if self._tls else "http"
        return f"{scheme}://{host}:{self.port}{path}"


@contextlib.contextmanager
def serving(
    host: str, tls: ssl.SSLContext | None = None, port: int = 0
) -> Iterator[RecordingServer]:
    server = RecordingServer(host, tls, port)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def ipv6_loopback_works() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.fixture(scope="session")
def victim() -> Iterator[RecordingServer]:
    """The server an attacker wants to reach: 127.0.0.1, never allowed."""
    with serving("127.0.0.1") as server:
        yield server


@pytest.fixture(scope="session")
def victim6() -> Iterator[RecordingServer | None]:
    """The same on [::1], or None where IPv6 loopback does not work."""
    if not ipv6_loopback_works():
        yield None
        return
    with serving("::1") as server:
        yield server


@pytest.fixture(scope="session")
def allowed() -> Iterator[RecordingServer]:
    """A server an admin allowed (private_allowed=["127.0.0.2"]); used to bounce redirects."""
    with serving("127.0.0.2") as server:
        yield server


@pytest.fixture(scope="session")
def local() -> Iterator[RecordingServer]:
    """A plain server for happy paths, on 127.0.0.3 (allowed in those tests)."""
    with serving("127.0.0.3") as server:
        yield server


@pytest.fixture
def fake_dns(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Names the test maps to addresses; every other name goes to the real resolver.
    Patching the stdlib resolver keeps such tests off the network."""
    table: dict[str, list[str]] = {}
    real = socket.getaddrinfo

    def fake(host: object, port: object, *args: object, **kwargs: object) -> list[tuple]:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name not in table:
            return real(host, port, *args, **kwargs)  # type: ignore[arg-type]
        out = []
        for address in table[name]:
            family = socket.AF_INET6 if ":" in address else socket.AF_INET
            sockaddr = (address, port, 0, 0) if ":" in address else (address, port)
            out.append((family, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", sockaddr))
        return out

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    return table


def assert_tool_error(exc: BaseException, words: str) -> None:
    assert isinstance(exc, ToolError)
    assert words in str(exc), str(exc)
