"""The temporal knowledge graph as service calls: add, query, invalidate, timeline, stats.

Nothing here touches the drawer store or the model, so the `kg` commands start fast. A palace
with no drawers still has a knowledge graph; `kg_add` creates the palace folder when there is
none, and the read calls report NoPalaceError until something was written. A part the `Palace`
facade owns and delegates to.
"""

from __future__ import annotations

import difflib
from dataclasses import replace
from functools import cached_property
from typing import Any

from mempalace_cli.common.errors import NoPalaceError
from mempalace_cli.memory.kg import (
    FactInput,
    entity_id,
    now_stamp,
    parse_date,
)
from mempalace_cli.memory.kg_store import FACT_STORES, FactStore
from mempalace_cli.miners.secrets import redact
from mempalace_cli.service.core import Part
from mempalace_cli.service.results import (
    KgAddResult,
    KgInvalidateResult,
    KgQueryResult,
    KgStatsResult,
    KgSupersedeResult,
    KgTimelineResult,
)

KG_HINT = "Record a fact first: mempalace kg add SUBJECT PREDICATE OBJECT"


class Knowledge(Part):
    """The fact verbs, over the palace's settings, drawer store (for a server palace) and
    lock."""

    @cached_property
    def kg(self) -> FactStore:
        """The palace's facts: in its folder (SQLite), or on its Chroma server so that every
        machine of a team shares them (chromadb is imported for a server palace only)."""
        return self.core.backend.open_facts(FACT_STORES)

    @property
    def kg_location(self) -> str:
        return self.core.backend.facts_location(FACT_STORES)

    def close(self) -> None:
        if "kg" in self.__dict__:
            self.kg.close()

    def _kg_for_reading(self) -> FactStore:
        # No facts yet: an empty graph that creates nothing (ending a fact finds none;
        # `kg_add` creates the store). No palace at all: said so.
        kg = self.core.backend.facts_to_read(FACT_STORES, lambda: self.kg)
        if kg is None:
            raise NoPalaceError(self.core.backend.location, hint=KG_HINT)
        return kg

    # -- writes -----------------------------------------------------------------------------
    def kg_add(self, fact: FactInput) -> KgAddResult:
        """Record `subject predicate object`, valid from `valid_from` through `valid_to` (both
        days included). Restating a stored fact returns its id with created=False. Secret
        values in the names and sources are stored as `[REDACTED:kind]` (miners/secrets.py)."""
        subject, predicate, obj, source_file, source_closet = _redacted(
            fact.subject, fact.predicate, fact.obj, fact.source_file, fact.source_closet
        )
        fact = replace(
            fact,
            subject=subject,
            predicate=predicate,
            obj=obj,
            source_file=source_file,
            source_closet=source_closet,
        )
        with self.core.lock.hold():
            self.core.backend.start_palace_for_facts(self.core.catalog)
            stored, created = self.kg.add(fact)
        return {
            "triple_id": stored.id,
            "created": created,
            "subject": stored.subject,
            "predicate": stored.predicate,
            "object": stored.object,
            "valid_from": stored.valid_from,
            "valid_to": stored.valid_to,
            "confidence": stored.confidence,
            "source": stored.to_dict()["source"],
            "source_closet": stored.source_closet,
        }

    def kg_supersede(
        self,
        subject: str,
        predicate: str,
        old_object: str,
        new_object: str,
        at: str | None = None,
    ) -> KgSupersedeResult:
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
    ) -> KgInvalidateResult:
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
    ) -> KgQueryResult:
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
    ) -> KgTimelineResult:
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

    def kg_stats(self) -> KgStatsResult:
        return {**self._kg_for_reading().stats(), "path": self.kg_location}


def _redacted(*values: Any) -> list[Any]:
    """Each text value with its secret values replaced by `[REDACTED:kind]` (the rules that
    keep secrets out of drawers); anything else as given, for the store to check."""
    return [redact(v).text if isinstance(v, str) and v else v for v in values]
