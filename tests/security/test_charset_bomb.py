"""The memory bomb through a response's charset (issue 20, finding 1).

A server names the codec its body is decoded with: ``text/plain; charset=bz2_codec`` turned
785 bytes into 1 GiB in the app process. The page here is served by a real server on a
loopback address and fetched through the real path (binding, execution, the HTTP client); the
process's peak resident set is measured around the call."""

from __future__ import annotations

import bz2
import codecs
import contextlib
import functools
import gzip
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.tools.conftest import Tools, configure, make_tools
from tests.tools.research.servers import Hit, Response, Server, serving
from tools_app.errors import ToolError
from tools_app.executors.http.charset import decode_text, text_codec
from tools_app.executors.http.client import fetch
from tools_app.models import ToolCall

HOST = "127.0.0.31"
BOMB_BYTES = 256 * 2**20
MAX_GROWTH = 50 * 2**20


@functools.cache
def bz2_bomb() -> bytes:
    """256 MiB of zeros as one bz2 stream of a few hundred bytes."""
    packer = bz2.BZ2Compressor(9)
    chunk = b"\0" * 2**20
    parts = [packer.compress(chunk) for _ in range(BOMB_BYTES // len(chunk))]
    return b"".join([*parts, packer.flush()])


def _bomb(hit: Hit, server: Server) -> Response:
    media = hit.query.get("type", "text/plain")
    return 200, [("Content-Type", f"{media}; charset=bz2_codec")], bz2_bomb()


def _gzipped_html(hit: Hit, server: Server) -> Response:
    """1 MB of dense markup as gzip (about 2 KB), without a Content-Encoding to say so."""
    markup = b"<html><body>" + b"<p>a</p>" * 125_000 + b"</body></html>"
    return 200, [("Content-Type", "text/html; charset=utf-8")], gzip.compress(markup, 9)


def _labelled(hit: Hit, server: Server) -> Response:
    charset = hit.query["charset"]
    return 200, [("Content-Type", f"text/plain; charset={charset}")], b"aGVsbG8gd29ybGQ="


@pytest.fixture(scope="module")
def bomber() -> Iterator[Server]:
    bz2_bomb()  # built before anything is measured
    routes = {
        ("GET", "/bomb"): _bomb,
        ("GET", "/labelled"): _labelled,
        ("GET", "/gzipped-html"): _gzipped_html,
    }
    with serving(HOST, routes) as server:
        yield server


@pytest.fixture
def tools(user: Any) -> Tools:
    configure("http", private_allowed=[HOST])
    return make_tools(user, "http", slot=6)


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise LookupError(field)


@contextlib.contextmanager
def peak_rss_growth() -> Iterator[list[int]]:
    """How far (bytes) this process's resident set rose above its size at the start, at its
    peak inside the block: the kernel's high-water mark, reset first (``clear_refs`` 5); where
    that cannot be reset, a thread samples the resident set instead."""
    before = _status_kb("VmRSS")
    out: list[int] = []
    try:
        Path("/proc/self/clear_refs").write_text("5")
        resettable = _status_kb("VmHWM") <= before + 1024
    except OSError:
        resettable = False
    peak = [before]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.005):
            peak[0] = max(peak[0], _status_kb("VmRSS"))

    sampler = None if resettable else threading.Thread(target=sample, daemon=True)
    if sampler is not None:
        sampler.start()
    try:
        yield out
    finally:
        done.set()
        if sampler is not None:
            sampler.join()
        top = _status_kb("VmHWM") if resettable else max(peak[0], _status_kb("VmRSS"))
        out.append((top - before) * 1024)


@pytest.mark.modes
def test_it_does_not_inflate_a_bz2_charset_in_http_request(tools: Tools, bomber: Server) -> None:
    with peak_rss_growth() as growth:
        call = tools.call("http_request", url=bomber.url("/bomb"), timeout=20)

    assert growth[0] < MAX_GROWTH, f"RSS grew by {growth[0] / 2**20:.0f} MiB"
    assert call.status in ToolCall.TERMINAL, call.status
    assert call.status == ToolCall.Status.FAILED, call.result
    assert "charset 'bz2_codec', which is a codec and not a character set" in call.error


@pytest.mark.modes
@pytest.mark.parametrize("media", ["text/plain", "text/html"])
def test_it_does_not_inflate_a_bz2_charset_in_extract_page_content(
    tools: Tools, bomber: Server, media: str
) -> None:
    with peak_rss_growth() as growth:
        call = tools.call("extract_page_content", urls=[bomber.url(f"/bomb?type={media}")])

    assert growth[0] < MAX_GROWTH, f"RSS grew by {growth[0] / 2**20:.0f} MiB"
    assert call.status in ToolCall.TERMINAL, call.status
    if media == "text/plain":  # the text is all the page has: it cannot be read
        assert call.status == ToolCall.Status.FAILED, call.result
        [page] = call.result["pages"]
        assert "'bz2_codec', which is a codec and not a character set" in page["error"], page
    else:  # HTML is handed to the extractor as bytes; whatever it makes of them is bounded
        assert call.status in (ToolCall.Status.SUCCEEDED, ToolCall.Status.FAILED), call.result


def test_it_does_not_let_the_extractor_inflate_a_compressed_body(
    tools: Tools, bomber: Server
) -> None:
    """The page extractor would decompress a body that looks compressed, whatever the
    headers say; the HTTP client's caps are on the bytes it received."""
    with peak_rss_growth() as growth:
        call = tools.call("extract_page_content", urls=[bomber.url("/gzipped-html")])

    assert growth[0] < MAX_GROWTH, f"RSS grew by {growth[0] / 2**20:.0f} MiB"
    assert call.status in ToolCall.TERMINAL, call.status
    assert "<p>" not in str(call.result) and "a\na\na" not in str(call.result)


@pytest.mark.parametrize(
    "charset",
    [
        "bz2_codec", "zlib_codec", "zlib", "base64_codec", "base64", "hex_codec", "hex",
        "uu_codec", "quopri_codec", "rot13", "rot_13", "punycode", "idna", "unicode_escape",
        "raw_unicode_escape", "undefined", "no-such-charset",
    ],
)  # fmt: skip
def test_it_decodes_only_with_text_encodings(bomber: Server, charset: str) -> None:
    url = bomber.url(f"/labelled?charset={charset}")
    if charset == "no-such-charset":  # merely unknown: the body is described, not shown
        result = fetch("GET", url, private_allowed=[HOST])
        assert result.text is None
        assert f"charset {charset!r} is not a known text encoding" in (result.binary_note or "")
        return
    with pytest.raises(ToolError, match=f"charset {charset!r}, which is a codec and not a"):
        fetch("GET", url, private_allowed=[HOST])


def test_it_still_decodes_real_charsets() -> None:
    for charset, raw, text in [
        ("iso-8859-1", "café".encode("latin-1"), "café"),
        ("shift_jis", "日本".encode("shift_jis"), "日本"),
        ("utf-16", "hi".encode("utf-16"), "hi"),
        ("koi8-r", "мир".encode("koi8-r"), "мир"),
    ]:
        codec = text_codec(charset)
        assert codec is not None, charset
        assert decode_text(raw, codec, final=True, max_chars=100) == (text, False)


def test_it_caps_the_decoded_text_in_characters() -> None:
    codec = text_codec("utf-8")
    assert codec is not None
    raw = b"x" * 200_000

    assert decode_text(raw, codec, final=True, max_chars=1_000) == ("x" * 1_000, True)
    assert decode_text(raw, codec, final=True, max_chars=200_000) == ("x" * 200_000, False)


def test_it_refuses_a_codec_registered_outside_the_standard_library() -> None:
    """CodecInfo counts a codec as text unless it says otherwise: a package registering an
    inflating codec must not be reachable through a charset either."""

    def search(name: str) -> codecs.CodecInfo | None:
        if name != "cc_test_inflate":
            return None
        return codecs.CodecInfo(
            name="cc-test-inflate",
            encode=lambda data, errors="strict": (zlib.compress(data), len(data)),
            decode=lambda data, errors="strict": (zlib.decompress(data), len(data)),
        )

    codecs.register(search)
    try:
        assert codecs.lookup("cc_test_inflate") is not None
        assert text_codec("cc_test_inflate") is None
    finally:
        codecs.unregister(search)
