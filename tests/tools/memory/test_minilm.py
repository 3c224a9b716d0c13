"""The local embedder computes the same vectors as sentence-transformers does for
all-MiniLM-L6-v2 (reference vectors made once with sentence-transformers 6.2 on PyTorch,
stored beside this test)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from platform_app.memory.minilm import DIMENSIONS, ModelMissing, get_model, model_dir
from tests.helpers import require

REFERENCE = Path(__file__).with_name("minilm_reference.json")


def test_it_matches_sentence_transformers():
    try:
        model_dir()
    except ModelMissing as exc:
        require(False, str(exc))
    reference = json.loads(REFERENCE.read_text())
    got = get_model().encode(reference["sentences"])
    expected = np.asarray(reference["vectors"], dtype=np.float32)
    assert got.shape == (len(reference["sentences"]), DIMENSIONS)
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert np.abs(got - expected).max() < 1e-4  # includes a text longer than 256 tokens


def test_a_missing_model_says_how_to_install_it(settings, tmp_path):
    settings.MEMORY_LOCAL_MODEL_DIR = str(tmp_path)
    try:
        model_dir()
    except ModelMissing as exc:
        assert "model.safetensors is missing" in str(exc)
    else:
        raise AssertionError("an empty model directory was accepted")
