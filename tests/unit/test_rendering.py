"""Assistant text is rendered as markdown on the server and sanitised: model output is
untrusted (a prompt injection can make it write HTML)."""

from __future__ import annotations

import pytest

from chat_app.rendering import render_markdown


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
    html = render_markdown(text).lower()
    assert "<script" not in html and "<iframe" not in html and "<svg" not in html
    assert "onerror=" not in html and "onload=" not in html
    assert 'href="javascript:' not in html and 'href="data:' not in html


def test_links_do_not_leak_the_opener():
    assert 'rel="noopener noreferrer nofollow"' in render_markdown("[x](https://example.com)")
