"""The registry of embedding models a palace can use, and the factory behind `get_embedder`.

A model is one module holding a `MODEL = ModelSpec(...)`: its name, vector size, languages,
what to pip install, how to build its embedder and the fusion settings a search uses with it
(`search.fusion.for_model` reads them). The built-in models are the modules in `BUILTIN`;
another package adds one by an entry point in the `mempalace_cli.models` group, the way llm
loads its plugins:

    [project.entry-points."mempalace_cli.models"]
    my-model = "my_package.my_model:MODEL"

Nothing here imports a model library: a spec names its embedder's class by a string and the
class is imported when the first embedder is built, so naming or listing models costs nothing.
Entry points are read only when a name is not built in or the whole list is asked for.

May import: `mempalace_cli.common` only.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from mempalace_cli.common.errors import ConfigError, InvalidInputError
from mempalace_cli.common.lazy import lazy
from mempalace_cli.embedders.api import ApiEmbedder
from mempalace_cli.embedders.base import Embedder

# Read only when a name is not built in or the whole list is asked for (~12 ms to import).
importlib_metadata = lazy("importlib.metadata")

ENTRY_POINT_GROUP = "mempalace_cli.models"
BUILTIN = (
    "mempalace_cli.embedders.minilm",
    "mempalace_cli.embedders.use",
    "mempalace_cli.embedders.e5",
)


@dataclass(frozen=True)
class ModelSpec:
    """One embedding model as the registry knows it."""

    name: str
    dimension: int
    languages: str
    package: str  # what to pip install when it is missing
    about: str
    # "module:Class" of its Embedder, imported when the first embedder is built.
    embedder: str
    # Overrides of search.fusion.FusionParams for palaces embedded with this model (plain data:
    # the field names and values; unknown names are refused when the search reads them).
    fusion: Mapping[str, float | int | str | bool] = field(default_factory=dict)

    def create(self) -> Embedder:
        module, _, attr = self.embedder.partition(":")
        return getattr(importlib.import_module(module), attr)()


ModelInfo = ModelSpec  # the name earlier code used


class Registry(Mapping[str, ModelSpec]):
    """Model name -> ModelSpec: the built-in modules, then any entry points (read on demand)."""

    def __init__(self) -> None:
        self._specs: dict[str, ModelSpec] | None = None
        self._plugins_read = False
        self._lock = threading.Lock()
        self.plugin_errors: list[str] = []

    def _builtin(self) -> dict[str, ModelSpec]:
        if self._specs is None:
            specs = {}
            for module in BUILTIN:
                spec = importlib.import_module(module).MODEL
                specs[spec.name] = spec
            self._specs = specs
        return self._specs

    def _with_plugins(self) -> dict[str, ModelSpec]:
        specs = self._builtin()
        with self._lock:
            if not self._plugins_read:
                self._plugins_read = True
                for ep in importlib_metadata.entry_points(group=ENTRY_POINT_GROUP):
                    try:
                        spec = ep.load()
                    except Exception as exc:  # a broken plugin must not break the built-ins
                        self.plugin_errors.append(f"{ep.name} ({ep.value}): {exc}")
                        continue
                    if isinstance(spec, ModelSpec) and spec.name not in specs:
                        specs[spec.name] = spec
                    elif not isinstance(spec, ModelSpec):
                        self.plugin_errors.append(f"{ep.name} ({ep.value}): not a ModelSpec")
        return specs

    def __getitem__(self, name: str) -> ModelSpec:
        specs = self._builtin()
        if name in specs:
            return specs[name]
        return self._with_plugins()[name]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self._builtin() or name in self._with_plugins())

    def __iter__(self) -> Iterator[str]:
        return iter(self._with_plugins())

    def __len__(self) -> int:
        return len(self._with_plugins())


MODELS = Registry()

API_PREFIX = "api:"
USE_NAME = "use-multilingual-v3"
E5_NAME = "multilingual-e5-small-q4"
# What a NEW palace embeds with unless config.toml says otherwise (`embedding_model`); chosen by
# measurement (benchmarks/embedders.py, results in benchmarks/results/embedders.md).
DEFAULT_MODEL = USE_NAME


def known_model(name: str) -> bool:
    if name.startswith(API_PREFIX):
        return len(name) > len(API_PREFIX)
    return name in MODELS


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
    """A new embedder for a registered model or an `api:<model>` (see base.get_embedder)."""
    check_model_name(name)
    if name.startswith(API_PREFIX):
        return ApiEmbedder.from_environment(name[len(API_PREFIX) :])
    return MODELS[name].create()


def fusion_settings(name: str) -> Mapping[str, Any]:
    """The fusion overrides a model's module carries ({} for api: models and unknown names)."""
    spec = MODELS.get(name) if not name.startswith(API_PREFIX) else None
    return dict(spec.fusion) if spec else {}
