"""The temporal knowledge graph as service calls: add, query, invalidate, timeline, stats.

Nothing here touches the drawer store or the model, so the `kg` commands start fast. A palace
with no drawers still has a knowledge graph; `kg_add` creates the palace folder when there is
none, and the read calls report NoPalaceError until something was written. A part the `Palace`
facade owns and delegates to.
"""

from __future__ import annotations

import difflib
from functools import cached_property
from pathlib import Path
from typing import Any

from mempalace_cli.common.errors import NoPalaceError
from mempalace_cli.memory.kg import KG_FILE, KnowledgeGraph, entity_id, now_stamp, parse_date
from mempalace_cli.memory.kg_store import FactStore
from mempalace_cli.service.core import PalaceCore

KG_HINT = "Record a fact first: mempalace kg add SUBJECT PREDICATE OBJECT"


class Knowledge:
    """The fact verbs, over the palace's settings, drawer store (for a server palace) and
    lock."""

    def __init__(self, core: PalaceCore) -> None:
        self.core = core

    @cached_property
    def kg(self) -> FactStore:
        """The palace's facts: in its folder (SQLite), or on its Chroma server so that every
        machine of a team shares them (chromadb is imported for a server palace only)."""
        if self.core.settings.chroma_url:
            from mempalace_cli.memory.kg_store_chroma import ChromaFactStore

            store = self.core.store
            assert store.server is not None
            return ChromaFactStore(lambda: store.client, store.server)
        return KnowledgeGraph(self.core.path)

    @property
    def kg_location(self) -> str:
        if self.core.settings.chroma_url:
            from mempalace_cli.memory.kg_store_chroma import KG_COLLECTION

            return f"{self.core.store.location} (collection {KG_COLLECTION})"
        return str(self.core.path / KG_FILE)

    def close(self) -> None:
        if "kg" in self.__dict__:
            self.kg.close()

    def _kg_for_reading(self) -> FactStore:
        if self.core.settings.chroma_url:
            from mempalace_cli.memory.kg_store_chroma import ChromaFactStore

            kg = self.kg
            if isinstance(kg, ChromaFactStore) and not kg.exists():
                raise NoPalaceError(self.core.store.location, hint=KG_HINT)
            return kg
        if not self.core.path.is_dir():
            raise NoPalaceError(str(self.core.path), hint=KG_HINT)
        if not (self.core.path / KG_FILE).exists():
            # No facts yet: an empty graph, in memory, so that reading never creates the facts
            # file (in a palace another tool made, or one this user may only read). Ending a
            # fact finds none; `kg_add` creates the file.
            empty = KnowledgeGraph(self.core.path)
            empty.path = Path(":memory:")
            return empty
        return self.kg

    # -- writes -----------------------------------------------------------------------------
    def kg_add(
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
        source_closet: str | None = None,
    ) -> dict[str, Any]:
        """Record `subject predicate object`, valid from `valid_from` through `valid_to` (both
        days included). Restating a stored fact returns its id with created=False. Secret
        values in the names and sources are stored as `[REDACTED:kind]` (miners/secrets.py)."""
        subject, predicate, obj, source_file, source_closet = _redacted(
            subject, predicate, obj, source_file, source_closet
        )
        with self.core.lock.hold():
            if (
                not self.core.settings.chroma_url
                and not self.core.catalog.exists
                and not self.core.store.has_local_data()
            ):
                # A new palace: from now on `status` and the other commands see it. (A palace
                # made by MemPalace gets its index from the next command that syncs it.)
                _ = self.core.catalog.conn
            fact, created = self.kg.add(
                subject,
                predicate,
                obj,
                valid_from,
                valid_to,
                confidence,
                source_drawer_id,
                source_file,
                subject_type,
                object_type,
                source_closet,
            )
        return {
            "triple_id": fact.id,
            "created": created,
            "subject": fact.subject,
            "predicate": fact.predicate,
            "object": fact.object,
            "valid_from": fact.valid_from,
            "valid_to": fact.valid_to,
            "confidence": fact.confidence,
            "source": fact.to_dict()["source"],
            "source_closet": fact.source_closet,
        }

    def kg_supersede(
        self,
        subject: str,
        predicate: str,
        old_object: str,
        new_object: str,
        at: str | None = None,
    ) -> dict[str, Any]:
        """`subject predicate old_object` stops and `subject predicate new_object` starts on
        `at` (default today), in one transaction. On `at` itself both hold (as_of is
        inclusive); afterwards only the new one is current."""
        subject, predicate, old_object, new_object = _redacted(
            subject, predicate, old_object, new_object
        )  # as kg_add stored them: secret values never enter the graph
        kg = self._kg_for_reading()
        with self.core.lock.hold():
            ended, started, when = kg.supersede(subject, predicate, old_object, new_object, at)
        now = now_stamp()
        return {
            "at": when,
            "ended": [f.to_dict(now=now) for f in ended],
            "started": started.to_dict(now=now),
        }

    def kg_invalidate(
        self, subject: str, predicate: str, obj: str, ended: str | None = None
    ) -> dict[str, Any]:
        """End a fact: `ended` (default today) is its last day, still answered by as_of. Never
        deletes."""
        kg = self._kg_for_reading()
        with self.core.lock.hold():
            facts, end = kg.invalidate(subject, predicate, obj, ended)
        return {
            "invalidated": len(facts),
            "ended": end,
            "subject": facts[0].subject,
            "predicate": facts[0].predicate,
            "object": facts[0].object,
            "facts": [f.to_dict() for f in facts],
        }

    # -- reads ------------------------------------------------------------------------------
    def kg_query(
        self, entity: str, as_of: str | None = None, direction: str = "both"
    ) -> dict[str, Any]:
        """Facts about `entity`; with `as_of`, exactly those valid on that date or instant."""
        kg = self._kg_for_reading()
        when = parse_date(as_of, "as_of")
        facts = kg.query(entity, when, direction)
        eid, now = entity_id(entity), now_stamp()
        result: dict[str, Any] = {
            "entity": kg.display_name(entity),
            "as_of": when,
            "direction": direction,
            "facts": [f.to_dict(eid, now) for f in facts],
            "count": len(facts),
        }
        if not kg.has_entity(entity):
            names = kg.entity_names()
            folded = {n.casefold(): n for n in names}
            close = difflib.get_close_matches(entity.casefold(), list(folded), n=5, cutoff=0.6)
            result["suggestions"] = [folded[c] for c in close]
        return result

    def kg_timeline(
        self, entity: str | None = None, limit: int | None = None, offset: int = 0
    ) -> dict[str, Any]:
        """Facts in chronological order (all of them, or those about `entity`), paged with
        `limit` and `offset`."""
        kg = self._kg_for_reading()
        entity = entity if entity and entity.strip() else None
        facts = kg.timeline(entity, limit, offset)
        eid, now = (entity_id(entity) if entity else None), now_stamp()
        return {
            "entity": kg.display_name(entity) if entity else None,
            "facts": [f.to_dict(eid, now) for f in facts],
            "count": len(facts),
            "offset": offset,
        }

    def kg_stats(self) -> dict[str, Any]:
        return {**self._kg_for_reading().stats(), "path": self.kg_location}


def _redacted(*values: Any) -> list[Any]:
    """Each text value with its secret values replaced by `[REDACTED:kind]` (the rules that
    keep secrets out of drawers); anything else as given, for the store to check."""
    from mempalace_cli.miners.secrets import redact

    return [redact(v).text if isinstance(v, str) and v else v for v in values]
