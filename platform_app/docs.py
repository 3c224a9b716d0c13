"""Documentation folders: list, search and read, for the docs_* tools.

Folders are named roots: ``docs`` is the project's own ``docs/`` (unless an admin turns it
off), the others come from the Docs settings (``name=/absolute/path``). A document's path is
``<root>/<path inside it>``, and ``<path>#<heading>`` names one section. Files are reached
only through ``safe_files`` (no ``..``, no absolute paths, no links followed).

Search is hybrid, as memory search is: an SQLite FTS5 index held in memory by each worker
process (the standard library's sqlite3, whatever database the app uses), one row per
section ranked by bm25, and — with an embedder (the Docs group's ``embedder``, the local
all-MiniLM-L6-v2 by default) — one vector per section compared with the query's; the two
rankings are fused by reciprocal rank (``platform_app.memory.services``' RRF). Without a
working embedder the search is full-text and says so. The index is rebuilt when a file in a
folder changes (names, sizes and modification times are compared on each search;
documentation folders are small); a section's vector is kept by its text's hash, so only
changed sections are embedded again. More sections than a person should wait for (a fresh
install's first search) are embedded by a background thread; until it is done the search
answers by full text and says so.
"""

from __future__ import annotations

import hashlib
import logging
import re
import sqlite3
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from platform_app import safe_files
from platform_app.memory.embedders import Embedder
from platform_app.memory.fulltext import fts5_query, terms
from tools_app.errors import ToolError

logger = logging.getLogger(__name__)

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
RRF_K = 60
CANDIDATES = 50
# A section's heading and first words stand for it: the model's cost grows with the tokens it
# reads (about 100 sections of this project's docs: ~5 s at 400 characters each on a busy
# 2-core machine, four times that at its 256-token maximum).
EMBED_CHARS = 400
_VECTOR_CACHE_MAX = 20_000


@dataclass
class SearchResult:
    results: list[dict[str, object]]
    mode: str  # "hybrid" or "full-text"
    notice: str = ""
    embedder: str = ""


@dataclass
class _Index:
    fingerprint: tuple[object, ...] | None = None
    rows: list[tuple[str, str, str]] = field(default_factory=list)
    vectors: Any = None  # (len(rows), dims) unit vectors, or None
    embedder: str = ""

    def __post_init__(self) -> None:
        self.db = sqlite3.connect(":memory:", check_same_thread=False)
        self.db.execute(
            "CREATE VIRTUAL TABLE s USING fts5(path UNINDEXED, heading, body, "
            "tokenize='porter unicode61')"
        )

    def rebuild(
        self, rows: Iterable[tuple[str, str, str]], fingerprint: tuple[object, ...]
    ) -> None:
        self.rows = list(rows)
        with self.db:
            self.db.execute("DELETE FROM s")
            self.db.executemany(
                "INSERT INTO s(rowid, path, heading, body) VALUES (?, ?, ?, ?)",
                [(i, *row) for i, row in enumerate(self.rows)],
            )
        self.fingerprint = fingerprint
        self.vectors, self.embedder = None, ""

    def texts(self) -> tuple[list[str], list[str]]:
        """What each section's vector is computed from, and its cache key."""
        texts = [f"{heading}\n{body}"[:EMBED_CHARS] for _, heading, body in self.rows]
        return texts, [hashlib.sha256(t.encode()).hexdigest() for t in texts]

    def missing(self, embedder: Embedder) -> list[int]:
        """The sections with text whose vector under ``embedder`` is not known yet."""
        if self.vectors is not None and self.embedder == embedder.id:
            return []
        _, keys = self.texts()
        cache = _vectors_for(embedder.id)
        return [i for i, key in enumerate(keys) if key not in cache and self.rows[i][2]]

    def embed(self, embedder: Embedder) -> None:
        """The sections' vectors under ``embedder`` (ToolError when it fails). A section with
        no text under its heading gets none: its heading alone would match by meaning."""
        import numpy as np  # here, not with the module: numpy is ~15 MiB, loaded by a search

        if self.vectors is not None and self.embedder == embedder.id:
            return
        texts, keys = self.texts()
        missing = self.missing(embedder)
        if missing:
            _vectors_add(embedder, [texts[i] for i in missing], [keys[i] for i in missing])
        cache = _vectors_for(embedder.id)
        dims = len(next(iter(cache.values()))) if cache else 1
        blank = np.zeros(dims, dtype=np.float32)
        self.vectors = np.vstack(
            [cache.get(key, blank) for key in keys] or [np.zeros((0, dims), dtype=np.float32)]
        ).astype(np.float32)
        self.embedder = embedder.id


_lock = threading.Lock()
_index = _Index()
# Per embedder: sha256 of a section's text → its vector; also kept on disk (var/cache), so
# a process (and the next start) embeds only the sections it has never seen.
_vector_cache: dict[str, dict[str, Any]] = {}


def _cache_file(embedder_id: str) -> Path:
    from django.conf import settings

    name = re.sub(r"[^A-Za-z0-9_.-]", "_", embedder_id)
    return Path(settings.VAR_DIR) / "cache" / f"docs-vectors-{name}.npz"


def _vectors_for(embedder_id: str) -> dict[str, Any]:
    import numpy as np

    cache = _vector_cache.get(embedder_id)
    if cache is None:
        cache = {}
        try:
            with np.load(_cache_file(embedder_id), allow_pickle=False) as stored:
                cache = dict(zip(stored["keys"].tolist(), stored["vectors"], strict=True))
        except (OSError, ValueError, KeyError):
            pass  # none yet, or unreadable: computed again
        _vector_cache[embedder_id] = cache
    return cache


def _vectors_save(embedder_id: str, cache: dict[str, Any]) -> None:
    import numpy as np

    target = _cache_file(embedder_id)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_suffix(f".{threading.get_ident()}.tmp.npz")
        np.savez(temporary, keys=np.array(list(cache)), vectors=np.vstack(list(cache.values())))
        temporary.replace(target)
    except OSError:
        pass  # a read-only var/: the process keeps its vectors in memory


def _vectors_add(embedder: Embedder, texts: list[str], keys: list[str]) -> None:
    _vectors_store(embedder.id, keys, embedder.embed(texts))


def _vectors_store(embedder_id: str, keys: list[str], fresh: Any) -> None:
    """Keep ``fresh`` vectors by their texts' ``keys``, in memory and in ``var/cache/``."""
    import numpy as np

    cache = _vectors_for(embedder_id)
    if len(cache) + len(keys) > _VECTOR_CACHE_MAX:
        cache.clear()
    for key, vector in zip(keys, fresh, strict=True):
        cache[key] = np.asarray(vector, dtype=np.float32)
    _vectors_save(embedder_id, cache)


# Sections embedded while the person waits; more (a first search over a fresh install: ~150
# sections of this project's docs, ~20 s on a 2-core machine) are embedded by a background
# thread, and searches answer by full text until it is done.
EMBED_WAIT_MAX = 24
_building: set[str] = set()  # embedders whose background thread runs (under _lock)


def _embed_in_background(embedder: Embedder, texts: list[str], keys: list[str]) -> None:
    def build() -> None:
        try:
            fresh = embedder.embed(texts)  # the slow part, without the lock
            with _lock:
                _vectors_store(embedder.id, keys, fresh)
        except Exception:
            logger.exception("embedding the docs sections failed; search stays full-text")
        finally:
            with _lock:
                _building.discard(embedder.id)

    _building.add(embedder.id)
    threading.Thread(target=build, name="docs-vectors", daemon=True).start()


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


def _plain_snippet(body: str, chars: int = 200) -> str:
    text = " ".join(body.split())
    return text if len(text) <= chars else text[:chars].rsplit(" ", 1)[0] + " …"


def docs_search(
    roots: list[Root],
    query: str,
    *,
    top_k: int,
    max_files: int,
    max_bytes: int,
    embedder: Embedder | None = None,
    min_similarity: float = 0.3,
) -> SearchResult:
    import numpy as np

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
    notice = ""
    with _lock:
        if _index.fingerprint != fingerprint:
            _index.rebuild(_rows(roots, files, max_bytes), fingerprint)
        found = _index.db.execute(
            "SELECT rowid, snippet(s, 2, '«', '»', ' … ', 24) FROM s WHERE s MATCH ? "
            "ORDER BY bm25(s, 0.0, 4.0, 1.0) LIMIT ?",
            (fts5_query(query), max(top_k, CANDIDATES)),
        ).fetchall()
        snippets = {int(rowid): " ".join(snip.split()) for rowid, snip in found}
        rankings = [[int(rowid) for rowid, _ in found]]
        similarity: dict[int, float] = {}
        if embedder is not None:
            try:
                query_vector = embedder.embed([query])[0]  # a model that cannot load says so
                missing = _index.missing(embedder)
                if len(missing) > EMBED_WAIT_MAX:
                    if embedder.id not in _building:
                        texts, keys = _index.texts()
                        _embed_in_background(
                            embedder, [texts[i] for i in missing], [keys[i] for i in missing]
                        )
                    notice = (
                        f"the vector index of {len(missing)} sections is being built: "
                        "full-text results only for now"
                    )
                    embedder = None
                else:
                    _index.embed(embedder)
            except ToolError as exc:
                notice = f"vector search unavailable ({exc.message}): full-text results only"
                embedder = None
            if embedder is not None:
                scores = _index.vectors @ query_vector.astype(np.float32)
                order = np.argsort(-scores, kind="stable")[: max(top_k, CANDIDATES)]
                similarity = {
                    int(i): float(scores[i]) for i in order if scores[i] >= min_similarity
                }
                rankings.append(list(similarity))
        rows = list(_index.rows)
    scores_rrf: dict[int, float] = {}
    for ranking in rankings:
        for rank, rowid in enumerate(ranking, start=1):
            scores_rrf[rowid] = scores_rrf.get(rowid, 0.0) + 1.0 / (RRF_K + rank)
    fused = sorted(scores_rrf.items(), key=lambda kv: (-kv[1], kv[0]))[:top_k]
    results: list[dict[str, object]] = []
    for rowid, _ in fused:
        path, heading, body = rows[rowid]
        item: dict[str, object] = {
            "path": path,
            "heading": heading,
            "snippet": snippets.get(rowid) or _plain_snippet(body),
            "matched_by": [
                name
                for name, hit in (("full-text", rowid in snippets), ("vector", rowid in similarity))
                if hit
            ],
        }
        if rowid in similarity:
            item["similarity"] = round(similarity[rowid], 4)
        results.append(item)
    if embedder is not None:
        return SearchResult(results, "hybrid", embedder=embedder.id)
    return SearchResult(
        results, "full-text", notice or "no embedder is configured: full-text search only"
    )
