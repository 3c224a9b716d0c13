"""How close short texts are in meaning to a query, with the local embedder
(``embedders.LocalEmbedder``, memory search's):
``tool_search`` ranks the tools a person may use with it ("clock" finds ``current_time``).

The texts are the tools' names and first sentences: a few dozen, the same in every search, so
their vectors are kept per process (bounded); a search encodes its query alone. Without the
model installed, every text scores 0 and the search goes on by words (logged once).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from platform_app.memory.embedders import LocalEmbedder
from tools_app.errors import ToolError

logger = logging.getLogger(__name__)

CACHE_LIMIT = 4096  # texts; a tool's text changes only with its description or language

_vectors: dict[str, Any] = {}
_lock = threading.Lock()
_warned = False
_EMBEDDER = LocalEmbedder()


def local_similarity(query: str, texts: list[str]) -> list[float]:
    """The cosine similarity of each of ``texts`` to ``query`` (unit vectors: a dot product)."""
    global _warned
    with _lock:
        known = {t: _vectors[t] for t in texts if t in _vectors}
    missing = [t for t in dict.fromkeys(texts) if t not in known]
    try:
        if missing:
            encoded = dict(zip(missing, _EMBEDDER.embed(missing), strict=True))
            known.update(encoded)
            with _lock:
                if len(_vectors) + len(encoded) > CACHE_LIMIT:
                    _vectors.clear()
                _vectors.update(encoded)
        asked = _EMBEDDER.embed([query])[0]
    except ToolError as exc:  # the model is not installed, or its files cannot be read
        if not _warned:
            _warned = True
            logger.warning("tool search ranks by words only: %s", exc)
        return [0.0] * len(texts)
    return [float(known[t] @ asked) for t in texts]
