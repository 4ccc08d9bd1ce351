"""The storage interface of the knowledge graph.

kg.py holds the rules (what a valid fact is, which facts an `as_of` selects, how they are
ordered) and the SQLite store an embedded palace keeps in its folder (`KnowledgeGraph`).
kg_store_chroma.py keeps the same facts in a collection of a palace's Chroma server, so every
machine of a team reads and writes one graph. The service talks to either through this
interface only; which of the two a palace uses is its storage backend's choice
(storage/backend.py), made by calling one of `FACT_STORES`' makers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

from mempalace_cli.memory.kg import KG_FILE, Fact, FactInput, FactRecord, KnowledgeGraph
from mempalace_cli.memory.kg_store_chroma import KG_COLLECTION, ChromaFactStore


class FactStore(Protocol):
    def add(self, fact: FactInput) -> tuple[Fact, bool]: ...

    def invalidate(
        self, subject: str, predicate: str, obj: str, ended: str | None = None
    ) -> tuple[list[Fact], str]: ...

    def has_entity(self, name: str) -> bool: ...

    def display_name(self, name: str) -> str: ...

    def entity_names(self) -> list[str]: ...

    def query(
        self, entity: str, as_of: str | None = None, direction: str = "both"
    ) -> list[Fact]: ...

    def timeline(
        self, entity: str | None = None, limit: int | None = None, offset: int = 0
    ) -> list[Fact]: ...

    def stats(self) -> dict[str, Any]: ...

    def export_facts(self) -> Iterator[FactRecord]: ...

    def import_facts(self, records: Iterable[FactRecord]) -> int: ...

    def close(self) -> None: ...


class FactStores:
    """The knowledge graph's two stores, made for a palace's backend (storage/backend.py's
    `FactStoreMaker`): SQLite in the palace folder, or a collection on its Chroma server
    (kg_store_chroma.py, imported for a server palace only)."""

    def in_folder(self, palace_path: Path) -> FactStore:
        return KnowledgeGraph(palace_path)

    def folder_has_facts(self, palace_path: Path) -> bool:
        return (palace_path / KG_FILE).exists()

    def empty(self, palace_path: Path) -> FactStore:
        empty = KnowledgeGraph(palace_path)
        empty.path = Path(":memory:")  # an empty graph in memory: no file is created
        return empty

    def folder_location(self, palace_path: Path) -> str:
        return str(palace_path / KG_FILE)

    def on_server(self, client_of: Callable[[], Any], opts: Any) -> FactStore:
        return ChromaFactStore(client_of, opts)

    def server_location(self, where: str) -> str:
        return f"{where} (collection {KG_COLLECTION})"


FACT_STORES = FactStores()
