"""A cap on HTTP request bodies (MAX_REQUEST_BODY_BYTES), for every request, before anything
holds a body in memory: an unauthenticated client must not make the server buffer 300 MB.

Two places, because the server and the application see a body at different times:

- ``BodyLimit``, ASGI middleware around the whole HTTP application: a ``Content-Length`` over
  the cap is answered 413 at once; a body without one (chunked) stops at the cap. This is what
  an ASGI server that streams bodies to the application (uvicorn, hypercorn) needs.
- ``CappedServer``, the Daphne server ``manage.py serve`` runs. Daphne (Twisted) receives a
  whole body into a temporary file, then queues all of it in memory for the application
  before the application has seen a single header: middleware comes too late there (measured:
  +308 MB for a 300 MB POST with a bad token). Its requests are refused while the body
  arrives instead, the way Twisted itself refuses a malformed one.
"""

from __future__ import annotations

from typing import Any

from daphne.http_protocol import HTTPFactory, WebRequest
from daphne.server import Server
from django.conf import settings

TOO_LARGE = b"request body too large\n"


class BodyTooLarge(Exception):
    """The request body went past the cap while the application was reading it."""


def _limit() -> int:
    return int(settings.MAX_REQUEST_BODY_BYTES)


class BodyLimit:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = _limit()
        declared = [v for k, v in scope["headers"] if k.lower() == b"content-length"]
        if declared and declared[0].strip().isdigit() and int(declared[0]) > limit:
            await _refuse(send)
            return
        received = 0
        started = False

        async def capped_receive() -> Any:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge
            return message

        async def watched_send(message: Any) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, capped_receive, watched_send)
        except BodyTooLarge:
            if not started:
                await _refuse(send)


async def _refuse(send: Any) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(TOO_LARGE)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": TOO_LARGE})


class CappedWebRequest(WebRequest):  # type: ignore[misc]  # Daphne is untyped
    """Daphne's request, refused with 413 (and the connection closed) once its body is known
    to be larger than the cap: from ``Content-Length`` before any of it is stored, or while a
    chunked body arrives."""

    _received = 0
    _refused = False

    def gotLength(self, length: int | None) -> None:
        if length is not None and length > _limit():
            self._refuse()
        super().gotLength(0 if self._refused else length)

    def handleContentChunk(self, data: bytes) -> None:
        if self._refused:
            return
        self._received += len(data)
        if self._received > _limit():
            self._refuse()
            return
        super().handleContentChunk(data)

    def process(self) -> Any:
        if self._refused:  # the rest of the body arrived in the same read: nothing to run
            return None
        return super().process()

    def _refuse(self) -> None:
        self._refused = True
        head = (
            b"HTTP/1.1 413 Content Too Large\r\n"
            b"Content-Type: text/plain; charset=utf-8\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(TOO_LARGE)
        )
        self.channel.transport.write(head + TOO_LARGE)
        self.channel.loseConnection()


class CappedHTTPFactory(HTTPFactory):  # type: ignore[misc]
    def buildProtocol(self, addr: Any) -> Any:
        protocol = super().buildProtocol(addr)
        protocol.requestFactory = CappedWebRequest
        return protocol


class CappedServer(Server):  # type: ignore[misc]
    """Daphne's server with ``CappedWebRequest``. Daphne builds its HTTP factory inside
    ``run()`` with no way to choose the class, so the factory it assigns is replaced by ours
    as it is assigned. (Should Daphne stop assigning it, reading it fails and the server does
    not start: nothing runs uncapped unnoticed.)"""

    @property
    def http_factory(self) -> Any:
        return self._capped_http_factory

    @http_factory.setter
    def http_factory(self, _daphnes: Any) -> None:
        self._capped_http_factory = CappedHTTPFactory(self)
