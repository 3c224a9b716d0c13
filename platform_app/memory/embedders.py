"""Embedders: text → unit vectors, behind one small interface.

Kinds (the Memory group's ``embedder`` setting):

- ``none``: no vectors; memory search is full-text only, and says so.
- ``local``: all-MiniLM-L6-v2 from an installed package, run in-process (``minilm.py``);
  works offline.
- ``provider``: an OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, Ollama, vLLM,
  LM Studio, …) taken from an LLM provider record (its base URL and API key), with the
  model named in the settings. Called with the ``openai`` SDK the chat already uses.

Every vector is returned L2-normalised, so cosine similarity is a dot product.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from platform_app.memory import LOCAL_MODEL_NAME
from tools_app.errors import ToolError

if TYPE_CHECKING:
    import numpy as np

# numpy (~15 MiB) is imported by the functions that compute, not with the module: every turn
# reads the core memory through these modules, and only a memory search needs numpy.


class Embedder(Protocol):
    @property
    def id(self) -> str:
        """Names the vector space: vectors are compared only within one id."""
        ...

    def embed(self, texts: list[str]) -> np.ndarray:
        """(len(texts), dims) float32 unit vectors; ToolError when it cannot."""
        ...


def normalise(vectors: np.ndarray) -> np.ndarray:
    import numpy as np

    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)


@dataclass(frozen=True)
class LocalEmbedder:
    @property
    def id(self) -> str:
        return f"local:{LOCAL_MODEL_NAME}"

    def embed(self, texts: list[str]) -> np.ndarray:
        from platform_app.memory.minilm import ModelMissing, get_model

        try:
            model = get_model()
        except ModelMissing as exc:
            raise ToolError(str(exc)) from None
        return model.encode(texts)


@dataclass(frozen=True)
class ProviderEmbedder:
    """``/v1/embeddings`` of an OpenAI-compatible provider."""

    provider_name: str
    base_url: str
    api_key: str
    model: str
    timeout: float

    @property
    def id(self) -> str:
        return f"provider:{self.provider_name}:{self.model}"

    def embed(self, texts: list[str]) -> np.ndarray:
        import numpy as np
        import openai

        client = openai.OpenAI(
            base_url=self.base_url or None,
            api_key=self.api_key or "not-needed",
            timeout=self.timeout,
            max_retries=1,
        )
        vectors: list[list[float]] = []
        try:
            for start in range(0, len(texts), 64):
                batch = texts[start : start + 64]
                reply = client.embeddings.create(
                    model=self.model, input=batch, encoding_format="float"
                )
                data = sorted(reply.data, key=lambda d: d.index)
                if len(data) != len(batch):
                    raise ToolError(
                        f"the embeddings endpoint returned {len(data)} vectors for "
                        f"{len(batch)} texts"
                    )
                vectors.extend(list(d.embedding) for d in data)
        except openai.APIStatusError as exc:
            raise ToolError(
                f"the embeddings endpoint of provider {self.provider_name!r} answered "
                f"{exc.status_code}: {_short(exc.message)}",
                permanent=False,
            ) from None
        except openai.APIConnectionError as exc:
            raise ToolError(
                f"cannot reach the embeddings endpoint of provider {self.provider_name!r} "
                f"({self.base_url or 'the OpenAI API'}): {_short(str(exc))}",
                permanent=False,
            ) from None
        dims = {len(v) for v in vectors}
        if len(dims) != 1 or 0 in dims:
            raise ToolError("the embeddings endpoint returned vectors of different sizes")
        return normalise(np.asarray(vectors, dtype=np.float32))


def _short(text: str) -> str:
    return " ".join(text.split())[:300]


def embedder_for(settings: object) -> Embedder | None:
    """The embedder the Memory settings name, or None (full-text only). ToolError when the
    configured provider is missing or cannot serve embeddings."""
    kind = getattr(settings, "embedder", "none")
    if kind == "local":
        return LocalEmbedder()
    if kind != "provider":
        return None
    from chat_app.models import Provider

    name = str(getattr(settings, "embedding_provider", "") or "").strip()
    provider = (
        Provider.objects.filter(name=name).first()
        if name
        else (Provider.objects.filter(is_default=True).first() or Provider.objects.first())
    )
    if provider is None:
        which = f"provider {name!r}" if name else "a default LLM provider"
        raise ToolError(f"the Memory embedder needs {which}, and there is none")
    if provider.kind != Provider.Kind.OPENAI:
        raise ToolError(
            f"provider {provider.name!r} is {provider.get_kind_display()}; embeddings need an "
            "OpenAI-compatible provider (/v1/embeddings)"
        )
    return ProviderEmbedder(
        provider_name=provider.name,
        base_url=provider.base_url,
        api_key=provider.api_key,
        model=str(getattr(settings, "embedding_model", "")),
        timeout=float(getattr(settings, "timeout_seconds", 30)),
    )
