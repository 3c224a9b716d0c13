"""Markdown → safe HTML for assistant messages: rendered server-side, sanitised with nh3
(``infra.markdown``), single line breaks kept."""

from __future__ import annotations

from infra.markdown import markdown_html


def render_markdown(text: str) -> str:
    return markdown_html(text, breaks=True)
