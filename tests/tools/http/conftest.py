"""Real local HTTP servers for the HTTP tool tests. Every server records the requests it gets,
so an SSRF test can prove that nothing reached it. Servers bind only to loopback addresses."""

from __future__ import annotations

import contextlib
import functools
import gzip
import json
import socket
import ssl
import time
import zlib
from collections.abc import Iterator

import pytest

from tests.httpserver import Hit, HttpServer, Response, Routes
from tests.httpserver import serving as shared_serving
from tools_app.errors import ToolError

DRIP_LIMIT_SECONDS = 20  # a dripping response stops by itself even if the client never leaves


TEXT = [("Content-Type", "text/plain; charset=utf-8")]
JSON = [("Content-Type", "application/json")]


def _hello(hit: Hit) -> Response:
    return 200, [], b"hello"


def _echo(hit: Hit) -> Response:
    data = {
        "method": hit.method,
        "path": hit.target,
        "headers": hit.headers,
        "body": hit.body.decode("utf-8", "replace"),
    }
    return 200, JSON, json.dumps(data).encode()


def _redirect(hit: Hit) -> Response:
    return int(hit.query.get("code", "302")), [("Location", hit.query["to"])], b""


def _loop(hit: Hit) -> Response:
    return 302, [("Location", "/loop")], b""


def _big(hit: Hit) -> Response:
    n = int(hit.query.get("n", "5000"))
    return 200, [], (b"abcdefghij" * (n // 10 + 1))[:n]


def _binary(hit: Hit) -> Response:
    return 200, [("Content-Type", "image/png")], b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40


def _headers(hit: Hit) -> Response:
    return 200, [*JSON, ("X-Custom", "abc"), ("X-Multi", "1"), ("X-Multi", "2")], b"{}"


def _gzip(hit: Hit) -> Response:
    return 200, [("Content-Encoding", "gzip")], gzip.compress(b"compressed hello " * 10)


def _deflate(hit: Hit) -> Response:
    return 200, [("Content-Encoding", "deflate")], zlib.compress(b"deflated hello")


@functools.cache
def gzip_bomb() -> bytes:
    # 50 MB of zeros compresses to about 50 KB: small on the wire, huge once decoded.
    return gzip.compress(b"\0" * 50_000_000, compresslevel=9)


def _bomb(hit: Hit) -> Response:
    return 200, [("Content-Type", "text/plain"), ("Content-Encoding", "gzip")], gzip_bomb()


def _latin1(hit: Hit) -> Response:
    return 200, [("Content-Type", "text/plain; charset=iso-8859-1")], "café".encode("latin-1")


def _not_utf8(hit: Hit) -> Response:
    return 200, [("Content-Type", "text/plain")], b"\xff\xfe\xfa bad"


def _utf8_cut(hit: Hit) -> Response:
    return 200, TEXT, "é".encode() * 100


def _drip(hit: Hit) -> Response:
    def drops() -> Iterator[bytes]:
        stop = time.monotonic() + DRIP_LIMIT_SECONDS
        while time.monotonic() < stop:
            yield b"x"
            time.sleep(0.5)

    return 200, [("Content-Type", "text/plain"), ("Content-Length", "100000")], drops()


def _slow_headers(hit: Hit) -> Response:
    time.sleep(3)
    return 200, [], b"late"


ROUTES: Routes = {
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


class RecordingServer(HttpServer):
    def url(self, path: str = "/hello") -> str:
        return super().url(path)


def serving(
    host: str, tls: ssl.SSLContext | None = None, port: int = 0
) -> contextlib.AbstractContextManager[RecordingServer]:
    return shared_serving(host, ROUTES, tls=tls, port=port, server_class=RecordingServer)


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
