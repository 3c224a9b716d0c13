"""Memory services: archival memory (save, hybrid search) and core memory (get/update/delete,
and the block every system prompt gets).

Hybrid search runs the full-text query and, with an embedder configured, the vector query,
each for ``candidates`` results, and fuses the two rankings by reciprocal rank (RRF: each
list adds ``1 / (k + rank)`` to a chunk's score, k = 60 as in Cormack et al. 2009), so a
chunk found by both ranks above one found by either alone, and neither score scale has to be
calibrated against the other.
"""

from __future__ import annotations

import logging
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from infra.prepared import Prepared
from platform_app.memory import fulltext, vectors
from platform_app.memory.chunking import chunk_text
from platform_app.memory.embedders import Embedder, embedder_for
from platform_app.models import CoreMemoryEntry, MemoryChunk
from tools_app.errors import ToolError

logger = logging.getLogger(__name__)

RRF_K = 60
NO_EMBEDDER = "no embedder is configured: full-text search only"
# The query's vector is computed while the full-text query runs: both wait outside the GIL
# (BLAS, SQLite, or an embeddings endpoint), so a hybrid search costs about the longer of
# the two instead of their sum (bench/memory_search.py: 2.76x a bare FTS5 query at p95
# computed one after the other, on a busy 2-core machine); the user's vectors are made ready
# meanwhile too. The threads touch no database.
_query_vectors = ThreadPoolExecutor(max_workers=4, thread_name_prefix="cc-query-embed")


@dataclass(frozen=True)
class MemoryOptions:
    """What the services need from the Memory group's settings."""

    chunk_chars: int = 1000
    chunk_overlap_chars: int = 150
    max_content_chars: int = 50_000
    max_chunks_per_user: int = 100_000
    search_candidates: int = 50
    min_similarity: float = 0.25
    core_max_chars: int = 2000

    @classmethod
    def of(cls, settings: object) -> MemoryOptions:
        names = cls.__dataclass_fields__
        return cls(**{n: getattr(settings, n) for n in names if hasattr(settings, n)})


# --- archival memory ----------------------------------------------------------------------
def memory_save(*, user_id: int, content: str, source: str, settings: object) -> dict[str, Any]:
    options = MemoryOptions.of(settings)
    content = content.strip()
    if not content:
        raise ToolError("content is empty: there is nothing to remember")
    if len(content) > options.max_content_chars:
        raise ToolError(
            f"content is {len(content):,} characters; the limit is "
            f"{options.max_content_chars:,} per memory_save (split it, or save a summary)"
        )
    pieces = chunk_text(content, size=options.chunk_chars, overlap=options.chunk_overlap_chars)
    stored = MemoryChunk.objects.filter(user_id=user_id).count()
    if options.max_chunks_per_user and stored + len(pieces) > options.max_chunks_per_user:
        raise ToolError(
            f"memory is full: {stored:,} chunks stored, the limit is "
            f"{options.max_chunks_per_user:,} per user; an admin can remove old ones"
        )
    notice = ""
    embedder: Embedder | None = None
    matrix = None
    try:
        embedder = embedder_for(settings)
        if embedder is not None:
            matrix = embedder.embed(pieces)
    except ToolError as exc:
        # Nothing is lost: the text is stored and found by full text; `manage.py
        # memory_reindex` embeds it once the embedder works again.
        notice = f"saved without vectors ({exc.message}); full-text search finds it"
        embedder, matrix = None, None
    document = uuid.uuid4().hex
    source = source.strip()[:200] or "manual"
    with transaction.atomic():
        chunks = [
            MemoryChunk.objects.create(
                user_id=user_id,
                content=piece,
                source=source,
                document=document,
                position=i,
                embedder=embedder.id if embedder is not None else "",
                embedding=vectors.to_bytes(matrix[i]) if matrix is not None else None,
            )
            for i, piece in enumerate(pieces)
        ]
    out: dict[str, Any] = {
        "saved_chunks": len(chunks),
        "document": document,
        "chunks": [{"id": c.pk, "characters": len(c.content)} for c in chunks],
        "source": source,
        "embedder": embedder.id if embedder is not None else None,
    }
    if notice:
        out["notice"] = notice
    elif embedder is None:
        out["notice"] = "stored for full-text search (no embedder is configured)"
    return out


def _fuse(rankings: list[list[int]], k: int = RRF_K) -> list[tuple[int, float]]:
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, chunk_id in enumerate(ranking, start=1):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], -kv[0]))


def memory_search(*, user_id: int, query: str, top_k: int, settings: object) -> dict[str, Any]:
    options = MemoryOptions.of(settings)
    query = query.strip()
    if not query:
        raise ToolError("query is empty")
    candidates = max(options.search_candidates, top_k)
    notice = ""
    vector_ids: list[int] = []
    similarity: dict[int, float] = {}
    embedder: Embedder | None = None
    pending: Future[Any] | None = None
    try:
        embedder = embedder_for(settings)
        if embedder is not None:
            pending = _query_vectors.submit(embedder.embed, [query])
    except ToolError as exc:
        notice = f"vector search unavailable ({exc.message}): full-text results only"
    text_ids = fulltext.search(user_id=user_id, query=query, limit=candidates)
    try:
        if embedder is not None and pending is not None:
            # The user's vectors too are made ready while the query's is computed.
            matrix = vectors.user_matrix(user_id, embedder.id)
            query_vector = pending.result()[0]
            found = [
                (chunk_id, score)
                for chunk_id, score in vectors.search(
                    user_id=user_id,
                    embedder=embedder.id,
                    query=query_vector,
                    limit=candidates,
                    matrix=matrix,
                )
                if score >= options.min_similarity
            ]
            vector_ids = [i for i, _ in found]
            similarity = dict(found)
    except ToolError as exc:
        notice = f"vector search unavailable ({exc.message}): full-text results only"
        embedder = None
    mode = "hybrid" if embedder is not None else "full-text"
    fused = _fuse([text_ids, vector_ids] if embedder is not None else [text_ids])[:top_k]
    # Found chunks deleted meanwhile (or since the vector cache was loaded) are left out here.
    rows = MemoryChunk.objects.only("id", "content", "source", "created_at").in_bulk(
        [i for i, _ in fused]
    )
    if embedder is not None and any(i not in rows for i, _ in fused):
        vectors.forget_user(user_id, embedder.id)  # it held deleted chunks: reload next time
    in_text, in_vector = set(text_ids), set(vector_ids)
    results = []
    for chunk_id, score in fused:
        chunk = rows.get(chunk_id)
        if chunk is None:  # deleted meanwhile
            continue
        item: dict[str, Any] = {
            "id": chunk.pk,
            "content": chunk.content,
            "source": chunk.source,
            "date": chunk.created_at.isoformat(timespec="seconds"),
            "score": round(score, 5),
            "matched_by": [
                name
                for name, hit in (
                    ("full-text", chunk_id in in_text),
                    ("vector", chunk_id in in_vector),
                )
                if hit
            ],
        }
        if chunk_id in similarity:
            item["similarity"] = round(similarity[chunk_id], 4)
        results.append(item)
    out: dict[str, Any] = {"query": query, "mode": mode, "count": len(results), "results": results}
    if embedder is not None:
        out["embedder"] = embedder.id
    if notice:
        out["notice"] = notice
    elif embedder is None:
        out["notice"] = NO_EMBEDDER
    return out


def memory_chunk_embed(chunk: MemoryChunk, *, settings: object) -> bool:
    """(Re-)embed one chunk with the configured embedder (admin edits, ``memory_reindex``).
    False when no embedder is configured."""
    embedder = embedder_for(settings)
    # updated_at moves with the vector: it is what tells worker caches to reload.
    if embedder is None:
        MemoryChunk.objects.filter(pk=chunk.pk).update(
            embedder="", embedding=None, updated_at=timezone.now()
        )
        return False
    vector = embedder.embed([chunk.content])[0]
    MemoryChunk.objects.filter(pk=chunk.pk).update(
        embedder=embedder.id, embedding=vectors.to_bytes(vector), updated_at=timezone.now()
    )
    return True


def chunks_to_embed(embedder_id: str) -> QuerySet[MemoryChunk]:
    """Chunks without a vector of this embedder: saved while no embedder worked, under another
    one, or before hybrid search was the default."""
    return MemoryChunk.objects.filter(~Q(embedder=embedder_id) | Q(embedding=None))


def chunks_embed(chunks: list[MemoryChunk], embedder: Embedder) -> int:
    """Embed ``chunks`` and store their vectors (ToolError when the embedder fails). A chunk
    edited meanwhile keeps its newer state: each row is written only if unchanged."""
    if not chunks:
        return 0
    matrix = embedder.embed([c.content for c in chunks])
    now = timezone.now()
    done = 0
    for chunk, vector in zip(chunks, matrix, strict=True):
        # updated_at moves with the vector: it is what tells worker caches to reload.
        done += MemoryChunk.objects.filter(pk=chunk.pk, updated_at=chunk.updated_at).update(
            embedder=embedder.id, embedding=vectors.to_bytes(vector), updated_at=now
        )
    return done


def memory_backfill(*, settings: object, batch: int = 64) -> int:
    """Embed one batch of the chunks the configured embedder has no vector for (the upgrade
    to hybrid search, or memory saved while the model could not load); the number embedded.
    0 when there is nothing to do or no embedder; ToolError when the embedder fails.

    PostgreSQL: the batch is locked (``SKIP LOCKED``) while it is embedded, so workers
    running this at the same time take different chunks. SQLite (embedded mode, one process)
    takes no lock: a write transaction would hold every other writer back meanwhile."""
    embedder = embedder_for(settings)
    if embedder is None:
        return 0
    pending = chunks_to_embed(embedder.id).order_by("id")
    if connection.vendor != "postgresql":
        return chunks_embed(list(pending[:batch]), embedder)
    with transaction.atomic():
        chunks = list(pending.select_for_update(skip_locked=True)[:batch])
        return chunks_embed(chunks, embedder)


# --- core memory --------------------------------------------------------------------------
SECTIONS = tuple(CoreMemoryEntry.Section.values)


# Every model round reads this: three columns, sorted here, compiled once per process
# (infra.prepared).
_CORE = Prepared(
    lambda user_id: (
        CoreMemoryEntry.objects.filter(user_id=user_id)
        .order_by()
        .values_list("section", "key", "value")
    ),
    user_id=int,
)


def _core(user_id: int) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {s: {} for s in SECTIONS}
    for section, key, value in sorted(_CORE.rows(user_id=user_id)):
        out.setdefault(section, {})[key] = value
    return out


def _size(core: dict[str, dict[str, str]]) -> int:
    return sum(len(k) + len(v) for section in core.values() for k, v in section.items())


def memory_core_get(*, user_id: int, settings: object) -> dict[str, Any]:
    core = _core(user_id)
    return {**core, "characters": _size(core), "limit": MemoryOptions.of(settings).core_max_chars}


def _check_section(section: str) -> None:
    if section not in SECTIONS:
        raise ToolError(f"section must be one of {', '.join(SECTIONS)}, not {section!r}")


def memory_core_update(
    *, user_id: int, section: str, key: str, value: str, settings: object
) -> dict[str, Any]:
    _check_section(section)
    key = key.strip()
    if not key:
        raise ToolError("key is empty")
    limit = MemoryOptions.of(settings).core_max_chars
    with transaction.atomic():
        core = _core(user_id)
        previous = core[section].get(key)
        core[section][key] = value
        size = _size(core)
        if size > limit:
            raise ToolError(
                f"core memory would hold {size:,} characters; the limit is {limit:,}. "
                "Shorten the value, delete entries you no longer need (memory_core_delete), "
                "or keep long facts in archival memory (memory_save)"
            )
        CoreMemoryEntry.objects.update_or_create(
            user_id=user_id, section=section, key=key, defaults={"value": value}
        )
    return {
        "section": section,
        "key": key,
        "value": value,
        "previous": previous,
        "characters": size,
        "limit": limit,
    }


def memory_core_delete(*, user_id: int, section: str, key: str) -> dict[str, Any]:
    _check_section(section)
    entry = CoreMemoryEntry.objects.filter(user_id=user_id, section=section, key=key).first()
    if entry is None:
        keys = sorted(
            CoreMemoryEntry.objects.filter(user_id=user_id, section=section).values_list(
                "key", flat=True
            )
        )
        known = f"; its keys are: {', '.join(keys)}" if keys else "; it is empty"
        raise ToolError(f"there is no key {key!r} in the {section} section{known}")
    entry.delete()
    return {"section": section, "key": key, "deleted": entry.value}


def memory_core_prompt(user_id: int | None) -> str:
    """The core-memory block of the system prompt ("" when there is nothing to say)."""
    if user_id is None:
        return ""
    core = _core(user_id)
    if not any(core.values()):
        return ""
    lines = ["## Core memory", "Facts kept across conversations (memory_core_update changes them)."]
    titles = {"user": "About the user:", "agent": "About you (the agent):"}
    for section in SECTIONS:
        if core[section]:
            lines.append(titles.get(section, f"{section}:"))
            lines.extend(f"- {k}: {v}" for k, v in core[section].items())
    return "\n".join(lines)
