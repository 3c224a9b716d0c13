"""Markdown → safe HTML for assistant messages: rendered server-side, sanitised with nh3."""

from __future__ import annotations

import nh3
from markdown_it import MarkdownIt

# Raw HTML in model output is escaped, never rendered; nh3 is the second line of defence.
_md = MarkdownIt("commonmark", {"html": False, "linkify": False, "breaks": True}).enable("table")

_TAGS = {
    "p",
    "br",
    "hr",
    "strong",
    "em",
    "code",
    "pre",
    "blockquote",
    "ul",
    "ol",
    "li",
    "a",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "del",
}
_ATTRIBUTES = {"a": {"href", "title"}, "code": {"class"}, "th": {"align"}, "td": {"align"}}


def render_markdown(text: str) -> str:
    html = _md.render(text or "")
    return nh3.clean(
        html,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )
