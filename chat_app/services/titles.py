"""A conversation's automatic title: its first message as plain text.

Titles are shown as text everywhere (sidebar, tab, search), so the markdown of a first
message (``**bold**``, `` `code` ``, links, headings, list markers) is taken off; a slash
command names the conversation after the tool it called (``/shell_exec ls`` → ``shell_exec: ls``).
"""

from __future__ import annotations

import re

DEFAULT_TITLE = "New conversation"
MAX_TITLE = 60

_FENCE = re.compile(r"```[^\n]*\n?|~~~[^\n]*\n?")
_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_AUTOLINK = re.compile(r"<((?:https?|mailto):[^>\s]+)>")
_LINE_MARKS = re.compile(r"^\s{0,3}(?:#{1,6}\s+|>\s?|[-*+]\s+(?:\[[ xX]\]\s+)?|\d+[.)]\s+)", re.M)
_EMPHASIS = re.compile(
    r"(\*\*\*|\*\*|\*|~~)(?=\S)(.+?)(?<=\S)\1|(?<!\w)(__|_)(?=\S)(.+?)(?<=\S)\3(?!\w)"
)
_CODE = re.compile(r"`+([^`]*)`+")
_HTML_TAG = re.compile(r"</?[A-Za-z][^>]*>")


def plain_text(text: str) -> str:
    """``text`` without its markdown, on one line."""
    text = _FENCE.sub(" ", text)
    text = _IMAGE.sub(r"\1", text)
    text = _LINK.sub(r"\1", text)
    text = _AUTOLINK.sub(r"\1", text)
    text = _LINE_MARKS.sub("", text)
    text = _CODE.sub(r"\1", text)
    for _ in range(3):  # nested emphasis: ***a*** or **_a_**
        text = _EMPHASIS.sub(lambda m: m.group(2) or m.group(4) or "", text)
    text = _HTML_TAG.sub("", text)
    return " ".join(text.split())


def shorten(text: str, limit: int = MAX_TITLE) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:.-") + "…"


def title_from(first_text: str) -> str:
    """The title a conversation takes from its first message ('' when there is none)."""
    text = first_text.strip()
    if text.startswith("/"):
        word, _, rest = text[1:].partition(" ")
        word = word.strip()
        rest = " ".join(rest.split())
        if not word:
            return ""
        return shorten(f"{word}: {rest}" if rest else word)
    return shorten(plain_text(text))
