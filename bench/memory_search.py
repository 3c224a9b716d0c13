"""memory_search over 10,000 stored chunks of one user (issue 10's figure), embedded mode.

The corpus is 10,000 generated notes (varied subjects, places, days, ticket numbers), each
stored as a chunk with its all-MiniLM-L6-v2 vector (the local embedder, computed here: the
indexing rate is reported too). Then 200 three-word queries, after 20 warm-up ones, through
``memory_search`` (the service behind the tool, with its result rows read back):

- ``fulltext_only``: the Memory group with no embedder (full-text search, as without one);
- ``hybrid``: the local embedder: embed the query, nearest vectors, full text, RRF fusion;
- baseline, in the same run: a bare FTS5 query for the same words (``fulltext.search``),
  the floor of any full-text search in this database.

Figures are ratios of p95s against that baseline; ``hybrid_first_query_ms`` is the one
search that loads the user's vectors into the worker's cache.
"""

from __future__ import annotations

import random
import time
from typing import Any

from bench.common import emit, setup_django, stats_ms

N_CHUNKS = 10_000
N_QUERIES = 200
WARMUP = 20

SUBJECTS = (
    "the staging server", "the billing service", "Alice", "Bob", "the backup job", "the VPN",
    "the build cache", "the search index", "the office printer", "the release train",
    "the payroll export", "the customer portal", "the on-call rota", "the database replica",
    "the mobile app", "the design review", "the load balancer", "the marketing site",
)  # fmt: skip
VERBS = (
    "was moved to", "failed in", "is scheduled for", "was upgraded in", "needs a review in",
    "was restarted in", "is owned by the team in", "was migrated to", "slowed down in",
)  # fmt: skip
PLACES = (
    "Berlin", "the Oslo data centre", "region eu-west", "the Lyon office", "rack 14",
    "the Tokyo cluster", "building C", "the cloud account", "the basement lab",
)  # fmt: skip
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "the weekend", "last night")
WORDS = sorted({w.strip(".,").lower() for s in SUBJECTS + VERBS + PLACES + DAYS for w in s.split()})


def corpus(rng: random.Random) -> list[str]:
    return [
        f"{rng.choice(SUBJECTS).capitalize()} {rng.choice(VERBS)} {rng.choice(PLACES)} on "
        f"{rng.choice(DAYS)}; see ticket {rng.randrange(100_000)}."
        for _ in range(N_CHUNKS)
    ]


def measure() -> dict[str, Any]:
    setup_django("embedded")
    from django.contrib.auth import get_user_model

    from platform_app.executors.memory.settings import MemorySettings
    from platform_app.memory import fulltext, vectors
    from platform_app.memory.embedders import LocalEmbedder
    from platform_app.memory.services import memory_search
    from platform_app.models import MemoryChunk

    rng = random.Random(10)
    user = get_user_model().objects.create_user("bench-memory")
    texts = corpus(rng)
    embedder = LocalEmbedder()
    embedder.embed(["warm up the model"])
    started = time.perf_counter()
    matrix = embedder.embed(texts)
    embed_seconds = time.perf_counter() - started
    MemoryChunk.objects.bulk_create(
        [
            MemoryChunk(
                user=user,
                content=text,
                source="bench",
                embedder=embedder.id,
                embedding=vectors.to_bytes(matrix[i]),
            )
            for i, text in enumerate(texts)
        ],
        batch_size=500,
    )
    queries = [" ".join(rng.sample(WORDS, 3)) for _ in range(WARMUP + N_QUERIES)]

    def timed(fn: Any) -> dict[str, float]:
        samples = []
        for i, query in enumerate(queries):
            started = time.perf_counter()
            fn(query)
            if i >= WARMUP:
                samples.append(time.perf_counter() - started)
        return stats_ms(samples)

    out: dict[str, Any] = {
        "chunks": N_CHUNKS,
        "queries": N_QUERIES,
        "local_embedder_chunks_per_s": round(N_CHUNKS / embed_seconds, 1),
    }
    out["baseline_bare_fts5_query"] = timed(
        lambda q: fulltext.search(user_id=user.pk, query=q, limit=10)
    )
    plain = MemorySettings(embedder="none")
    out["fulltext_only"] = timed(
        lambda q: memory_search(user_id=user.pk, query=q, top_k=10, settings=plain)
    )
    hybrid = MemorySettings(embedder="local")
    vectors.forget_cache()
    started = time.perf_counter()
    first = memory_search(user_id=user.pk, query="backup job in Berlin", top_k=10, settings=hybrid)
    out["hybrid_first_query_ms"] = round((time.perf_counter() - started) * 1000, 1)
    assert first["mode"] == "hybrid" and first["count"] == 10, first
    out["hybrid"] = timed(
        lambda q: memory_search(user_id=user.pk, query=q, top_k=10, settings=hybrid)
    )
    base = out["baseline_bare_fts5_query"]["p95_ms"]
    out["fulltext_only_p95_vs_baseline_ratio"] = round(out["fulltext_only"]["p95_ms"] / base, 2)
    out["hybrid_p95_vs_baseline_ratio"] = round(out["hybrid"]["p95_ms"] / base, 2)
    return out


if __name__ == "__main__":
    emit(measure())
