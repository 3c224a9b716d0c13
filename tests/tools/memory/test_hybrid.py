"""Hybrid memory search: vectors from the local model (offline, in the worker) or from an
OpenAI-compatible /v1/embeddings (the scripted server speaks the real wire format), fused
with full-text results by reciprocal rank."""

from __future__ import annotations

import time

import pytest

from chat_app.models import Provider
from platform_app.memory import vectors
from platform_app.memory.minilm import ModelMissing, model_dir
from platform_app.models import MemoryChunk
from tests.helpers import require
from tests.tools.calls import ok, run_tool
from tests.tools.conftest import configure

pytestmark = [pytest.mark.modes, pytest.mark.django_db(transaction=True)]

FACTS = [
    "My favourite colour is green.",
    "The staging server is called kestrel.",
    "Lunch on Fridays is pizza.",
    "The cat sleeps on the red sofa.",
]


def local_model() -> None:
    try:
        model_dir()
    except ModelMissing as exc:
        require(False, str(exc))


@pytest.fixture(autouse=True)
def _fresh_vector_cache(monkeypatch):
    vectors.forget_cache()  # ids repeat across tests' databases
    # This process's background embedding stays out of the tests that embed on purpose.
    from platform_app.memory import backfill

    monkeypatch.setattr(backfill, "_last_check", time.monotonic() + 3600)


def save_facts(user):
    for fact in FACTS:
        ok(run_tool("memory_save", user=user, content=fact))


def test_hybrid_search_is_on_with_no_configuration(user):
    # Issue 26: the local embedder is the default; a question phrased differently from what
    # was saved is found.
    local_model()
    save_facts(user)
    result = ok(run_tool("memory_search", user=user, query="what hue do I like", top_k=2))
    assert result["mode"] == "hybrid" and result["embedder"] == "local:all-MiniLM-L6-v2"
    assert result["results"][0]["content"] == "My favourite colour is green."


def test_search_falls_back_to_full_text_and_says_so_when_the_model_cannot_load(
    user, tmp_path, monkeypatch
):
    from django.test import override_settings

    from platform_app.memory import minilm

    (tmp_path / "model.safetensors").write_bytes(b"not a model")
    (tmp_path / "tokenizer.json").write_text("{}")
    monkeypatch.setattr(minilm, "_model", None)  # as in a process that has not loaded it
    with override_settings(MEMORY_LOCAL_MODEL_DIR=str(tmp_path)):
        saved = ok(run_tool("memory_save", user=user, content="The backup runs at 3 am."))
        assert "saved without vectors" in saved["notice"] and "cannot be loaded" in saved["notice"]
        result = ok(run_tool("memory_search", user=user, query="when does the backup run"))
    assert result["mode"] == "full-text"
    assert result["notice"].startswith("vector search unavailable (the local embedding model")
    assert result["results"][0]["content"] == "The backup runs at 3 am."
    monkeypatch.setattr(minilm, "_model", None)  # the next test loads the real one again


def test_the_workers_embed_memory_saved_without_vectors(user, worker, monkeypatch):
    # The upgrade to hybrid search: chunks saved before it (or while the model could not
    # load) are embedded in the background, a batch per task, without anyone running a
    # command.
    from platform_app.memory import backfill

    monkeypatch.setattr(backfill, "_last_check", 0.0)
    local_model()
    configure("memory", embedder="none")
    save_facts(user)
    configure("memory", embedder="local")
    assert backfill.backfill_kick(now=1e9) is True  # queued on the tools queue
    assert backfill.backfill_kick(now=1e9 + 1) is False  # one look a minute per process
    from tests.helpers import wait_for

    wait_for(
        lambda: not MemoryChunk.objects.exclude(embedder="local:all-MiniLM-L6-v2").exists(),
        timeout=30,
        message="the worker to embed the chunks",
    )
    top = ok(run_tool("memory_search", user=user, query="what hue do I like"))["results"][0]
    assert top["content"] == "My favourite colour is green." and "vector" in top["matched_by"]
    assert backfill.backfill_batch() == 0  # nothing left


def test_the_local_embedder_finds_by_meaning(user):
    local_model()
    configure("memory", embedder="local")
    save_facts(user)
    assert set(MemoryChunk.objects.values_list("embedder", flat=True)) == {"local:all-MiniLM-L6-v2"}
    result = ok(run_tool("memory_search", user=user, query="what hue do I like", top_k=2))
    assert result["mode"] == "hybrid" and "notice" not in result
    top = result["results"][0]
    assert top["content"] == "My favourite colour is green."
    assert top["matched_by"] == ["vector"] and top["similarity"] > 0.3
    food = ok(run_tool("memory_search", user=user, query="what do we eat at the end of the week"))
    assert food["results"][0]["content"] == "Lunch on Fridays is pizza."


def test_a_chunk_found_both_ways_ranks_first(user):
    local_model()
    configure("memory", embedder="local")
    save_facts(user)
    ok(run_tool("memory_save", user=user, content="Green tea is served at the cat cafe."))
    results = ok(run_tool("memory_search", user=user, query="favourite colour green"))["results"]
    assert results[0]["content"] == "My favourite colour is green."
    assert results[0]["matched_by"] == ["full-text", "vector"]


def test_a_new_chunk_is_searchable_at_once(user):
    local_model()
    configure("memory", embedder="local")
    save_facts(user)
    ok(run_tool("memory_search", user=user, query="colour"))  # the vectors are now cached
    ok(run_tool("memory_save", user=user, content="The office dog is named Biscuit."))
    top = ok(run_tool("memory_search", user=user, query="pet animal at work"))["results"][0]
    assert "Biscuit" in top["content"]


@pytest.fixture
def embedding_provider(llm, transactional_db):
    return Provider.objects.create(
        name="embeddings", kind="openai", base_url=llm.openai_base_url, model="chat-model"
    )


def test_the_provider_embedder_uses_v1_embeddings(user, llm, embedding_provider):
    configure(
        "memory",
        embedder="provider",
        embedding_provider="embeddings",
        embedding_model="hash-embed-1",
    )
    save_facts(user)
    calls = [r for r in llm.requests if r["_path"] == "/v1/embeddings"]
    assert calls and all(r["model"] == "hash-embed-1" for r in calls)
    result = ok(run_tool("memory_search", user=user, query="kestrel staging"))
    assert result["mode"] == "hybrid"
    assert result["embedder"] == "provider:embeddings:hash-embed-1"
    top = result["results"][0]
    assert "kestrel" in top["content"] and top["matched_by"] == ["full-text", "vector"]


def test_an_unreachable_embedder_loses_nothing(user, transactional_db):
    Provider.objects.create(
        name="gone", kind="openai", base_url="http://127.0.0.1:9/v1", model="m", is_default=True
    )
    configure("memory", embedder="provider", embedding_model="m", timeout_seconds=5)
    saved = ok(run_tool("memory_save", user=user, content="The backup runs at 3 am."))
    assert "saved without vectors" in saved["notice"] and "cannot reach" in saved["notice"]
    result = ok(run_tool("memory_search", user=user, query="backup"))
    assert result["mode"] == "full-text"
    assert result["notice"].startswith("vector search unavailable")
    assert result["results"][0]["content"] == "The backup runs at 3 am."


def test_an_anthropic_provider_cannot_embed(user, transactional_db):
    Provider.objects.create(name="claude", kind="anthropic", model="c", is_default=True)
    configure("memory", embedder="provider")
    saved = ok(run_tool("memory_save", user=user, content="A fact."))
    assert "embeddings need an OpenAI-compatible provider" in saved["notice"]


def test_memory_reindex_embeds_what_was_saved_without_vectors(user):
    from io import StringIO

    from django.core.management import call_command

    local_model()
    configure("memory", embedder="none")
    save_facts(user)  # no embedder yet: full text only
    assert set(MemoryChunk.objects.values_list("embedder", flat=True)) == {""}
    configure("memory", embedder="local")
    out = StringIO()
    call_command("memory_reindex", stdout=out)
    assert "done: 4 chunk(s) embedded" in out.getvalue()
    top = ok(run_tool("memory_search", user=user, query="what hue do I like"))["results"][0]
    assert top["content"] == "My favourite colour is green." and "vector" in top["matched_by"]
    out = StringIO()
    call_command("memory_reindex", stdout=out)
    assert "done: 0 chunk(s) embedded" in out.getvalue()


def test_unrelated_chunks_are_not_returned_as_vector_matches(user):
    local_model()
    configure("memory", embedder="local")
    save_facts(user)
    result = ok(run_tool("memory_search", user=user, query="quantum chromodynamics lecture"))
    assert result["mode"] == "hybrid" and result["results"] == []
    configure("memory", embedder="local", min_similarity=-1.0)
    everything = ok(run_tool("memory_search", user=user, query="quantum chromodynamics lecture"))
    assert everything["count"] == len(FACTS)


def test_a_deleted_chunk_leaves_vector_results_and_the_cache_reloads(user):
    local_model()
    save_facts(user)
    first = ok(run_tool("memory_search", user=user, query="what hue do I like", top_k=1))
    assert first["results"][0]["content"] == "My favourite colour is green."  # matrix cached
    MemoryChunk.objects.filter(content="My favourite colour is green.").delete()
    again = ok(run_tool("memory_search", user=user, query="what hue do I like", top_k=1))
    assert all(r["content"] != "My favourite colour is green." for r in again["results"])
    # The matrix that still held it was dropped: the next search has a full list again.
    wide = ok(run_tool("memory_search", user=user, query="what hue do I like", top_k=3))
    assert "My favourite colour is green." not in [r["content"] for r in wide["results"]]


def test_the_upgrade_turns_a_stored_none_into_the_local_embedder(transactional_db):
    """platform.0011: the old default ``none`` (which every save of the form wrote) becomes
    ``local``; another choice an admin made, and the other settings, stay as they were."""
    import importlib

    from django.apps import apps

    from tools_app.models import ToolConfigVersion, ToolGroupConfig

    migration = importlib.import_module("platform_app.migrations.0011_memory_hybrid_by_default")
    config, _ = ToolGroupConfig.objects.update_or_create(
        name="memory", defaults={"settings": {"embedder": "none", "max_results": 7}}
    )
    token = ToolConfigVersion.objects.get(pk=1).token
    migration.hybrid_by_default(apps, None)
    config.refresh_from_db()
    assert config.settings == {"embedder": "local", "max_results": 7}
    assert ToolConfigVersion.objects.get(pk=1).token != token  # processes read it at once
    ToolGroupConfig.objects.filter(pk=config.pk).update(settings={"embedder": "provider:3"})
    migration.hybrid_by_default(apps, None)
    config.refresh_from_db()
    assert config.settings == {"embedder": "provider:3"}
