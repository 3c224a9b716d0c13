"""Assistant text is rendered as markdown on the server and sanitised: model output is
untrusted (a prompt injection can make it write HTML)."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from chat_app.rendering import render_markdown


class Elements(HTMLParser):
    """The elements and attributes a browser would build (escaped text does not count)."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str]]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, {k: v or "" for k, v in attrs}))


def test_it_renders_markdown():
    html = render_markdown("**bold** and `code`\n\n| a |\n|---|\n| 1 |")
    assert "<strong>bold</strong>" in html and "<code>code</code>" in html
    assert "<table>" in html


@pytest.mark.parametrize(
    "text",
    [
        "<script>alert(1)</script>",
        '<img src=x onerror="alert(1)">',
        "[click](javascript:alert(1))",
        '<a href="javascript:alert(1)">x</a>',
        "<iframe src='https://evil.example'></iframe>",
        '<div style="background:url(javascript:alert(1))">x</div>',
        "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
        "<svg onload=alert(1)>",
    ],
)
def test_it_neutralises_html_and_dangerous_links(text):
    elements = Elements(render_markdown(text)).found
    assert {tag for tag, _ in elements} <= {"p", "a"}
    for _, attrs in elements:
        assert not [name for name in attrs if name.startswith("on") or name == "style"]
        assert not attrs.get("href", "").lower().startswith(("javascript:", "data:"))


def test_links_do_not_leak_the_opener():
    assert 'rel="noopener noreferrer nofollow"' in render_markdown("[x](https://example.com)")
