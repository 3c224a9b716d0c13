"""A pinning SOCKS5 proxy between Chromium and the network: the DNS-rebinding fix.

The request router checks each URL, but Chromium would then resolve the host again when it
connects, and a hostile DNS server can answer the second time with 127.0.0.1. With this
proxy configured, Chromium resolves nothing itself (Playwright adds
``--host-resolver-rules=MAP * ~NOTFOUND`` for SOCKS proxies; loopback is proxied too): it
hands the host name to the proxy, which checks it with the same policy, resolves it once and
connects to exactly the address it checked. It also catches TCP connections that never
reach the router (speculative preconnects, workers' sockets, Chromium's own background
traffic): the router sees requests, the proxy sees sockets.

Deliberately small: SOCKS5 without authentication, CONNECT only, listening on 127.0.0.1.
WebRTC's UDP cannot use it and is switched off by a launch flag instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import time
from collections import deque
from collections.abc import Callable

from tools_app.errors import NetworkError, PolicyDenied
from tools_app.executors.browser.guard import Policy, reason_of, resolve_checked

logger = logging.getLogger(__name__)

CONNECT_TIMEOUT = 10.0
HANDSHAKE_TIMEOUT = 10.0
_BUFFER = 65536
# SOCKS5 reply codes (RFC 1928)
_OK, _FAILURE, _NOT_ALLOWED, _UNREACHABLE, _REFUSED = 0, 1, 2, 4, 5
_NO_COMMAND, _NO_ATYP = 7, 8


class PinningProxy:
    def __init__(self, policy: Callable[[], Policy]) -> None:
        self._policy = policy
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        # Recent refusals, to turn Chromium's bare "proxy connection failed" into the reason.
        self.refusals: deque[tuple[float, str, str]] = deque(maxlen=200)
        self.connections = 0

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self) -> int:
        if self._server is None:
            self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return self.port

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for task in list(self._tasks):
            task.cancel()

    def refusal_for(self, host: str, since: float) -> str | None:
        host = host.strip("[]").lower()
        for when, refused_host, reason in reversed(self.refusals):
            if when >= since and refused_host == host:
                return reason
        return None

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.ensure_future(self._serve(reader, writer))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream: asyncio.StreamWriter | None = None
        try:
            request = await asyncio.wait_for(self._handshake(reader, writer), HANDSHAKE_TIMEOUT)
            if request is None:
                return
            host, port = request
            try:
                target = await resolve_checked(self._policy(), host, port)
            except PolicyDenied as exc:
                reason = reason_of(exc)
                self.refusals.append((time.monotonic(), host.lower(), reason))
                logger.debug("browser proxy refused %s:%s: %s", host, port, reason)
                await _reply(writer, _NOT_ALLOWED)
                return
            except NetworkError:  # the name does not resolve: a network failure, not a refusal
                await _reply(writer, _UNREACHABLE)
                return
            try:
                up_reader, up_writer = await asyncio.wait_for(
                    asyncio.open_connection(target.address, port), CONNECT_TIMEOUT
                )
            except (TimeoutError, OSError) as exc:
                refused = isinstance(exc, ConnectionRefusedError)
                await _reply(writer, _REFUSED if refused else _UNREACHABLE)
                return
            upstream = up_writer
            self.connections += 1
            await _reply(writer, _OK)
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        except (TimeoutError, OSError, asyncio.IncompleteReadError):
            pass
        finally:
            for w in (writer, upstream):
                if w is not None:
                    with contextlib.suppress(Exception):
                        w.close()

    async def _handshake(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> tuple[str, int] | None:
        version, count = await reader.readexactly(2)
        methods = await reader.readexactly(count)
        if version != 5 or 0 not in methods:
            writer.write(b"\x05\xff")
            await writer.drain()
            return None
        writer.write(b"\x05\x00")
        await writer.drain()
        version, command, _reserved, atyp = await reader.readexactly(4)
        if atyp == 1:
            host = str(ipaddress.IPv4Address(await reader.readexactly(4)))
        elif atyp == 4:
            host = str(ipaddress.IPv6Address(await reader.readexactly(16)))
        elif atyp == 3:
            length = (await reader.readexactly(1))[0]
            host = (await reader.readexactly(length)).decode("ascii", "replace")
        else:
            await _reply(writer, _NO_ATYP)
            return None
        port = int.from_bytes(await reader.readexactly(2), "big")
        if version != 5 or command != 1:
            await _reply(writer, _NO_COMMAND)
            return None
        return host, port


async def _reply(writer: asyncio.StreamWriter, code: int) -> None:
    writer.write(bytes([5, code, 0, 1, 0, 0, 0, 0, 0, 0]))
    with contextlib.suppress(OSError):
        await writer.drain()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(_BUFFER):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        with contextlib.suppress(Exception):
            if writer.can_write_eof():
                writer.write_eof()
