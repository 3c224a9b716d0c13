"""Reading one web page as clean text for ``extract_page_content``.

Library choice: **trafilatura** (Apache-2.0, actively maintained, used by large text-corpus
projects). It does main-content extraction — it drops navigation, footers, cookie banners,
scripts and styles, and keeps headings, paragraphs, lists and tables — which is what a model
doing research needs from a page, and it reads the page's own ``<meta charset>``. The
alternatives convert a whole page faithfully instead: ``inscriptis`` (Apache-2.0, very good
layout of tables) and ``html2text`` (Markdown, but GPL-3.0) keep every menu and footer, which
costs the model tokens on every page. When trafilatura finds no main content (a very short
page), its ``html2txt`` baseline gives all visible text instead.

The download is the HTTP tool's: same SSRF guard (re-checked on every redirect), same host
lists, same size cap. Only HTML and plain text are read; anything else is refused by name.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from dataclasses import dataclass
from typing import Any

from tools_app.errors import ToolError
from tools_app.executors.http.charset import decode_text, text_codec
from tools_app.executors.http.client import fetch
from tools_app.executors.http.settings import HttpSettings

logger = logging.getLogger(__name__)

HTML_TYPES = {"text/html", "application/xhtml+xml"}
TEXT_TYPES = {"text/plain", "text/markdown", "text/x-markdown"}
ACCEPT = "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.1"


@dataclass
class Page:
    url: str  # the final URL, after redirects
    title: str
    text: str
    truncated: bool  # the download or the text was cut at a limit
    status: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "title": self.title,
            "text": self.text,
            "chars": len(self.text),
            "truncated": self.truncated,
        }


def read_page(
    url: str,
    *,
    http: HttpSettings,
    timeout: float,
    max_chars: int,
    cancel: threading.Event | None,
) -> Page:
    """Download ``url`` under the HTTP group's policy and extract its text.
    Raises PolicyDenied, ToolError, ToolTimeout or ToolCancelled."""
    result = fetch(
        "GET",
        url,
        headers={"Accept": ACCEPT},
        timeout=timeout,
        max_bytes=http.max_response_bytes,
        follow_redirects=http.follow_redirects,
        max_redirects=http.max_redirects,
        allowed_hosts=http.allowed_hosts,
        private_allowed=http.private_allowed,
        cancel=cancel,
    )
    if result.status >= 400:
        raise ToolError(f"the server answered {result.status}", permanent=result.status < 500)
    media = result.headers.get("content-type", "").partition(";")[0].strip().lower()
    if not media and result.raw.lstrip()[:1] == b"<":
        media = "text/html"
    if media in HTML_TYPES:
        title, text = html_to_text(result.raw, url=result.url)
    elif media in TEXT_TYPES:
        if result.text is None:
            raise ToolError(result.binary_note or "the page is not readable text")
        title, text = "", _strip_notice(result.text, result.truncated)
    else:
        raise ToolError(
            f"not an HTML or text page (content type {media or 'unknown'}); "
            "use http_request for other content"
        )
    truncated = result.truncated
    if len(text) > max_chars:
        text, truncated = text[:max_chars], True
    return Page(url=result.url, title=title, text=text, truncated=truncated, status=result.status)


def html_to_text(html: bytes | str, *, url: str | None = None) -> tuple[str, str]:
    """(title, main text) of an HTML document; scripts, styles and boilerplate removed."""
    if not html:
        return "", ""
    if isinstance(html, bytes):
        html = _document_text(html)
    import trafilatura  # ~25 MiB with lxml, justext and babel: loaded by the first page read

    try:
        doc = trafilatura.bare_extraction(
            html,
            url=url,
            with_metadata=True,
            include_comments=False,
            include_tables=True,
            favor_recall=True,
            deduplicate=False,
        )
    except Exception:  # a parser failure on hostile markup must not fail the whole call
        logger.warning("trafilatura could not parse %s", url, exc_info=True)
        doc = None
    title = str(getattr(doc, "title", "") or "").strip()
    text = str(getattr(doc, "text", "") or "").strip()
    if not text:
        text = (trafilatura.html2txt(html) or "").strip()
    return title, text


def _document_text(raw: bytes) -> str:
    """The page's bytes as text, decoded here as trafilatura would (UTF-8, else the encoding
    it detects) but without its attempt to decompress them first: the HTTP client has undone
    any Content-Encoding already, and a body of gzip served as plain HTML turned 28 KB into
    20 MB of markup, which took the parser 3 GB and four minutes."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    from trafilatura.utils import detect_encoding

    for guess in detect_encoding(raw):
        codec = text_codec(guess)
        if codec is not None:
            with contextlib.suppress(UnicodeDecodeError):
                return decode_text(raw, codec, final=True, max_chars=len(raw))[0]
    return raw.decode("utf-8", errors="replace")


def _strip_notice(text: str, truncated: bool) -> str:
    # The HTTP client appends a "[truncated: ...]" notice for the model; we report it as a flag.
    if truncated:
        head, sep, _ = text.rpartition("\n\n[truncated: ")
        if sep:
            return head
    return text
