from __future__ import annotations

from typing import Any, Literal

from django.utils.translation import gettext as _
from pydantic import Field

from tools_app.registry import GroupSettings, ToolGroup, register_group


class MemorySettings(GroupSettings):
    timeout_seconds: int = Field(60, ge=1, le=600, description="Longest a call may run (s).")
    embedder: Literal["none", "local", "provider"] = Field(
        "local",
        description="Vectors for hybrid search: local (all-MiniLM-L6-v2 in the worker, "
        "offline; the default), provider (an OpenAI-compatible /v1/embeddings), or none "
        "(full-text only). Existing memory is embedded in the background after a change.",
    )
    embedding_provider: str = Field(
        "",
        max_length=100,
        description="With embedder = provider: the LLM provider whose base URL and API key "
        "are used (its name in Admin → Providers; empty: the default provider).",
    )
    embedding_model: str = Field(
        "text-embedding-3-small",
        min_length=1,
        max_length=200,
        description="With embedder = provider: the embedding model, e.g. text-embedding-3-small "
        "(OpenAI) or nomic-embed-text (Ollama).",
    )
    chunk_chars: int = Field(
        1000, ge=100, le=8000, description="Archival memory is indexed in chunks of this size."
    )
    chunk_overlap_chars: int = Field(
        150, ge=0, le=2000, description="Text repeated between consecutive chunks."
    )
    max_content_chars: int = Field(
        50_000, ge=100, le=1_000_000, description="Longest text one memory_save accepts."
    )
    max_chunks_per_user: int = Field(
        100_000, ge=0, le=10_000_000, description="Chunks a user may store (0 = unlimited)."
    )
    search_candidates: int = Field(
        50, ge=5, le=1000, description="Results taken from each ranking before fusing them."
    )
    min_similarity: float = Field(
        0.25,
        ge=-1.0,
        le=1.0,
        description="Vector matches less similar than this (cosine) are left out; with "
        "all-MiniLM-L6-v2, unrelated sentences score about 0-0.2 and related ones 0.3-0.8.",
    )
    max_top_k: int = Field(50, ge=1, le=500, description="Most results one search returns.")
    core_max_chars: int = Field(
        2000, ge=100, le=50_000, description="Size cap of a user's core memory (keys + values)."
    )
    core_in_prompt: bool = Field(True, description="Put core memory into every system prompt.")


def memory_status(settings: Any) -> tuple[str, str, str]:
    """For the Tools Manager: which embedder, and whether it is there."""
    if settings.embedder == "none":
        return "unknown", "full-text only", "no embedder configured: search is full-text only"
    if settings.embedder == "local":
        from platform_app.memory import LOCAL_MODEL_NAME
        from platform_app.memory.minilm import ModelMissing, model_dir

        try:
            path = model_dir()
        except ModelMissing as exc:
            return "bad", "local embedder", str(exc)
        return "ok", f"local {LOCAL_MODEL_NAME}", f"hybrid search; model files in {path}"
    provider = settings.embedding_provider or "default provider"
    return "unknown", f"{provider}: {settings.embedding_model}", "hybrid search via /v1/embeddings"


GROUP = register_group(
    ToolGroup(
        name="memory",
        label=_("Memory"),
        description="Per-user memory: archival facts found by hybrid (full-text + vector) "
        "search, and a small core memory always in the system prompt.",
        settings_model=MemorySettings,
        limits=("embedder", "max_content_chars", "max_chunks_per_user", "core_max_chars"),
        order=60,
        status=memory_status,
    )
)
