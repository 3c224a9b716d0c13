"""Split a text into chunks of about ``size`` characters for indexing.

Cuts at the largest boundary that keeps a chunk under the size: a blank line (paragraph),
then a line break, then a sentence end, then a space; a word longer than the size is cut
where it must be. Consecutive chunks share up to ``overlap`` characters of context (whole
words), so a fact split across a cut is still found from either side.
"""

from __future__ import annotations

import re

_BOUNDARIES = [
    re.compile(r"\n\s*\n"),
    re.compile(r"\n"),
    re.compile(r"(?<=[.!?])\s+"),
    re.compile(r"\s+"),
]


def _cut(text: str, size: int, after: int) -> int:
    """Where the first chunk of ``text`` ends: the best boundary in (after, size]."""
    window = text[: size + 1]
    for boundary in _BOUNDARIES:
        ends = [m.start() for m in boundary.finditer(window) if after < m.start() <= size]
        if ends:
            return ends[-1]
    return size


def _tail(chunk: str, overlap: int) -> str:
    """The last whole words of ``chunk``, at most ``overlap`` characters."""
    if overlap <= 0 or len(chunk) <= overlap:
        return ""
    tail = chunk[-overlap:]
    space = tail.find(" ")
    return tail[space + 1 :].strip() if space >= 0 else ""


def chunk_text(text: str, *, size: int, overlap: int) -> list[str]:
    overlap = min(overlap, size // 2)  # each chunk brings at least half a chunk of new text
    rest = text.strip()
    carried = 0  # characters at the start of ``rest`` repeated from the previous chunk
    chunks: list[str] = []
    while len(rest) > size:
        end = _cut(rest, size, carried)
        chunk = rest[:end].strip()
        chunks.append(chunk)
        tail = _tail(chunk, overlap)
        following = rest[end:].strip()
        rest = f"{tail} {following}" if tail else following
        carried = len(tail) + 1 if tail else 0
    if rest and (not chunks or len(rest) > carried):
        chunks.append(rest)
    return chunks
