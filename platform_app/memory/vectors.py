"""Vector similarity over a user's memory chunks: an exact, in-process index.

Vectors are stored with each chunk as float32 bytes (``MemoryChunk.embedding``), the same in
SQLite and PostgreSQL. The maintained extensions were evaluated first and are not usable on
the machines this project targets (README "Memory search" says the same):

- sqlite-vec is a loadable extension, and the Python builds here (pyenv's 3.11) have no
  ``sqlite3.Connection.enable_load_extension``;
- pgvector's server extension is not in Debian 12's archive (no postgresql-15-pgvector), so
  ``CREATE EXTENSION vector`` is not available to the distributed mode either.

So each worker process keeps, per (user, embedder), a matrix of that user's unit vectors,
loaded once and reloaded when a chunk of the user is added or re-embedded: every such write
moves ``updated_at``, and the newest one is an index seek (``(user, embedder, updated_at)``),
one small query per search. A deletion does not reload the matrix: ``memory_search`` reads
the rows of what it found and drops the ones that are gone. Search is then one
matrix-vector product: exact cosine, no approximation, about a millisecond for 10,000
chunks of 384 dimensions. Memory is bounded by keeping the most recently used
``CACHE_USERS`` matrices.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from platform_app.models import MemoryChunk

if TYPE_CHECKING:
    import numpy as np

# numpy (~15 MiB) is imported by the functions that compute, not with the module: every turn
# reads the core memory through these modules, and only a memory search needs numpy.

CACHE_USERS = 32


def to_bytes(vector: np.ndarray) -> bytes:
    import numpy as np

    return np.asarray(vector, dtype="<f4").tobytes()


def from_bytes(data: bytes | memoryview) -> np.ndarray:
    import numpy as np

    return np.frombuffer(bytes(data), dtype="<f4")


@dataclass
class _Matrix:
    version: tuple[object, ...]
    ids: np.ndarray
    vectors: np.ndarray  # (n, dims), unit rows


_lock = threading.Lock()
_cache: OrderedDict[tuple[int, str], _Matrix] = OrderedDict()


def _version(user_id: int, embedder: str) -> tuple[object, ...]:
    """Changes whenever a chunk of this user and embedder is added or re-embedded (every
    write sets ``updated_at``): the newest ``updated_at``, read from the end of the (user,
    embedder, updated_at) index. A count would change on deletions too, but counting walks
    the whole index on every search (about 2 ms at 10,000 chunks); deleted chunks are dropped
    when their rows are read instead."""
    newest = (
        MemoryChunk.objects.filter(user_id=user_id, embedder=embedder)
        .order_by("-updated_at")
        .values_list("updated_at", flat=True)
        .first()
    )
    return (newest,)


def _load(user_id: int, embedder: str, version: tuple[object, ...]) -> _Matrix:
    import numpy as np

    rows = list(
        MemoryChunk.objects.filter(user_id=user_id, embedder=embedder)
        .exclude(embedding=None)
        .values_list("id", "embedding")
    )
    if not rows:
        return _Matrix(version, np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32))
    vectors = [from_bytes(blob) for _, blob in rows if blob is not None]
    dims = len(vectors[0])
    keep = [i for i, v in enumerate(vectors) if len(v) == dims]
    return _Matrix(
        version,
        np.asarray([rows[i][0] for i in keep], dtype=np.int64),
        np.vstack([vectors[i] for i in keep]).astype(np.float32),
    )


def _matrix(user_id: int, embedder: str) -> _Matrix:
    version = _version(user_id, embedder)
    key = (user_id, embedder)
    with _lock:
        cached = _cache.get(key)
        if cached is not None and cached.version == version:
            _cache.move_to_end(key)
            return cached
    matrix = _load(user_id, embedder, version)
    with _lock:
        _cache[key] = matrix
        _cache.move_to_end(key)
        while len(_cache) > CACHE_USERS:
            _cache.popitem(last=False)
    return matrix


def user_matrix(user_id: int, embedder: str) -> _Matrix:
    """The user's vectors (from the cache, or loaded): take it while the query's vector is
    being computed, then ``search(..., matrix=...)``."""
    return _matrix(user_id, embedder)


def search(
    *,
    user_id: int,
    embedder: str,
    query: np.ndarray,
    limit: int,
    matrix: _Matrix | None = None,
) -> list[tuple[int, float]]:
    """(chunk id, cosine similarity) of the user's nearest chunks, best first."""
    import numpy as np

    if matrix is None:
        matrix = _matrix(user_id, embedder)
    if not len(matrix.ids) or matrix.vectors.shape[1] != query.shape[0]:
        return []
    scores = matrix.vectors @ query.astype(np.float32)
    if len(scores) > limit:
        top = np.argpartition(-scores, limit - 1)[:limit]
    else:
        top = np.arange(len(scores))
    top = top[np.argsort(-scores[top], kind="stable")]
    return [(int(matrix.ids[i]), float(scores[i])) for i in top]


def forget_user(user_id: int, embedder: str) -> None:
    """Drop one user's matrix (some of its chunks were deleted): the next search reloads it."""
    with _lock:
        _cache.pop((user_id, embedder), None)


def forget_cache() -> None:
    with _lock:
        _cache.clear()
