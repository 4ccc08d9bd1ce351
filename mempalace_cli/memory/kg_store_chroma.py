"""The knowledge graph of a server palace, in a second collection (`mempalace_kg`) of the same
Chroma server as the drawers, so every machine of a team reads and writes one graph.

Records (Chroma wants a vector with each; they carry a constant 1-d one):
- an entity: id `entity:<entity id>`, metadata kind=entity, entity_id, name, type, created_at;
- a fact: its triple id, metadata kind=fact, subject_id/subject, predicate, object_id/object,
  valid_from/valid_to as text (absent when open), the same as whole microseconds since the
  epoch in `from_us`/`to_us` (open ends as far past / far future) so that "valid as of"
  is a metadata filter the server evaluates, confidence, sources, recorded_at.

A fact's id is derived from the fact (subject, predicate, object, interval as recorded), so two
machines that record the same fact converge on one record: Chroma's `add` keeps the first and
ignores the repeat. Invalidating rewrites the fact's end in place (the last writer wins).
The rules (validation, `as_of` window, ordering) come from kg.py.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import date, datetime
from typing import Any

from mempalace_cli.common.errors import InvalidInputError
from mempalace_cli.memory.kg import (
    Fact,
    FactInput,
    FactRecord,
    _window,
    as_of_bounds,
    check_end_after_start,
    check_limit,
    check_query,
    chronological,
    entity_id,
    holds,
    is_current,
    learned_stamp,
    normalize_predicate,
    not_open_error,
    now_stamp,
    parse_date,
    today,
)
from mempalace_cli.storage import chroma_server
from mempalace_cli.storage.chroma_server import ServerOptions
from mempalace_cli.storage.side_collection import SideCollection

KG_COLLECTION = "mempalace_kg"
FAR_PAST = -(2**62)
FAR_FUTURE = 2**62
_VECTOR = [1.0]
_EPOCH = datetime(1970, 1, 1)
# from_us/to_us place a date-only bound at a UTC day; the user's day (kg.py's rule) is at most
# 14 hours away from it, so the server's filter is widened by a day and kg.holds decides.
_DAY_US = 86_400 * 1_000_000


def to_us(stamp: str) -> int:
    """Microseconds since the epoch of a normalised date or naive-UTC datetime (kg.py's form)."""
    if len(stamp) == 10:
        moment = datetime.combine(date.fromisoformat(stamp), datetime.min.time())
    else:
        moment = datetime.fromisoformat(stamp)
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def fact_id(sid: str, pred: str, oid: str, start: str | None, end: str | None, n: int = 0) -> str:
    """The id two machines derive for the same fact. `n` > 0 when a fact of that id exists in
    another state (a fact that ended, then was stated open again)."""
    key = "\x00".join([sid, pred, oid, start or "", end or "", str(n) if n else ""])
    return "t_" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:20]


def _fact_meta(f: Fact) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "kind": "fact",
        "subject_id": f.subject_id,
        "subject": f.subject,
        "predicate": f.predicate,
        "object_id": f.object_id,
        "object": f.object,
        "from_us": to_us(f.valid_from) if f.valid_from else FAR_PAST,
        # valid_to is inclusive: a date-only end covers its whole day.
        "to_us": to_us(_window(f.valid_to)[1]) if f.valid_to else FAR_FUTURE,
        "confidence": float(f.confidence),
        "recorded_at": f.recorded_at,
    }
    optional = {
        "valid_from": f.valid_from,
        "valid_to": f.valid_to,
        "source_drawer_id": f.source_drawer_id,
        "source_file": f.source_file,
        "source_closet": f.source_closet,
    }
    meta.update({k: v for k, v in optional.items() if v is not None})
    return meta


def _fact(fid: str, m: dict[str, Any]) -> Fact:
    return Fact(
        id=fid,
        subject_id=m["subject_id"],
        predicate=m["predicate"],
        object_id=m["object_id"],
        valid_from=m.get("valid_from"),
        valid_to=m.get("valid_to"),
        confidence=float(m.get("confidence", 1.0)),
        source_drawer_id=m.get("source_drawer_id"),
        source_file=m.get("source_file"),
        recorded_at=m.get("recorded_at", ""),
        subject=m["subject"],
        object=m["object"],
        source_closet=m.get("source_closet"),
    )


def _and(*clauses: dict[str, Any]) -> dict[str, Any]:
    return clauses[0] if len(clauses) == 1 else {"$and": list(clauses)}


class ChromaFactStore:
    """The FactStore (kg_store.py) of a server palace."""

    def __init__(self, client_of: Any, opts: ServerOptions) -> None:
        self._opts = opts
        self._collection = SideCollection(client_of, opts, KG_COLLECTION)

    # -- plumbing ---------------------------------------------------------------------------
    def _col(self, create: bool = True) -> Any | None:
        return self._collection.open(create)

    def exists(self) -> bool:
        return self._col(create=False) is not None

    def close(self) -> None:
        self._collection.forget()

    def _get(self, **kwargs: Any) -> dict[str, Any]:
        col = self._col(create=False)
        if col is None:
            return {"ids": [], "metadatas": []}
        return chroma_server.read(self._opts, lambda: col.get(include=["metadatas"], **kwargs))

    def _facts(self, where: dict[str, Any]) -> list[Fact]:
        got = self._get(where=_and({"kind": "fact"}, where) if where else {"kind": "fact"})
        facts = [_fact(i, m) for i, m in zip(got["ids"], got["metadatas"], strict=True)]
        return sorted(facts, key=chronological)

    def _by_id(self, fid: str) -> Fact | None:
        got = self._get(ids=[fid])
        return _fact(got["ids"][0], got["metadatas"][0]) if got["ids"] else None

    def _entity(self, eid: str) -> dict[str, Any] | None:
        got = self._get(ids=[f"entity:{eid}"])
        return got["metadatas"][0] if got["ids"] else None

    def _write(self, op: Any) -> None:
        chroma_server.write(self._opts, op)

    def _put_entity(self, name: str, kind: str | None) -> str:
        eid = entity_id(name)
        known = self._entity(eid)
        if known is None:
            meta = {
                "kind": "entity",
                "entity_id": eid,
                "name": name.strip(),
                "created_at": now_stamp(),
            }
            if kind:
                meta["type"] = kind
            col = self._col()
            # `add` keeps whichever machine's record came first: the display name converges.
            self._write(
                lambda: col.add(
                    ids=[f"entity:{eid}"],
                    embeddings=[_VECTOR],
                    documents=[name.strip()],
                    metadatas=[meta],
                )
            )
        elif kind and not known.get("type"):
            col = self._col()
            self._write(
                lambda: col.update(ids=[f"entity:{eid}"], metadatas=[{**known, "type": kind}])
            )
        return eid

    # -- writes -----------------------------------------------------------------------------
    def add(self, fact: FactInput) -> tuple[Fact, bool]:
        """As KnowledgeGraph.add: a fact identical to a stored one is not stored twice."""
        checked = fact.checked()
        pred, start, end = checked.predicate, checked.valid_from, checked.valid_to
        sid = self._put_entity(checked.subject, checked.subject_type)
        oid = self._put_entity(checked.obj, checked.object_type)
        same = self._facts(_and({"subject_id": sid}, {"predicate": pred}, {"object_id": oid}))
        for fact in sorted(same, key=lambda f: f.recorded_at):
            if (fact.valid_from, fact.valid_to) == (start, end) or (
                start is None and end is None and fact.valid_to is None
            ):
                return fact, False
        taken = {f.id for f in same}
        n = 0
        while fact_id(sid, pred, oid, start, end, n) in taken:
            n += 1
        fact = Fact(
            id=fact_id(sid, pred, oid, start, end, n),
            subject_id=sid,
            predicate=pred,
            object_id=oid,
            valid_from=start,
            valid_to=end,
            confidence=float(checked.confidence),
            source_drawer_id=checked.source_drawer_id,
            source_file=checked.source_file,
            recorded_at=learned_stamp(),
            subject=self.display_name(checked.subject),
            object=self.display_name(checked.obj),
            source_closet=checked.source_closet,
        )
        col = self._col()
        self._write(
            lambda: col.add(
                ids=[fact.id],
                embeddings=[_VECTOR],
                documents=[f"{fact.subject} {pred} {fact.object}"],
                metadatas=[_fact_meta(fact)],
            )
        )
        stored = self._by_id(fact.id)  # another machine's identical fact may have come first
        if stored is None:
            raise chroma_server.classify(
                RuntimeError("the server acknowledged the fact but does not return it"),
                self._opts,
            )
        return stored, True

    def invalidate(
        self, subject: str, predicate: str, obj: str, ended: str | None = None
    ) -> tuple[list[Fact], str]:
        end = parse_date(ended, "ended") or today()
        sid, pred, oid = entity_id(subject), normalize_predicate(predicate), entity_id(obj)
        spo = _and({"subject_id": sid}, {"predicate": pred}, {"object_id": oid})
        # Open at `end`: no end yet, or one after it (kg.py compares the text; so do we).
        open_facts = [f for f in self._facts(spo) if f.valid_to is None or f.valid_to > end]
        if not open_facts:
            raise not_open_error(subject, pred, obj, end, self._facts(spo))
        check_end_after_start(open_facts, end)
        ended_facts = [
            Fact(**{**f.__dict__, "valid_to": end}) for f in open_facts
        ]  # frozen dataclass: a copy with the new end
        col = self._col()
        self._write(
            lambda: col.update(
                ids=[f.id for f in ended_facts], metadatas=[_fact_meta(f) for f in ended_facts]
            )
        )
        return [self._by_id(f.id) or f for f in ended_facts], end

    def supersede(
        self, subject: str, predicate: str, old_object: str, new_object: str, at: str | None = None
    ) -> tuple[list[Fact], Fact, str]:
        """`subject predicate` changes from `old_object` to `new_object` on `at`: the old fact
        ends and the new one starts then. Two requests on a server (Chroma has no transaction
        across records): a reader in between sees the old fact ended and the new one not yet."""
        for label, value in (("new_object", new_object), ("old_object", old_object)):
            if not isinstance(value, str) or not value.strip():
                raise InvalidInputError(f"The {label} is empty.", hint="Name both objects.")
        if entity_id(new_object) == entity_id(old_object):
            raise InvalidInputError(
                f"old_object and new_object are the same ({old_object!r}); nothing to supersede.",
                hint="Pass the value that replaces the old one as new_object.",
            )
        ended, end = self.invalidate(subject, predicate, old_object, at)
        new, _ = self.add(
            FactInput(ended[0].subject, predicate, new_object, end, None, ended[0].confidence)
        )
        return ended, new, end

    # -- reads ------------------------------------------------------------------------------
    def has_entity(self, name: str) -> bool:
        return self._entity(entity_id(name)) is not None

    def display_name(self, name: str) -> str:
        known = self._entity(entity_id(name))
        return str(known["name"]) if known else name.strip()

    def entity_names(self) -> list[str]:
        got = self._get(where={"kind": "entity"})
        pairs = sorted((m["entity_id"], m["name"]) for m in got["metadatas"])
        return [name for _eid, name in pairs]

    def query(self, entity: str, as_of: str | None = None, direction: str = "both") -> list[Fact]:
        check_query(entity, direction)
        eid = entity_id(entity)
        sides = {
            "outgoing": {"subject_id": eid},
            "incoming": {"object_id": eid},
            "both": {"$or": [{"subject_id": eid}, {"object_id": eid}]},
        }
        clauses = [sides[direction]]
        when = parse_date(as_of, "as_of")
        if when is None:
            return self._facts(_and(*clauses))
        bounds = as_of_bounds(when)
        _day, low, high = bounds
        # kg.py's rule: started by the end of the window, ended no earlier than its start;
        # the server narrows (a day wider), kg.holds decides, as the SQLite store does.
        clauses += [
            {"from_us": {"$lte": to_us(high) + _DAY_US}},
            {"to_us": {"$gte": to_us(low) - _DAY_US}},
        ]
        return [f for f in self._facts(_and(*clauses)) if holds(f.valid_from, f.valid_to, bounds)]

    def timeline(
        self, entity: str | None = None, limit: int | None = None, offset: int = 0
    ) -> list[Fact]:
        check_limit(limit)
        if not isinstance(offset, int) or offset < 0:
            raise InvalidInputError(f"offset must be 0 or more, not {offset!r}.")
        where: dict[str, Any] = {}
        if entity is not None and entity.strip():
            eid = entity_id(entity)
            where = {"$or": [{"subject_id": eid}, {"object_id": eid}]}
        facts = self._facts(where)[offset:]
        return facts[:limit] if limit is not None else facts

    def stats(self) -> dict[str, Any]:
        got = self._get(where={"kind": "fact"})
        metas = got["metadatas"]
        entities = len(self._get(where={"kind": "entity"})["ids"])
        now = now_stamp()
        expired = sum(1 for m in metas if not is_current(m.get("valid_to"), now))
        counts = Counter(m["predicate"] for m in metas)
        predicates = dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
        return {
            "entities": entities,
            "triples": len(metas),
            "current_facts": len(metas) - expired,
            "expired_facts": expired,
            "predicates": predicates,
        }

    # -- moving facts between palaces -------------------------------------------------------
    def export_facts(self) -> Iterator[FactRecord]:
        types = {
            m["entity_id"]: m.get("type") for m in self._get(where={"kind": "entity"})["metadatas"]
        }
        for f in sorted(self._facts({}), key=lambda f: f.id):
            yield FactRecord(f, types.get(f.subject_id), types.get(f.object_id))

    def import_facts(self, records: Iterable[FactRecord]) -> int:
        """Store facts with their ids as given (a migrated palace keeps them); ids already
        here are left alone. Returns how many were new."""
        records = list(records)
        if not records:
            return 0
        for rec in records:
            self._put_entity(rec.fact.subject, rec.subject_type)
            self._put_entity(rec.fact.object, rec.object_type)
        have = set(self._get(ids=[r.fact.id for r in records])["ids"])
        new = [r for r in records if r.fact.id not in have]
        col = self._col()
        for start in range(0, len(new), 500):
            part = new[start : start + 500]
            facts = [
                Fact(
                    **{
                        **r.fact.__dict__,
                        "subject_id": entity_id(r.fact.subject),
                        "object_id": entity_id(r.fact.object),
                    }
                )
                for r in part
            ]
            self._write(
                lambda facts=facts: col.add(
                    ids=[f.id for f in facts],
                    embeddings=[_VECTOR] * len(facts),
                    documents=[f"{f.subject} {f.predicate} {f.object}" for f in facts],
                    metadatas=[_fact_meta(f) for f in facts],
                )
            )
        return len(new)
