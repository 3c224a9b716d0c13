"""Markdown → safe HTML, for every page that shows Markdown: rendered server-side by
markdown-it-py, raw HTML escaped, then sanitised with nh3 (the second line of defence)."""

from __future__ import annotations

import nh3
from markdown_it import MarkdownIt

# Chat messages keep a model's single line breaks; documents are wrapped text.
_RENDERERS = {
    breaks: MarkdownIt("commonmark", {"html": False, "linkify": False, "breaks": breaks}).enable(
        "table"
    )
    for breaks in (True, False)
}

TAGS = {
    "p", "br", "hr", "strong", "em", "code", "pre", "blockquote", "ul", "ol", "li", "a",
    "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td", "del",
}  # fmt: skip
ATTRIBUTES = {"a": {"href", "title"}, "code": {"class"}, "th": {"align"}, "td": {"align"}}


def markdown_html(text: str, *, breaks: bool = True) -> str:
    html = _RENDERERS[breaks].render(text or "")
    return nh3.clean(
        html,
        tags=TAGS,
        attributes=ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )
