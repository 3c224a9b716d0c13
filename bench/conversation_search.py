"""Conversation search over 100,000 messages of one person (issue 23), embedded mode.

The corpus: 1,000 conversations of 100 messages each (10 to 40 words from a 3,000-word
vocabulary with a Zipf-like spread, as natural text has), a tool call in every tenth
message, and another person's 10,000 messages beside them (the search must skip those).
Then 200 queries of two words (the last one typed halfway, as the sidebar searches while
typing), after 20 warm-up ones:

- ``search``: ``conversations_search``, the service behind the sidebar and the results
  page: the owner's best 30 hits with their snippets and conversation titles;
- baseline, in the same run: a bare FTS5 query for the same words (the best 30 row ids of
  the index, no owner, no snippet), the floor of any full-text search in this database.

And the cost of keeping the index on the chat's hot path: creating a message (one INSERT,
as a turn does) with the index's trigger and without it, 1,000 each, alternating batches.
"""

from __future__ import annotations

import random
import time
from typing import Any

from bench.common import emit, setup_django, stats_ms

N_CONVERSATIONS = 1_000
PER_CONVERSATION = 100
N_OTHER = 10_000
N_QUERIES = 200
WARMUP = 20
N_WRITES = 1_000
SYLLABLES = ("ka", "lo", "mi", "ter", "van", "su", "dro", "pel", "ix", "on", "bra", "qui", "zen")


def vocabulary(rng: random.Random) -> list[str]:
    words: set[str] = set()
    while len(words) < 3_000:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def measure() -> dict[str, Any]:
    setup_django("embedded")
    from django.contrib.auth import get_user_model
    from django.db import connection

    from chat_app.models import Conversation, Message
    from chat_app.services import search
    from tools_app.models import ToolCall

    rng = random.Random(23)
    words = vocabulary(rng)
    weights = [1 / (rank + 1) for rank in range(len(words))]

    def text() -> str:
        return " ".join(rng.choices(words, weights, k=rng.randint(10, 40)))

    users = get_user_model().objects
    owner, other = users.create_user("bench-search"), users.create_user("bench-other")
    started = time.perf_counter()
    for person, conversations, per in (
        (owner, N_CONVERSATIONS, PER_CONVERSATION),
        (other, N_OTHER // PER_CONVERSATION, PER_CONVERSATION),
    ):
        made = Conversation.objects.bulk_create(
            [Conversation(owner=person, title=text()[:60]) for _ in range(conversations)]
        )
        messages = Message.objects.bulk_create(
            [
                Message(conversation=c, role="user" if i % 2 == 0 else "assistant", content=text())
                for c in made
                for i in range(per)
            ],
            batch_size=1_000,
        )
        ToolCall.objects.bulk_create(
            [
                ToolCall(
                    conversation_id=m.conversation_id,
                    message=m,
                    tool="shell_exec",
                    arguments={"command": f"grep {rng.choice(words)} notes.txt"},
                    status="succeeded",
                    result={"success": True, "stdout": text()},
                )
                for m in messages[::10]
            ],
            batch_size=1_000,
        )
    load_seconds = time.perf_counter() - started
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {search.FTS}")  # noqa: S608
        indexed = cursor.fetchone()[0]

    top = words[:1_000]
    queries = []
    for _ in range(WARMUP + N_QUERIES):
        first, second = rng.sample(top, 2)
        queries.append(f"{first} {second[: max(2, len(second) // 2 + 1)]}")

    def timed(fn: Any) -> tuple[dict[str, float], int]:
        samples, found = [], 0
        for i, query in enumerate(queries):
            started = time.perf_counter()
            found += len(fn(query))
            if i >= WARMUP:
                samples.append(time.perf_counter() - started)
        return stats_ms(samples), found

    def bare(query: str) -> list[Any]:
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT rowid FROM {search.FTS} WHERE {search.FTS} MATCH %s "  # noqa: S608
                "ORDER BY rank LIMIT 30",
                [search.fts5_query(search.terms(query))],
            )
            return cursor.fetchall()

    out: dict[str, Any] = {
        "messages": N_CONVERSATIONS * PER_CONVERSATION,
        "other_persons_messages": N_OTHER,
        "indexed_rows": indexed,
        "load_seconds": round(load_seconds, 1),
        "queries": N_QUERIES,
    }
    out["baseline_bare_fts5_query"], bare_found = timed(bare)
    out["search"], found = timed(lambda q: search.conversations_search(owner_id=owner.pk, query=q))
    out["mean_hits_per_query"] = round(found / (WARMUP + N_QUERIES), 1)
    out["search_p95_vs_baseline_ratio"] = round(
        out["search"]["p95_ms"] / out["baseline_bare_fts5_query"]["p95_ms"], 2
    )

    # The write path: one message INSERT, with and without the index's trigger.
    conversation = Conversation.objects.filter(owner=owner).first()
    trigger = next(sql for sql in search._SQLITE_INSTALL if f"{search.FTS}_msg_ai " in sql)
    with_index: list[float] = []
    without_index: list[float] = []
    for batch in range(10):
        indexed_batch = batch % 2 == 0
        with connection.cursor() as cursor:
            if indexed_batch:
                cursor.execute(trigger)
            else:
                cursor.execute(f"DROP TRIGGER IF EXISTS {search.FTS}_msg_ai")
        for _ in range(N_WRITES // 5):
            content = text()
            started = time.perf_counter()
            Message.objects.create(conversation=conversation, role="assistant", content=content)
            (with_index if indexed_batch else without_index).append(time.perf_counter() - started)
    with connection.cursor() as cursor:
        cursor.execute(trigger)
    out["message_insert_with_index"] = stats_ms(with_index)
    out["message_insert_without_index"] = stats_ms(without_index)
    out["message_insert_index_cost_ms"] = round(
        out["message_insert_with_index"]["median_ms"]
        - out["message_insert_without_index"]["median_ms"],
        3,
    )
    return out


if __name__ == "__main__":
    emit(measure())
