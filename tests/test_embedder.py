"""The offline embedder: batching must not change a vector, long inputs are truncated like the
reference model, and embedding_model_dir points at another ONNX MiniLM folder."""

from __future__ import annotations

import numpy as np
import pytest

from mempalace_cli.common.config import resolve_settings
from mempalace_cli.embedders.base import DIMENSION, MiniLMEmbedder, get_embedder, locate_model


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    """all-MiniLM-L6-v2, the model of MemPalace palaces and of palaces made before 0.2."""
    emb = get_embedder("all-MiniLM-L6-v2")
    assert isinstance(emb, MiniLMEmbedder)
    return emb


def test_vectors_are_normalised_and_independent_of_batching(embedder):
    texts = ["short", "a somewhat longer sentence about databases " * 3, "mid length text here"]
    together = embedder.embed(texts)
    alone = np.vstack([embedder.embed([t]) for t in texts])
    assert together.shape == (3, DIMENSION)
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    assert np.allclose(together, alone, atol=1e-4)


def test_semantics_are_sensible(embedder):
    a, b, c = embedder.embed(
        ["The cat sat on the mat.", "A kitten is resting on a rug.", "Quarterly tax filing rules"]
    )
    assert float(a @ b) > float(a @ c) + 0.2


def test_inputs_past_256_tokens_are_truncated(embedder):
    base = "alpha beta gamma delta " * 100  # ~400 tokens
    v1, v2 = embedder.embed([base, base + " completely different tail about volcanoes " * 20])
    assert float(v1 @ v2) > 0.9999


def test_embedding_model_dir_points_at_another_folder(tmp_path, embedder, monkeypatch):
    bundled = locate_model()
    folder = tmp_path / "onnx"
    folder.mkdir()
    (folder / "model.onnx").symlink_to(bundled.model)
    (folder / "tokenizer.json").symlink_to(bundled.tokenizer)
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(f'embedding_model_dir = "{folder}"\n')
    settings = resolve_settings(home=home)
    assert settings.embedding_model_dir == folder
    other = MiniLMEmbedder(settings.embedding_model_dir)
    assert other.files.source == str(folder)
    assert np.allclose(other.embed(["hello"]), embedder.embed(["hello"]), atol=1e-6)


def test_a_broken_model_dir_is_a_clear_error(tmp_path):
    from mempalace_cli.common.errors import ModelUnavailableError

    with pytest.raises(ModelUnavailableError, match="missing model.onnx, tokenizer.json"):
        MiniLMEmbedder(tmp_path)
