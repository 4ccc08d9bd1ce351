"""The storage interface of the knowledge graph.

kg.py holds the rules (what a valid fact is, which facts an `as_of` selects, how they are
ordered) and the SQLite store an embedded palace keeps in its folder (`KnowledgeGraph`).
kg_store_chroma.py keeps the same facts in a collection of a palace's Chroma server, so every
machine of a team reads and writes one graph. The service talks to either through this
interface only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from mempalace_cli.memory.kg import Fact, FactRecord


class FactStore(Protocol):
    def add(
        self,
        subject: str,
        predicate: str,
        obj: str,
        valid_from: str | None = None,
        valid_to: str | None = None,
        confidence: float = 1.0,
        source_drawer_id: str | None = None,
        source_file: str | None = None,
        subject_type: str | None = None,
        object_type: str | None = None,
    ) -> tuple[Fact, bool]: ...

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
