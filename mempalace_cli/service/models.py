"""Which embedding model a palace uses, where that is recorded, and how it is resolved.

A palace's drawers are only comparable with vectors of the model that embedded them, so the
palace records its model in two places written together:

- the catalogue's meta table (`embedding_model`, `collection`): read by every local command
  without opening Chroma;
- the Chroma collection's metadata (`embedding_model`, `embedding_dimension`): travels with a
  palace kept on a Chroma server, and names the model of a collection whatever opens it.

Resolution, in order: a local palace's catalogue record; else the drawer collections in Chroma
(the active one: `mempalace_drawers`, or `mempalace_drawers__<model>` after a `reembed`: the
most recently activated, never one still being built); a collection without our metadata was
made by MemPalace and stays on all-MiniLM-L6-v2; a catalogue listing drawers but no record was
made before models were recorded (all-MiniLM-L6-v2 too); a palace with nothing yet gets the
configured default (`embedding_model` in config.toml, else embedders.DEFAULT_MODEL) and
records it with its first write. A palace on a Chroma server always asks the server, since
another machine may have switched it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from mempalace_cli.common.config import COLLECTION_NAME, Settings
from mempalace_cli.common.errors import IncompatiblePalaceError
from mempalace_cli.embedders import DEFAULT_MODEL, MODELS, check_model_name, known_model
from mempalace_cli.embedders.base import MODEL_NAME

MODEL_META = "embedding_model"
COLLECTION_META = "collection"
# Collection metadata keys (besides embedding_model / embedding_dimension / hnsw:space).
STATE_KEY = "mempalace_cli_state"  # "building" while `reembed` fills it
ACTIVATED_KEY = "mempalace_cli_activated"  # epoch seconds of the switch to it
BUILDING = "building"
ACTIVE = "active"


@dataclass(frozen=True)
class Binding:
    """The model a palace embeds with and the collection its drawers are in.

    origin: "recorded" (the palace says so), "server" (a Chroma server's collection says so),
    "mempalace" (a collection MemPalace made: MiniLM), "legacy" (drawers from before models
    were recorded: MiniLM), "new" (nothing filed yet: the configured default).
    """

    model: str
    collection: str
    origin: str
    generation: int = -1

    @property
    def recorded(self) -> bool:
        return self.origin in ("recorded", "server")


def target_collection(current: str, model: str) -> str:
    """Where `reembed` builds the drawers of `model`: the name MemPalace reads when it is free
    (a palace's first collection always has that name), else one named after the model."""
    if current != COLLECTION_NAME:
        return COLLECTION_NAME
    return f"{COLLECTION_NAME}__{re.sub(r'[^A-Za-z0-9_-]+', '-', model).strip('-')[:40]}"


def dimension_of(model: str) -> int:
    """The model's vector size, 0 when only the server knows (api:...)."""
    info = MODELS.get(model)
    return info.dimension if info else 0


def default_model(settings: Settings) -> str:
    name = settings.raw.get("embedding_model")
    return check_model_name(str(name), "embedding_model") if name else DEFAULT_MODEL


def drawer_collections(client: Any) -> list[tuple[str, dict[str, Any]]]:
    """(name, metadata) of every collection that holds (or is being filled with) drawers."""
    out = []
    for col in client.list_collections():
        name = getattr(col, "name", col)
        if name == COLLECTION_NAME or str(name).startswith(COLLECTION_NAME + "__"):
            meta = getattr(col, "metadata", None)
            if meta is None:
                meta = client.get_collection(name, embedding_function=None).metadata
            out.append((str(name), dict(meta or {})))
    return out


def active_collection(collections: list[tuple[str, dict[str, Any]]]) -> tuple[str, dict] | None:
    """The collection searches read: not being built, the most recently activated."""
    ready = [(n, m) for n, m in collections if m.get(STATE_KEY) != BUILDING]
    if not ready:
        return None
    return max(ready, key=lambda nm: float(nm[1].get(ACTIVATED_KEY) or 0))


def binding_from_collection(name: str, meta: dict[str, Any]) -> Binding:
    model = meta.get(MODEL_META)
    if not model:
        return Binding(MODEL_NAME, name, "mempalace")
    if not known_model(str(model)):
        raise IncompatiblePalaceError(
            f"The drawers in collection {name!r} were embedded with {model!r}, a model this "
            "tool can't embed queries with. Mixing models would make search return nonsense.",
            hint=f"Use a separate palace (--palace) or Chroma server, or serve {model} on an "
            f"OpenAI-compatible endpoint and record it as api:{model}.",
        )
    return Binding(str(model), name, "server")


def is_mempalace_collection(meta: dict[str, Any]) -> bool:
    """True for a drawer collection MemPalace made (we always write `embedding_model`)."""
    return not meta.get(MODEL_META)
