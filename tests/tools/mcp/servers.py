"""A real streamable-HTTP MCP server (the official SDK's MCPServer) for the tests, started on
a free loopback port: an echo tool, a deliberately slow tool that reports progress and
records whether it was cancelled, and a tool returning an image and a resource."""

# No `from __future__ import annotations`: the SDK reads the tools' annotations at run time.
import asyncio
import base64
import struct
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import EmbeddedResource, ImageContent, TextContent, TextResourceContents

from tests.httpserver import serving_asgi


def tiny_png(width: int = 3, height: int = 2) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    raw = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


@dataclass
class Observed:
    """What the server saw, for assertions."""

    slow_started: threading.Event = field(default_factory=threading.Event)
    slow_cancelled: threading.Event = field(default_factory=threading.Event)
    slow_finished: threading.Event = field(default_factory=threading.Event)
    headers: list[dict[str, str]] = field(default_factory=list)


def make_server(observed: Observed) -> Any:
    server = MCPServer("test-tools")

    @server.tool(description="Echo the text back, upper-cased when asked.")
    def echo(text: str, upper: bool = False) -> str:
        return text.upper() if upper else text

    @server.tool(description="Wait a long time, reporting progress every 0.1 s.")
    async def slow(seconds: float, ctx: Context) -> str:
        observed.slow_started.set()
        steps = int(seconds * 10)
        try:
            for step in range(steps):
                await ctx.report_progress(step, steps, f"step {step}")
                await asyncio.sleep(0.1)
        except asyncio.CancelledError:
            observed.slow_cancelled.set()
            raise
        observed.slow_finished.set()
        return "done"

    @server.tool(description="A small picture and a note about it.")
    def picture() -> list[Any]:
        return [
            TextContent(type="text", text="a red picture"),
            ImageContent(
                type="image", data=base64.b64encode(tiny_png()).decode(), mime_type="image/png"
            ),
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(
                    uri="note://picture", text="3 by 2 pixels", mime_type="text/plain"
                ),
            ),
        ]

    @server.tool(description="Add a tool named after the argument and announce the change.")
    async def grow(name: str, ctx: Context) -> str:
        def grown(text: str) -> str:
            return f"{name}: {text}"

        server.add_tool(grown, name=name, description=f"A tool added at run time ({name}).")
        await ctx.session.send_tool_list_changed()
        return f"added {name}"

    @server.tool(description="Block the server's event loop (a hung server).")
    async def hang(seconds: float) -> str:
        time.sleep(seconds)  # noqa: ASYNC251 - on purpose: nothing else is answered meanwhile
        return "woke up"

    @server.tool(description="Always fails.")
    def broken() -> str:
        raise ToolError("this tool is broken on purpose")

    return server


@contextmanager
def serve_mcp(
    observed: Observed | None = None, *, sse: bool = False
) -> Iterator[tuple[str, Observed]]:
    from starlette.types import ASGIApp, Receive, Scope, Send

    observed = observed or Observed()
    server_ = make_server(observed)
    app = server_.sse_app() if sse else server_.streamable_http_app()

    def recording(inner: ASGIApp) -> ASGIApp:
        async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                observed.headers.append(
                    {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
                )
            await inner(scope, receive, send)

        return wrapped

    with serving_asgi(recording(app), timeout_graceful_shutdown=2) as url:
        yield f"{url}/{'sse' if sse else 'mcp'}", observed
