"""The safe HTTP fetch behind the ``http_request`` activity.

Built on ``httpcore2`` (the low-level half of ``httpx2``, Pydantic's maintained fork of
httpx, already installed for the OpenAI/Anthropic SDKs) because it lets us plug in the one
thing an SSRF-safe client needs: a network backend. ``_PinnedBackend`` connects only to the
address ``netguard.check_url`` checked, so the name is never resolved a second time, while the
URL keeps the host name, which gives the right Host header, SNI and certificate check.
httpcore never reads proxy environment variables (a proxy would bypass the pin) and never
decodes bodies, so decompression happens here with a hard cap on *decoded* bytes.

One ``_Budget`` per call holds the total deadline and the cancel event: every socket operation
gets at most the time left, and a watcher thread shuts the sockets down when time runs out or
the user presses Stop, so a server that drips one byte a second cannot outlive ``timeout``.

Truncation: when the decoded body exceeds ``max_bytes`` only the first ``max_bytes`` are kept,
``truncated`` is True and ``text`` ends with a ``[truncated: ...]`` notice.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import selectors
import socket
import ssl
import threading
import time
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn
from urllib.parse import urljoin, urlsplit

import httpcore2

from tools_app.errors import PolicyDenied, ToolCancelled, ToolError, ToolTimeout
from tools_app.executors.http.charset import codec_trap, decode_text, text_codec
from tools_app.netguard import Target, check_url

ALLOWED_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD")
REDIRECT_STATUSES = {301, 302, 303, 307, 308}
USER_AGENT = "ControlCenter-http_request/0.1"
# Credentials must not follow a redirect to another origin.
_CREDENTIAL_HEADERS = {"authorization", "cookie", "proxy-authorization"}
# Framing and hop-by-hop headers are ours to set; letting the model set them invites request
# smuggling against the server.
_DROPPED_HEADERS = {
    "content-length", "transfer-encoding", "connection", "keep-alive", "te", "trailer",
    "upgrade", "proxy-connection", "proxy-authorization",
}  # fmt: skip
_TEXT_TYPES = {
    "application/json", "application/xml", "application/javascript", "application/ecmascript",
    "application/x-javascript", "application/x-www-form-urlencoded", "application/graphql",
    "application/yaml", "application/x-yaml", "application/toml", "application/sql",
    "application/x-ndjson", "application/csv",
}  # fmt: skip
_WATCH_INTERVAL = 0.05


@dataclass
class HttpResult:
    status: int
    headers: dict[str, str]  # names lower-cased; repeated headers joined with ", "
    text: str | None
    binary_note: str | None
    truncated: bool
    url: str  # final URL, after redirects
    redirects: list[str] = field(default_factory=list)  # each URL a redirect led to
    elapsed_ms: int = 0
    # The (decoded, capped) body bytes, for callers that parse documents themselves (the
    # research tool hands HTML to its extractor, which reads <meta charset> as well).
    raw: bytes = field(default=b"", repr=False)


class _Aborted(Exception):
    """Raised inside the transport when the budget is spent or the call was cancelled."""


class _Budget:
    def __init__(self, timeout: float, cancel: threading.Event | None) -> None:
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.cancel = cancel
        self.aborted: str | None = None  # "timeout" or "cancel"
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._done = threading.Event()

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def check(self) -> None:
        if self.aborted is None:
            if self.cancel is not None and self.cancel.is_set():
                self.aborted = "cancel"
            elif self.remaining() <= 0:
                self.aborted = "timeout"
        if self.aborted is not None:
            raise _Aborted(self.aborted)

    def clamp(self, timeout: float | None) -> float:
        self.check()
        left = self.remaining()
        return left if timeout is None else max(0.001, min(timeout, left))

    def register(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
        if self.aborted is not None:
            self._shutdown()

    def _shutdown(self) -> None:
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            # The base-class call works on TLS sockets too without touching their SSL state,
            # and wakes any thread blocked in recv/send on that socket.
            with contextlib.suppress(OSError):
                socket.socket.shutdown(sock, socket.SHUT_RDWR)

    def _watch(self) -> None:
        while not self._done.wait(_WATCH_INTERVAL):
            try:
                self.check()
            except _Aborted:
                self._shutdown()
                return

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        watcher = threading.Thread(target=self._watch, name="http-fetch-watch", daemon=True)
        watcher.start()
        try:
            yield
        finally:
            self._done.set()


@contextlib.contextmanager
def _mapped(timeout_exc: type[Exception], error_exc: type[Exception]) -> Iterator[None]:
    try:
        yield
    except TimeoutError as exc:
        raise timeout_exc(str(exc) or "timed out") from exc
    except OSError as exc:
        raise error_exc(str(exc)) from exc


class _PinnedStream(httpcore2.NetworkStream):
    def __init__(self, sock: socket.socket, budget: _Budget) -> None:
        self._sock = sock
        self._budget = budget
        budget.register(sock)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        with _mapped(httpcore2.ReadTimeout, httpcore2.ReadError):
            self._sock.settimeout(self._budget.clamp(timeout))
            return self._sock.recv(max_bytes)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        view = memoryview(buffer)
        with _mapped(httpcore2.WriteTimeout, httpcore2.WriteError):
            while view:
                self._sock.settimeout(self._budget.clamp(timeout))
                sent = self._sock.send(view)
                view = view[sent:]

    def close(self) -> None:
        self._sock.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore2.NetworkStream:
        with _mapped(httpcore2.ConnectTimeout, httpcore2.ConnectError):
            # Handshake after wrapping so the watcher can interrupt a stalled handshake too.
            tls = ssl_context.wrap_socket(
                self._sock, server_hostname=server_hostname, do_handshake_on_connect=False
            )
            stream = _PinnedStream(tls, self._budget)
            tls.settimeout(self._budget.clamp(timeout))
            tls.do_handshake()
        return stream

    def get_extra_info(self, info: str) -> Any:
        if info == "ssl_object" and isinstance(self._sock, ssl.SSLSocket):
            return self._sock  # offers selected_alpn_protocol(), which is all httpcore asks
        if info == "socket":
            return self._sock
        if info == "is_readable":
            with selectors.DefaultSelector() as sel:
                sel.register(self._sock, selectors.EVENT_READ)
                return bool(sel.select(0))
        return None


class _PinnedBackend(httpcore2.NetworkBackend):
    """Connects to the checked address of one Target and refuses anything else."""

    def __init__(self, target: Target, budget: _Budget) -> None:
        self._target = target
        self._budget = budget

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore2.NetworkStream:
        if host != self._target.host or port != self._target.port:
            raise httpcore2.ConnectError(f"refusing to connect to unchecked {host}:{port}")
        address = self._target.address
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            with _mapped(httpcore2.ConnectTimeout, httpcore2.ConnectError):
                self._connect(sock, (address, port), self._budget.clamp(timeout))
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except BaseException:
            sock.close()
            raise
        return _PinnedStream(sock, self._budget)

    def _connect(self, sock: socket.socket, sockaddr: tuple[str, int], timeout: float) -> None:
        # Non-blocking connect polled in short slices, so Stop works while a SYN goes unanswered.
        sock.setblocking(False)
        code = sock.connect_ex(sockaddr)
        if code not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK):
            raise ConnectionError(code, os.strerror(code))
        give_up = time.monotonic() + timeout
        with selectors.DefaultSelector() as sel:
            sel.register(sock, selectors.EVENT_WRITE)
            while code != 0:
                self._budget.check()
                left = give_up - time.monotonic()
                if left <= 0:
                    raise TimeoutError("connect timed out")
                if sel.select(min(_WATCH_INTERVAL * 2, left)):
                    code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if code:
                        raise ConnectionError(code, os.strerror(code))
                    break
        sock.setblocking(True)


@functools.lru_cache(maxsize=1)
def _default_ssl_context() -> ssl.SSLContext:
    ctx = httpcore2.default_ssl_context()
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


def fetch(
    method: str,
    url: str,
    *,
    headers: dict[str, str] | None = None,
    body: str | bytes | None = None,
    json_body: object | None = None,
    timeout: float = 30.0,
    max_bytes: int = 1_000_000,
    follow_redirects: bool = True,
    max_redirects: int = 5,
    allowed_hosts: Sequence[str] = (),
    private_allowed: Sequence[str] = (),
    cancel: threading.Event | None = None,
    ssl_context: ssl.SSLContext | None = None,
) -> HttpResult:
    """Send one request through the SSRF guard and return the (capped) response.

    ``timeout`` bounds the whole call: resolution, every redirect hop and the body.
    ``ssl_context`` replaces the system trust store (tests, or an internal CA).
    Raises PolicyDenied when the guard refuses the URL or a redirect, ToolTimeout,
    ToolCancelled, or ToolError for anything else.
    """
    method = _check_method(method)
    if timeout <= 0 or max_bytes <= 0:
        raise ToolError("timeout and max_bytes must be positive")
    content, req_headers = _prepare_request(headers or {}, body, json_body)
    budget = _Budget(timeout, cancel)
    ctx = ssl_context or _default_ssl_context()
    started = time.monotonic()
    redirects: list[str] = []
    current = url
    with budget.watching(), _translating_aborts(budget):
        target = _check_in_time(current, budget, allowed_hosts, private_allowed)
        while True:
            hop = _send(
                target, method, req_headers, content, budget, ctx, max_bytes, follow_redirects
            )
            if hop.location is None:
                break
            if len(redirects) >= max_redirects:
                raise ToolError(f"stopped after {max_redirects} redirects (last: {target.url})")
            current = urljoin(target.url, hop.location)
            try:
                nxt = _check_in_time(current, budget, allowed_hosts, private_allowed)
            except PolicyDenied as exc:
                raise PolicyDenied(f"redirect to {current} refused: {exc.reason}") from exc
            redirects.append(nxt.url)
            if (nxt.scheme, nxt.host, nxt.port) != (target.scheme, target.host, target.port):
                req_headers = [
                    (k, v) for k, v in req_headers if k.lower() not in _CREDENTIAL_HEADERS
                ]
            if hop.status == 303 or (hop.status in (301, 302) and method == "POST"):
                method = "HEAD" if method == "HEAD" else "GET"
                content = None
                req_headers = [
                    (k, v) for k, v in req_headers if not k.lower().startswith("content-")
                ]
            target = nxt
    result = hop.result
    result.url, result.redirects = target.url, redirects
    result.elapsed_ms = int((time.monotonic() - started) * 1000)
    return result


def _check_method(method: str) -> str:
    upper = str(method).upper()
    if upper not in ALLOWED_METHODS:
        raise ToolError(
            f"method {method!r} is not allowed; use one of {', '.join(ALLOWED_METHODS)}"
        )
    return upper


def _prepare_request(
    headers: dict[str, str], body: str | bytes | None, json_body: object | None
) -> tuple[bytes | None, list[tuple[str, str]]]:
    if body is not None and json_body is not None:
        raise ToolError("give either body or json, not both")
    out: list[tuple[str, str]] = []
    for name, value in headers.items():
        name, value = str(name).strip(), str(value)
        if not name or not name.isascii() or any(c in name for c in ' \t\r\n:()<>@,;"/[]?={}'):
            raise ToolError(f"invalid header name {name!r}")
        if any(c in value for c in "\r\n\x00"):
            raise ToolError(f"header {name!r} contains a line break")
        if not value.isascii():
            raise ToolError(f"header {name!r} must be ASCII (percent- or base64-encode it)")
        if name.lower() == "host":
            raise ToolError("the Host header is set from the URL and cannot be overridden")
        if name.lower() not in _DROPPED_HEADERS:
            out.append((name, value))
    present = {k.lower() for k, _ in out}
    content: bytes | None = None
    if json_body is not None:
        try:
            content = json.dumps(json_body, allow_nan=False).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise ToolError(f"json body cannot be serialised: {exc}") from exc
        if "content-type" not in present:
            out.append(("Content-Type", "application/json"))
    elif isinstance(body, bytes):  # a binary body (OTLP's protobuf) names its own type
        content = body
        if "content-type" not in present:
            out.append(("Content-Type", "application/octet-stream"))
    elif body is not None:
        content = body.encode("utf-8")
        if "content-type" not in present:
            out.append(("Content-Type", "text/plain; charset=utf-8"))
    defaults = {"user-agent": USER_AGENT, "accept": "*/*", "accept-encoding": "gzip, deflate"}
    out.extend((k.title(), v) for k, v in defaults.items() if k not in present)
    return content, out


def _check_in_time(
    url: str, budget: _Budget, allowed: Sequence[str], private: Sequence[str]
) -> Target:
    """check_url in a helper thread: getaddrinfo cannot be interrupted, but we can stop waiting."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["target"] = check_url(url, allowed_hosts=allowed, private_allowed=private)
        except BaseException as exc:  # handed over to the caller below
            box["error"] = exc

    budget.check()
    worker = threading.Thread(target=work, name="netguard-resolve", daemon=True)
    worker.start()
    while worker.is_alive():
        budget.check()
        worker.join(min(_WATCH_INTERVAL, max(budget.remaining(), 0.001)))
    if "error" in box:
        raise box["error"]
    return box["target"]


@contextlib.contextmanager
def _translating_aborts(budget: _Budget) -> Iterator[None]:
    try:
        yield
    except _Aborted:
        _raise_abort(budget)


def _raise_abort(budget: _Budget) -> NoReturn:
    if budget.aborted == "cancel":
        raise ToolCancelled()
    raise ToolTimeout(budget.timeout)


@dataclass
class _Hop:
    status: int
    location: str | None
    result: HttpResult


def _send(
    target: Target,
    method: str,
    headers: list[tuple[str, str]],
    content: bytes | None,
    budget: _Budget,
    ctx: ssl.SSLContext,
    max_bytes: int,
    follow: bool,
) -> _Hop:
    default_port = 443 if target.scheme == "https" else 80
    host = f"[{target.host}]" if ":" in target.host else target.host
    host_header = host if target.port == default_port else f"{host}:{target.port}"
    parts = urlsplit(target.url)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    request_url = httpcore2.URL(
        scheme=target.scheme, host=target.host, port=target.port, target=path
    )
    wire_headers = [("Host", host_header), *headers]
    if content is not None or method in ("POST", "PUT", "PATCH"):
        # An explicit zero keeps servers that insist on a length (411) happy.
        wire_headers.append(("Content-Length", str(len(content or b""))))
    left = budget.clamp(None)
    extensions = {
        "timeout": {"connect": left, "read": left, "write": left, "pool": left},
        "sni_hostname": target.host,
    }
    backend = _PinnedBackend(target, budget)
    where = f"{target.host}:{target.port} ({target.address})"
    try:
        with (
            httpcore2.ConnectionPool(ssl_context=ctx, network_backend=backend) as pool,
            pool.stream(
                method, request_url, headers=wire_headers, content=content, extensions=extensions
            ) as response,
        ):
            resp_headers = _header_dict(response.headers)
            location = resp_headers.get("location")
            if follow and response.status in REDIRECT_STATUSES and location:
                empty = HttpResult(response.status, resp_headers, "", None, False, target.url)
                return _Hop(response.status, _decode_location(location), empty)
            reader = _BodyReader(resp_headers, max_bytes)
            if method != "HEAD":
                reader.consume(response.iter_stream())
            result = reader.result(response.status, resp_headers, target.url)
            return _Hop(response.status, None, result)
    except (_Aborted, httpcore2.TimeoutException):
        # Every socket operation gets the whole remaining budget, so any timeout is ours.
        budget.aborted = budget.aborted or "timeout"
        _raise_abort(budget)
    except httpcore2.ConnectError as exc:
        if budget.aborted:
            _raise_abort(budget)
        # httpcore re-raises with "from None", so the TLS error is only in __context__.
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, ssl.SSLCertVerificationError):
            raise ToolError(
                f"TLS certificate of {target.host} could not be verified: {cause.verify_message}"
            ) from exc
        raise ToolError(f"could not connect to {where}: {exc}", permanent=False) from exc
    except (httpcore2.NetworkError, httpcore2.ProtocolError) as exc:
        if budget.aborted:
            _raise_abort(budget)
        raise ToolError(f"connection to {where} failed: {exc}", permanent=False) from exc


def _header_dict(raw: list[tuple[bytes, bytes]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in raw:
        key, text = name.decode("latin-1").lower(), value.decode("latin-1")
        out[key] = f"{out[key]}, {text}" if key in out else text
    return out


def _decode_location(value: str) -> str:
    # Header values arrive as latin-1; a UTF-8 Location is re-read as UTF-8 when it can be.
    raw = value.encode("latin-1")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return value


class _BodyReader:
    """Reads a response body, inflating gzip/deflate, capped at max_bytes of decoded data."""

    def __init__(self, headers: dict[str, str], max_bytes: int) -> None:
        self.max_bytes = max_bytes
        media, _, params = headers.get("content-type", "").partition(";")
        self.media_type = media.strip().lower()
        self.charset = _param(params, "charset")
        self.encoding = headers.get("content-encoding", "identity").strip().lower()
        self.data = bytearray()
        self.truncated = False
        self._inflater: Any = None
        if self.encoding in ("gzip", "x-gzip"):
            self._inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif self.encoding == "deflate":
            self._inflater = zlib.decompressobj(zlib.MAX_WBITS)
        self.undecoded = self._inflater is None and self.encoding not in ("identity", "")

    def consume(self, chunks: Iterator[bytes]) -> None:
        # Wire bytes are capped too: a stream of empty gzip members decodes to nothing forever.
        wire_limit = self.max_bytes + 65536
        wire = 0
        for chunk in chunks:
            wire += len(chunk)
            self._add(self._inflate(chunk) if self._inflater is not None else chunk)
            if self.truncated or wire > wire_limit:
                self.truncated = True
                return

    def _inflate(self, chunk: bytes) -> bytes:
        limit = self.max_bytes - len(self.data) + 1
        try:
            out = self._inflater.decompress(chunk, limit)
        except zlib.error:
            if self.encoding != "deflate" or self.data:
                raise ToolError("the response body is not valid compressed data") from None
            # Some servers send raw deflate without the zlib wrapper.
            self._inflater = zlib.decompressobj(-zlib.MAX_WBITS)
            out = self._inflater.decompress(chunk, limit)
        if self._inflater.eof and self._inflater.unused_data and self.encoding != "deflate":
            rest = self._inflater.unused_data  # next gzip member
            self._inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            out += self._inflater.decompress(rest, max(limit - len(out), 1))
        return out

    def _add(self, data: bytes) -> None:
        room = self.max_bytes - len(self.data)
        if len(data) > room:
            self.truncated = True
            data = data[:room]
        self.data += data

    def result(self, status: int, headers: dict[str, str], url: str) -> HttpResult:
        text, note = self._text()
        if text is not None and self.truncated:
            text += f"\n\n[truncated: only the first {self.max_bytes} bytes of the body are shown]"
        result = HttpResult(status, headers, text, note, self.truncated, url)
        result.raw = bytes(self.data)
        return result

    def _text(self) -> tuple[str | None, str | None]:
        if not self.data:
            return "", None  # HEAD, 204, 304 or simply empty: nothing to describe
        size = f"{'more than ' if self.truncated else ''}{len(self.data)} bytes"
        kind = self.media_type or "unknown type"
        if self.undecoded:
            return None, f"content encoded with {self.encoding} ({kind}, {size}) not shown"
        if not self._looks_textual():
            return None, f"binary content ({kind}, {size}) not shown"
        charset = self.charset or "utf-8"
        codec = text_codec(charset)
        if codec is None:
            shown = charset if len(charset) <= 40 else charset[:37] + "..."
            if codec_trap(charset):
                raise ToolError(
                    f"the response declares charset {shown!r}, which is a codec and not a "
                    "character set (a decompression bomb or a trick); it was not decoded"
                )
            return None, (
                f"binary content ({kind}, {size}, charset {shown!r} is not a known text "
                "encoding) not shown"
            )
        try:
            # A truncated body may end inside a multi-byte character: leave that tail out.
            text, cut = decode_text(
                bytes(self.data), codec, final=not self.truncated, max_chars=self.max_bytes
            )
        except UnicodeDecodeError:
            return None, f"binary content ({kind}, {size}, not decodable as {charset}) not shown"
        self.truncated = self.truncated or cut
        return text, None

    def _looks_textual(self) -> bool:
        media = self.media_type
        if not media:
            return b"\x00" not in self.data[:4096]
        return (
            media.startswith("text/") or media in _TEXT_TYPES or media.endswith(("+json", "+xml"))
        )


def _param(params: str, wanted: str) -> str | None:
    for part in params.split(";"):
        key, _, value = part.partition("=")
        if key.strip().lower() == wanted:
            return value.strip().strip('"').lower() or None
    return None
