"""Archival memory through the real path: memory_save chunks and indexes, memory_search finds
it again (full text in the mode's database: SQLite FTS5 embedded, PostgreSQL distributed)."""

from __future__ import annotations

import pytest

from platform_app.models import MemoryChunk
from tests.tools.calls import ok, run_tool
from tests.tools.conftest import configure

pytestmark = [pytest.mark.modes, pytest.mark.django_db(transaction=True)]


def test_it_finds_what_memory_save_stored(user):
    configure("memory", embedder="none")
    ok(run_tool("memory_save", user=user, content="The staging server is called kestrel."))
    ok(run_tool("memory_save", user=user, content="Lunch on Fridays is pizza.", source="chat"))
    result = ok(run_tool("memory_search", user=user, query="which staging server?"))
    assert result["mode"] == "full-text"
    assert result["notice"] == "no embedder is configured: full-text search only"
    top = result["results"][0]
    assert "kestrel" in top["content"]
    assert top["source"] == "manual"
    assert top["date"][:4].isdigit() and "T" in top["date"]
    assert top["matched_by"] == ["full-text"]


def test_it_honours_top_k(user):
    for i in range(7):
        ok(run_tool("memory_save", user=user, content=f"Deploy note {i}: the deploy went fine."))
    assert ok(run_tool("memory_search", user=user, query="deploy", top_k=3))["count"] == 3
    assert ok(run_tool("memory_search", user=user, query="deploy", top_k=10))["count"] == 7


def test_it_ranks_the_chunk_matching_more_words_first(user):
    configure("memory", embedder="none")  # the full-text ranking alone
    ok(run_tool("memory_save", user=user, content="The cat is grey."))
    ok(run_tool("memory_save", user=user, content="The cat sleeps on the red sofa."))
    ok(run_tool("memory_save", user=user, content="The sofa was expensive."))
    results = ok(run_tool("memory_search", user=user, query="cat sofa"))["results"]
    assert results[0]["content"] == "The cat sleeps on the red sofa."
    assert len(results) == 3


def test_it_keeps_each_users_memory_apart(user, other_user):
    ok(run_tool("memory_save", user=other_user, content="Bob's secret password hint: parrot."))
    result = ok(run_tool("memory_search", user=user, query="password hint parrot"))
    assert result["results"] == []


def test_it_chunks_long_content(user):
    configure("memory", chunk_chars=200, chunk_overlap_chars=30)
    text = " ".join(f"Sentence number {i} talks about topic {i}." for i in range(40))
    result = ok(run_tool("memory_save", user=user, content=text, source="notes.md"))
    assert result["saved_chunks"] > 5
    chunks = list(MemoryChunk.objects.filter(user=user).order_by("position"))
    assert all(len(c.content) <= 200 for c in chunks)
    assert {c.document for c in chunks} == {result["document"]}
    found = ok(run_tool("memory_search", user=user, query="topic 37", top_k=1))["results"][0]
    assert "topic 37" in found["content"] and found["source"] == "notes.md"


def test_search_words_are_never_read_as_query_syntax(user):
    ok(run_tool("memory_save", user=user, content="Use the NEAR operator with care (or not)."))
    for query in ['NEAR(" OR *', "care) AND NOT (", "!!! & | :*", "or not", "'; DROP TABLE x; --"]:
        result = ok(run_tool("memory_search", user=user, query=query))
        assert isinstance(result["results"], list)
    assert ok(run_tool("memory_search", user=user, query="NEAR(care"))["count"] == 1


def test_content_over_the_limit_is_refused_and_nothing_is_stored(user):
    configure("memory", max_content_chars=100)
    call = run_tool("memory_save", user=user, content="x " * 100)
    assert call.status == "failed"
    assert "the limit is 100" in call.error
    assert not MemoryChunk.objects.exists()


def test_a_full_memory_refuses_more(user):
    configure("memory", max_chunks_per_user=2)
    ok(run_tool("memory_save", user=user, content="one"))
    ok(run_tool("memory_save", user=user, content="two"))
    call = run_tool("memory_save", user=user, content="three")
    assert call.status == "failed" and "memory is full" in call.error


def test_deleted_chunks_leave_the_index(user):
    ok(run_tool("memory_save", user=user, content="Remember the albatross."))
    MemoryChunk.objects.filter(user=user).delete()
    assert ok(run_tool("memory_search", user=user, query="albatross"))["results"] == []


def test_an_edited_chunk_is_found_by_its_new_words(user):
    ok(run_tool("memory_save", user=user, content="The printer is on floor two."))
    MemoryChunk.objects.filter(user=user).update(content="The printer moved to floor five.")
    assert ok(run_tool("memory_search", user=user, query="two"))["results"] == []
    assert ok(run_tool("memory_search", user=user, query="five"))["count"] == 1


def test_a_call_without_a_user_is_denied():
    call = run_tool("memory_search", user=None, query="anything")
    assert call.status == "denied" and "not granted" in call.error  # grants come first
