"""Documentation folders: list, search and read, for the docs_* tools.

Folders are named roots: ``docs`` is the project's own ``docs/`` (unless an admin turns it
off), the others come from the Docs settings (``name=/absolute/path``). A document's path is
``<root>/<path inside it>``, and ``<path>#<heading>`` names one section. Files are reached
only through ``safe_files`` (no ``..``, no absolute paths, no links followed).

Search runs on an SQLite FTS5 index held in memory by each worker process (the standard
library's sqlite3, whatever database the app uses): one row per section, ranked by bm25. It
is rebuilt when a file in a folder changes (names, sizes and modification times are compared
on each search; documentation folders are small).
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from platform_app import safe_files
from platform_app.memory.fulltext import fts5_query, terms

SUFFIXES = (".md", ".markdown", ".txt", ".rst")
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


class DocsError(Exception):
    """A request that cannot be served (unknown folder, heading...): a failed call."""


@dataclass(frozen=True)
class Root:
    name: str
    path: Path


@dataclass
class Section:
    level: int  # 0 for the text before the first heading
    heading: str
    start: int  # line index of the heading
    end: int  # line index after the section's own text (before the next heading)
    end_with_children: int


def slug(text: str) -> str:
    return re.sub(r"[^\w]+", "-", text.lower()).strip("-")


def sections(lines: list[str]) -> list[Section]:
    found: list[Section] = [Section(0, "", 0, len(lines), len(lines))]
    fenced = False
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        match = None if fenced else _HEADING.match(line)
        if match:
            found[-1].end = i
            found.append(Section(len(match.group(1)), match.group(2).strip(), i, len(lines), 0))
    for i, sec in enumerate(found):
        following = [s for s in found[i + 1 :] if sec.level and s.level <= sec.level]
        sec.end_with_children = following[0].start if following else len(lines)
    return found


def _title(text: str, fallback: str) -> str:
    for sec in sections(text.splitlines()):
        if sec.level:
            return sec.heading
    return fallback


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _root(roots: list[Root], path: str) -> tuple[Root, list[str]]:
    first, _, rest = path.strip().partition("/")
    for root in roots:
        if root.name == first:
            return root, safe_files.split_relative(rest)
    names = ", ".join(r.name for r in roots) or "none"
    raise DocsError(f"no documentation folder {first!r}; the folders are: {names} (see docs_list)")


def docs_list(roots: list[Root], *, max_files: int, max_bytes: int) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for root in roots:
        for entry in safe_files.walk_beneath(root.path, suffixes=SUFFIXES, max_entries=max_files):
            if len(out) >= max_files:
                return out
            rel = "/".join(entry.parts)
            try:
                head = safe_files.read_beneath(
                    root.path, list(entry.parts), max_bytes=4096, truncate=True
                )
                title = _title(_decode(head.data), entry.parts[-1])
            except (safe_files.Refused, safe_files.Missing):
                continue
            out.append({"path": f"{root.name}/{rel}", "title": title, "bytes": entry.size})
    return out


def docs_read(roots: list[Root], path: str, *, max_bytes: int) -> dict[str, object]:
    path, _, heading = path.partition("#")
    root, parts = _root(roots, path)
    data = safe_files.read_beneath(root.path, parts, max_bytes=max_bytes, truncate=True)
    text = _decode(data.data)
    shown = f"{root.name}/{'/'.join(parts)}"
    lines = text.splitlines()
    found = sections(lines)
    out: dict[str, object] = {"path": shown, "title": _title(text, parts[-1]), "bytes": data.size}
    if heading.strip():
        wanted = heading.strip()
        match = next(
            (
                s
                for s in found
                if s.level
                and (s.heading.lower() == wanted.lower() or slug(s.heading) == slug(wanted))
            ),
            None,
        )
        if match is None:
            names = "; ".join(s.heading for s in found if s.level) or "none"
            raise DocsError(f"{shown} has no heading {wanted!r}; its headings: {names}")
        out["heading"] = match.heading
        out["content"] = "\n".join(lines[match.start : match.end_with_children]).strip()
    else:
        out["content"] = text
        out["headings"] = [("#" * s.level) + " " + s.heading for s in found if s.level]
    if data.truncated:
        out["truncated"] = True
        out["notice"] = f"the file is {data.size:,} bytes; only the first {max_bytes:,} were read"
    return out


# --- search --------------------------------------------------------------------------------
class _Index:
    def __init__(self) -> None:
        self.fingerprint: tuple[object, ...] | None = None
        self.db = sqlite3.connect(":memory:", check_same_thread=False)
        self.db.execute(
            "CREATE VIRTUAL TABLE s USING fts5(path UNINDEXED, heading, body, "
            "tokenize='porter unicode61')"
        )

    def rebuild(
        self, rows: Iterable[tuple[str, str, str]], fingerprint: tuple[object, ...]
    ) -> None:
        with self.db:
            self.db.execute("DELETE FROM s")
            self.db.executemany("INSERT INTO s(path, heading, body) VALUES (?, ?, ?)", rows)
        self.fingerprint = fingerprint


_lock = threading.Lock()
_index = _Index()


def _rows(
    roots: list[Root], files: list[tuple[Root, safe_files.Entry]], max_bytes: int
) -> Iterable[tuple[str, str, str]]:
    for root, entry in files:
        try:
            data = safe_files.read_beneath(
                root.path, list(entry.parts), max_bytes=max_bytes, truncate=True
            )
        except (safe_files.Refused, safe_files.Missing):
            continue
        lines = _decode(data.data).splitlines()
        path = f"{root.name}/{'/'.join(entry.parts)}"
        for sec in sections(lines):
            body = "\n".join(lines[sec.start + (1 if sec.level else 0) : sec.end]).strip()
            if body or sec.heading:
                yield (f"{path}#{sec.heading}" if sec.level else path, sec.heading, body)


def docs_search(
    roots: list[Root], query: str, *, top_k: int, max_files: int, max_bytes: int
) -> list[dict[str, object]]:
    if not terms(query):
        raise DocsError("the query has no words to search for")
    files = [
        (root, entry)
        for root in roots
        for entry in safe_files.walk_beneath(root.path, suffixes=SUFFIXES, max_entries=max_files)
    ][:max_files]
    fingerprint = tuple(
        (str(root.path), root.name, e.parts, e.size, e.mtime_ns) for root, e in files
    ) + (max_bytes,)
    with _lock:
        if _index.fingerprint != fingerprint:
            _index.rebuild(_rows(roots, files, max_bytes), fingerprint)
        found = _index.db.execute(
            "SELECT path, heading, snippet(s, 2, '«', '»', ' … ', 24) FROM s WHERE s MATCH ? "
            "ORDER BY bm25(s, 0.0, 4.0, 1.0) LIMIT ?",
            (fts5_query(query), top_k),
        ).fetchall()
    return [{"path": p, "heading": h, "snippet": " ".join(snip.split())} for p, h, snip in found]
