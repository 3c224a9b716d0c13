"""The charset bomb through an MCP server over HTTP (issue 20, finding 1): the MCP client
(httpx2) decodes an event stream with whatever codec the server's charset names; only an
assert inside the bytes-to-bytes codecs (gone under ``python -O``) kept ``bz2_codec`` from
inflating. The client now reads such a stream as UTF-8. Real servers on a loopback address."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from tests.security.test_charset_bomb import MAX_GROWTH, bz2_bomb, peak_rss_growth
from tests.tools.research.servers import Hit, Response, Server, serving
from tools_app.executors.mcp.launch import ServerSpec, pinned_http_client
from tools_app.executors.mcp.services import mcp_refresh, mcp_server_add
from tools_app.executors.mcp.settings import McpSettings
from tools_app.models import ToolSource
from tools_app.services.sources import SourceError

HOST = "127.0.0.35"
EVENT = b'event: message\ndata: {"jsonrpc": "2.0"}\n\n'


def _bomb(hit: Hit, server: Server) -> Response:
    return 200, [("Content-Type", "text/event-stream; charset=bz2_codec")], bz2_bomb()


def _mislabelled(hit: Hit, server: Server) -> Response:
    return 200, [("Content-Type", f"text/event-stream; charset={hit.query['c']}")], EVENT


@pytest.fixture
def bomber() -> Iterator[Server]:
    bz2_bomb()  # built before anything is measured
    routes = {("POST", "/mcp"): _bomb, ("GET", "/mcp"): _bomb, ("GET", "/sse"): _mislabelled}
    with serving(HOST, routes) as server:
        yield server


@pytest.mark.parametrize("charset", ["bz2_codec", "zlib_codec", "hex_codec", "punycode"])
def test_the_mcp_client_reads_a_stream_in_no_text_encoding_as_utf8(
    bomber: Server, charset: str
) -> None:
    spec = ServerSpec(
        name="bomber",
        revision=1,
        transport="http",
        url=bomber.url("/sse"),
        settings=McpSettings(private_allowed=[HOST]),
    )

    async def read() -> str:
        async with (
            pinned_http_client(spec) as client,
            client.stream("GET", bomber.url(f"/sse?c={charset}")) as response,
        ):
            return "".join([text async for text in response.aiter_text()])

    assert asyncio.run(read()) == EVENT.decode()


def test_an_mcp_server_cannot_inflate_its_charset(
    bomber: Server, transactional_db: None, staff_user: Any
) -> None:
    source = mcp_server_add(
        name="bomber", url=bomber.url("/mcp"), allow_private=True, user=staff_user
    )
    with peak_rss_growth() as growth, pytest.raises(SourceError):
        mcp_refresh(source)

    assert growth[0] < MAX_GROWTH, f"RSS grew by {growth[0] / 2**20:.0f} MiB"
    source.refresh_from_db()
    assert source.state == ToolSource.State.DOWN
