"""The temporal knowledge graph: entities and facts with a validity interval, in SQLite.

One file, `knowledge_graph.sqlite3`, inside the palace directory. A fact (triple) is
`subject --predicate--> object`, valid on `[valid_from, valid_to]`, both ends inclusive (the
one rule of mempalace_cli/common/clock.py): a fact holds on `as_of` when `valid_from <= as_of <=
valid_to`, and a date is a whole day on the user's calendar (local time), so a date-only
`valid_to` is the fact's last day. On a switch-over date (the old fact ends, the new one
starts) both answer, as in the design we follow. A fact is *current* while it holds now: no
end, or an end not yet past (a fact whose last day is today is current until today is over).
`query`, `timeline`, `current` and `stats` read one clock (clock.py; MEMPALACE_NOW fixes it).
A missing `valid_from` means "since always", a missing `valid_to` "still true".
Facts are never deleted: invalidating sets `valid_to`, so history keeps answering.

Dates are stored as normalised ISO strings (`YYYY-MM-DD`, or `YYYY-MM-DDTHH:MM:SS[.ffffff]`
in UTC when an offset was given), which compare correctly as text; a date is compared with an
instant through its local day's first and last instants.

This module imports only the standard library: the `kg` commands never load Chroma or the model.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from mempalace_cli.common import clock
from mempalace_cli.common.errors import InvalidInputError, NotFoundError
from mempalace_cli.storage.sqlite_db import PalaceDb, add_column

KG_FILE = "knowledge_graph.sqlite3"
DIRECTIONS = ("outgoing", "incoming", "both")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entities (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    type TEXT,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS triples (
    id TEXT PRIMARY KEY,
    subject TEXT NOT NULL REFERENCES entities(id),
    predicate TEXT NOT NULL,
    object TEXT NOT NULL REFERENCES entities(id),
    valid_from TEXT,
    valid_to TEXT,
    confidence REAL NOT NULL DEFAULT 1.0,
    source_drawer_id TEXT,
    source_file TEXT,
    recorded_at TEXT NOT NULL,
    source_closet TEXT
);
CREATE INDEX IF NOT EXISTS triples_subject ON triples (subject);
CREATE INDEX IF NOT EXISTS triples_object ON triples (object);
CREATE INDEX IF NOT EXISTS triples_predicate ON triples (predicate);
CREATE INDEX IF NOT EXISTS triples_validity ON triples (valid_from, valid_to);
"""

_DATE_SHAPE = re.compile(
    r"^\d{4}-\d{2}-\d{2}"  # the date
    r"([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?)?$"  # an optional time
)
_FACT_COLUMNS = (
    "t.id, t.subject, t.predicate, t.object, t.valid_from, t.valid_to, t.confidence, "
    "t.source_drawer_id, t.source_file, t.recorded_at, s.name, o.name, t.source_closet"
)
# Held at the bounds of `as_of_bounds`: started by the end of the window (a date-only start
# compared as a date, an instant as an instant), ended no earlier than its start (valid_to is
# inclusive: a date-only end covers its whole local day).
_HELD_SQL = (
    " AND (t.valid_from IS NULL OR (length(t.valid_from) = 10 AND t.valid_from <= ?)"
    " OR (length(t.valid_from) <> 10 AND t.valid_from <= ?))"
    " AND (t.valid_to IS NULL OR (length(t.valid_to) = 10 AND t.valid_to >= ?)"
    " OR (length(t.valid_to) <> 10 AND t.valid_to >= ?))"
)


# -- normalisation -----------------------------------------------------------------------------
def entity_id(name: str) -> str:
    """The key an entity is matched by: case-insensitive, whitespace collapsed."""
    return re.sub(r"\s+", "_", name.strip().casefold())


def normalize_predicate(predicate: str) -> str:
    return re.sub(r"\s+", "_", predicate.strip().lower())


def parse_date(value: str | date | None, field: str = "date") -> str | None:
    """Normalise a `YYYY-MM-DD` or ISO datetime; anything else is an InvalidInputError."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return _format_datetime(value)
    if isinstance(value, date):
        return value.isoformat()
    text = str(value).strip()
    if not text:
        return None
    bad = InvalidInputError(
        f"{field} {value!r} is not a date.",
        hint="Use YYYY-MM-DD (2026-03-12) or an ISO datetime (2026-03-12T09:30:00).",
    )
    if not _DATE_SHAPE.match(text):
        raise bad
    try:
        if len(text) == 10:
            return date.fromisoformat(text).isoformat()
        return _format_datetime(datetime.fromisoformat(text))
    except ValueError:
        raise bad from None


def _migrate(conn: sqlite3.Connection) -> None:
    """Bring a graph made by an older version up to this schema."""
    add_column(conn, "triples", "source_closet", "TEXT")


def _format_datetime(value: datetime) -> str:
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value.isoformat()


def today() -> str:
    """The user's calendar date (local time, clock.py): a date-only bound means a day on the
    user's calendar, so it is compared with this, never with the UTC clock (see `is_current`)."""
    return clock.today()


def now_stamp() -> str:
    """Now as naive UTC (clock.py: MEMPALACE_NOW fixes it)."""
    return clock.utc_stamp()


def learned_stamp() -> str:
    """When a fact was recorded, to the microsecond: a fact restated within the same second as
    the one it follows must still sort after it (ids break no ties that mean anything)."""
    return datetime.now(UTC).replace(tzinfo=None).isoformat(timespec="microseconds")


def _window(as_of: str) -> tuple[str, str]:
    """The [low, high] instants `as_of` covers: a whole local day for a date, one instant
    otherwise."""
    return clock.first_instant(as_of), clock.last_instant(as_of)


def as_of_bounds(as_of: str) -> tuple[str, str, str]:
    """What a fact's bounds are compared with to hold on `as_of`: (day, low, high). A
    date-only bound is compared with `day` (the date itself, or the local date an instant
    falls on); an instant bound with the window [low, high] (a date's whole local day)."""
    low, high = _window(as_of)
    return clock.local_date(as_of), low, high


def holds(valid_from: str | None, valid_to: str | None, bounds: tuple[str, str, str]) -> bool:
    """Whether a fact valid `valid_from`..`valid_to` (both inclusive) holds at `as_of_bounds`:
    started by the end of the window and ended no earlier than its start (`_HELD_SQL`, for
    stores that filter in Python)."""
    day, low, high = bounds
    started = valid_from is None or valid_from <= (day if len(valid_from) == 10 else high)
    return started and (valid_to is None or valid_to >= (day if len(valid_to) == 10 else low))


def is_current(valid_to: str | None, now: str | None = None) -> bool:
    """Holds now: no end, or an end not yet past. valid_to is inclusive: a date-only end is the
    fact's last day on the user's calendar, so the fact is current until that local day is
    over (the same rule `as_of` applies). `now` is naive UTC (default: clock.py's now)."""
    if valid_to is None:
        return True
    now = now or now_stamp()
    if len(valid_to) == 10:
        return valid_to >= clock.local_date(now)
    return valid_to >= now


@dataclass(frozen=True)
class Fact:
    id: str
    subject_id: str
    predicate: str
    object_id: str
    valid_from: str | None
    valid_to: str | None
    confidence: float
    source_drawer_id: str | None
    source_file: str | None
    recorded_at: str
    subject: str
    object: str
    source_closet: str | None = None

    def to_dict(self, entity: str | None = None, now: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if entity is not None:
            out["direction"] = "outgoing" if self.subject_id == entity else "incoming"
        out.update(
            triple_id=self.id,
            subject=self.subject,
            predicate=self.predicate,
            object=self.object,
            valid_from=self.valid_from,
            valid_to=self.valid_to,
            confidence=self.confidence,
            source=self.source_closet or self.source_drawer_id or self.source_file,
            source_closet=self.source_closet,
            source_drawer_id=self.source_drawer_id,
            source_file=self.source_file,
            recorded_at=self.recorded_at,
            current=is_current(self.valid_to, now),
        )
        return out


@dataclass(frozen=True)
class FactInput:
    """A fact to record: `subject predicate object`, true from `valid_from` through `valid_to`
    (both days included), how sure (`confidence`, 0 to 1) and where it came from. What
    `kg add`, the mempalace_kg_add tool, the service's `kg_add` and every fact store's `add`
    take: the one place its fields are written."""

    subject: str
    predicate: str
    obj: str
    valid_from: str | None = None
    valid_to: str | None = None
    confidence: float = 1.0
    source_drawer_id: str | None = None
    source_file: str | None = None
    subject_type: str | None = None
    object_type: str | None = None
    source_closet: str | None = None

    def checked(self) -> FactInput:
        """This fact as a store records it (`check_fact`): refused when it is not valid, its
        predicate normalised and its dates parsed."""
        pred, start, end = check_fact(
            self.subject, self.predicate, self.obj, self.valid_from, self.valid_to, self.confidence
        )
        return replace(self, predicate=pred, valid_from=start, valid_to=end)


@dataclass(frozen=True)
class FactRecord:
    """A fact with its entities' types: what moves between palaces."""

    fact: Fact
    subject_type: str | None
    object_type: str | None


def check_fact(
    subject: str,
    predicate: str,
    obj: str,
    valid_from: str | None,
    valid_to: str | None,
    confidence: float,
) -> tuple[str, str | None, str | None]:
    """Validate a fact to record; (normalised predicate, valid_from, valid_to). Every fact
    store (SQLite here, Chroma in kg_store_chroma.py) applies this one rule."""
    for label, value in (("subject", subject), ("predicate", predicate), ("object", obj)):
        if not isinstance(value, str) or not value.strip():
            raise InvalidInputError(
                f"The {label} is empty.",
                hint="A fact needs a subject, a predicate and an object.",
            )
    start = parse_date(valid_from, "valid_from")
    end = parse_date(valid_to, "valid_to")
    if start is not None and end is not None and _window(end)[1] < _window(start)[0]:
        raise InvalidInputError(
            f"valid_to {end} is before valid_from {start}.",
            hint="valid_to is the last date the fact holds; it can't come before valid_from.",
        )
    if not isinstance(confidence, int | float) or not 0.0 <= confidence <= 1.0:
        raise InvalidInputError(f"confidence must be between 0 and 1, not {confidence!r}.")
    return normalize_predicate(predicate), start, end


def not_open_error(subject: str, pred: str, obj: str, end: str, known: list[Fact]) -> NotFoundError:
    """Nothing to invalidate: say whether the fact already ended or is unknown."""
    if known:
        ends = ", ".join(sorted({f.valid_to or "-" for f in known}))
        hint = f"That fact already ended ({ends}); nothing to change."
    else:
        hint = (
            f"Check the spelling with: mempalace kg query {subject!r} "
            "(predicates are lower case with underscores)."
        )
    return NotFoundError(
        f"No fact '{subject} {pred} {obj}' is open at {end}; nothing was changed.",
        hint=hint,
    )


def check_end_after_start(facts: list[Fact], end: str) -> None:
    for fact in facts:
        if fact.valid_from is not None and _window(end)[1] < _window(fact.valid_from)[0]:
            raise InvalidInputError(
                f"ended {end} is before the fact's valid_from {fact.valid_from}.",
                hint="Pass --ended with a date on or after the day the fact started.",
            )


def check_query(entity: str, direction: str) -> None:
    if direction not in DIRECTIONS:
        raise InvalidInputError(
            f"Unknown direction {direction!r}.", hint=f"Use one of: {', '.join(DIRECTIONS)}."
        )
    if not isinstance(entity, str) or not entity.strip():
        raise InvalidInputError(
            "Name the entity to look up.", hint="e.g. mempalace kg query MyProject"
        )


def check_limit(limit: int | None) -> None:
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise InvalidInputError(f"limit must be a positive number, not {limit!r}.")


def chronological(fact: Fact) -> tuple[bool, str, str, str]:
    """Undated facts first, then by start, then by when they were learned."""
    return (fact.valid_from is not None, fact.valid_from or "", fact.recorded_at, fact.id)


class KnowledgeGraph:
    """The graph file of one palace. Callers hold the palace lock around writes; a thread lock
    keeps threads of one process (the MCP server) from interleaving on the shared connection."""

    def __init__(self, palace_path: Path) -> None:
        self._db = PalaceDb(
            palace_path / KG_FILE,
            _SCHEMA,
            "The knowledge graph",
            " to start an empty graph, or restore it from a backup.",
            setup=_migrate,
        )
        self._mutex = threading.RLock()

    # -- connection -----------------------------------------------------------------------
    @property
    def path(self) -> Path:
        return self._db.path

    @path.setter
    def path(self, value: Path) -> None:  # before the first use (an empty graph: ":memory:")
        self._db.path = value

    @property
    def conn(self) -> sqlite3.Connection:
        return self._db.conn

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._mutex:
            conn = self.conn
            with conn:
                yield conn

    def _facts(self, where: str, params: list[Any], order: str = "") -> list[Fact]:
        sql = (
            f"SELECT {_FACT_COLUMNS} FROM triples t JOIN entities s ON s.id = t.subject "
            f"JOIN entities o ON o.id = t.object WHERE {where} {order}"
        )
        with self._mutex:
            return [Fact(*row) for row in self.conn.execute(sql, params)]

    # -- writes ---------------------------------------------------------------------------
    def _upsert_entity(self, conn: sqlite3.Connection, name: str, kind: str | None) -> str:
        eid = entity_id(name)
        conn.execute(
            "INSERT INTO entities(id, name, type, created_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET type = COALESCE(entities.type, excluded.type)",
            (eid, name.strip(), kind, now_stamp()),
        )
        return eid

    def add(self, fact: FactInput) -> tuple[Fact, bool]:
        """Record a fact; returns (fact, created). A fact identical to a stored one (same
        subject, predicate, object and interval, or restated without dates while open) is not
        stored twice."""
        checked = fact.checked()
        with self._transaction() as conn:
            return self._add_locked(conn, checked)

    def _add_locked(self, conn: sqlite3.Connection, fact: FactInput) -> tuple[Fact, bool]:
        """The insert of `add` (a checked fact), inside the caller's transaction."""
        subject, pred, obj = fact.subject, fact.predicate, fact.obj
        start, end, confidence = fact.valid_from, fact.valid_to, fact.confidence
        source_drawer_id, source_file = fact.source_drawer_id, fact.source_file
        source_closet = fact.source_closet
        sid = self._upsert_entity(conn, subject, fact.subject_type)
        oid = self._upsert_entity(conn, obj, fact.object_type)
        same = (
            "t.subject = ? AND t.predicate = ? AND t.object = ? AND "
            "((t.valid_from IS ? AND t.valid_to IS ?)"
        )
        params: list[Any] = [sid, pred, oid, start, end]
        if start is None and end is None:
            same += " OR t.valid_to IS NULL"
        existing = self._facts(same + ")", params, "ORDER BY t.recorded_at LIMIT 1")
        if existing:
            return existing[0], False
        tid = "t_" + uuid.uuid4().hex[:20]
        conn.execute(
            "INSERT INTO triples(id, subject, predicate, object, valid_from, valid_to, "
            "confidence, source_drawer_id, source_file, recorded_at, source_closet) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                tid,
                sid,
                pred,
                oid,
                start,
                end,
                float(confidence),
                source_drawer_id,
                source_file,
                learned_stamp(),
                source_closet,
            ),
        )
        return self._facts("t.id = ?", [tid])[0], True

    def invalidate(
        self, subject: str, predicate: str, obj: str, ended: str | None = None
    ) -> tuple[list[Fact], str]:
        """End every fact S P O still valid at `ended` (default today). Returns the facts it
        ended and the end date; raises NotFoundError when there is none."""
        end = parse_date(ended, "ended") or today()
        sid, pred, oid = entity_id(subject), normalize_predicate(predicate), entity_id(obj)
        with self._transaction() as conn:
            open_facts = self._end_open_facts(
                conn,
                (subject, pred, obj, sid, oid),
                end,
                f"ended {end} is before the fact's valid_from",
                "Pass --ended with a date on or after the day the fact started.",
            )
        marks = ",".join("?" * len(open_facts))
        return self._facts(f"t.id IN ({marks})", [f.id for f in open_facts]), end

    def _end_open_facts(
        self,
        conn: Any,
        names: tuple[str, str, str, str, str],
        end: str,
        too_early: str,
        hint: str,
    ) -> list[Fact]:
        """End on `end` every fact S P O still open then (caller holds the transaction);
        `names` is (subject, predicate, object as typed, subject id, object id). Raises
        NotFoundError when none is open and InvalidInputError when `end` precedes a start."""
        subject, pred, obj, sid, oid = names
        open_facts = self._facts(
            "t.subject = ? AND t.predicate = ? AND t.object = ? AND "
            "(t.valid_to IS NULL OR t.valid_to > ?)",
            [sid, pred, oid, end],
        )
        if not open_facts:
            raise self._not_open(subject, pred, obj, end, sid, oid)
        for fact in open_facts:
            if fact.valid_from is not None and _window(end)[1] < _window(fact.valid_from)[0]:
                raise InvalidInputError(f"{too_early} {fact.valid_from}.", hint=hint)
        conn.executemany(
            "UPDATE triples SET valid_to = ? WHERE id = ?", [(end, f.id) for f in open_facts]
        )
        return open_facts

    def supersede(
        self, subject: str, predicate: str, old_object: str, new_object: str, at: str | None = None
    ) -> tuple[list[Fact], Fact, str]:
        """`subject predicate` changes from `old_object` to `new_object` on `at` (default
        today): the open old fact ends on `at` and the new one starts on `at`, in one
        transaction, so no reader ever sees neither or a half-done switch."""
        end = parse_date(at, "at") or today()
        for label, value in (("new_object", new_object), ("old_object", old_object)):
            if not isinstance(value, str) or not value.strip():
                raise InvalidInputError(f"The {label} is empty.", hint="Name both objects.")
        sid, pred, oid = entity_id(subject), normalize_predicate(predicate), entity_id(old_object)
        if entity_id(new_object) == oid:
            raise InvalidInputError(
                f"old_object and new_object are the same ({old_object!r}); nothing to supersede.",
                hint="Pass the value that replaces the old one as new_object.",
            )
        with self._transaction() as conn:
            open_facts = self._end_open_facts(
                conn,
                (subject, pred, old_object, sid, oid),
                end,
                f"at {end} is before the old fact's valid_from",
                "Pass the date the change happened, on or after the old fact began.",
            )
            new, _ = self._add_locked(
                conn,
                FactInput(
                    open_facts[0].subject, pred, new_object, end, None, open_facts[0].confidence
                ),
            )
        marks = ",".join("?" * len(open_facts))
        return self._facts(f"t.id IN ({marks})", [f.id for f in open_facts]), new, end

    def _not_open(
        self, subject: str, pred: str, obj: str, end: str, sid: str, oid: str
    ) -> NotFoundError:
        known = self._facts("t.subject = ? AND t.predicate = ? AND t.object = ?", [sid, pred, oid])
        return not_open_error(subject, pred, obj, end, known)

    # -- reads ----------------------------------------------------------------------------
    def has_entity(self, name: str) -> bool:
        with self._mutex:
            row = self.conn.execute("SELECT 1 FROM entities WHERE id = ?", (entity_id(name),))
            return row.fetchone() is not None

    def display_name(self, name: str) -> str:
        with self._mutex:
            row = self.conn.execute(
                "SELECT name FROM entities WHERE id = ?", (entity_id(name),)
            ).fetchone()
        return row[0] if row else name.strip()

    def entity_names(self) -> list[str]:
        with self._mutex:
            return [r[0] for r in self.conn.execute("SELECT name FROM entities ORDER BY id")]

    def query(self, entity: str, as_of: str | None = None, direction: str = "both") -> list[Fact]:
        check_query(entity, direction)
        eid = entity_id(entity)
        sides = {
            "outgoing": "t.subject = ?",
            "incoming": "t.object = ?",
            "both": "(t.subject = ? OR t.object = ?)",
        }[direction]
        params: list[Any] = [eid] * sides.count("?")
        where = sides
        when = parse_date(as_of, "as_of")
        if when is not None:
            day, low, high = as_of_bounds(when)
            where += _HELD_SQL
            params += [day, high, day, low]
        return self._facts(
            where, params, "ORDER BY t.valid_from IS NOT NULL, t.valid_from, t.recorded_at, t.id"
        )

    def timeline(
        self, entity: str | None = None, limit: int | None = None, offset: int = 0
    ) -> list[Fact]:
        """Facts in chronological order: by start (undated first), then when they were learned;
        `offset` skips that many first (paging with `limit`)."""
        where, params = "1", []
        if limit is not None and (not isinstance(limit, int) or limit < 1):
            raise InvalidInputError(f"limit must be a positive number, not {limit!r}.")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise InvalidInputError(f"offset must be 0 or more, not {offset!r}.")
        if entity is not None and entity.strip():
            eid = entity_id(entity)
            where, params = "(t.subject = ? OR t.object = ?)", [eid, eid]
        order = "ORDER BY t.valid_from IS NOT NULL, t.valid_from, t.recorded_at, t.id"
        if limit is not None or offset:
            order += f" LIMIT {int(limit) if limit is not None else -1} OFFSET {int(offset)}"
        return self._facts(where, params, order)

    def stats(self) -> dict[str, Any]:
        now = now_stamp()
        with self._mutex:
            conn = self.conn
            entities = conn.execute("SELECT COUNT(*) FROM entities").fetchone()[0]
            # Expired: not current (`is_current`): its last day or instant is past.
            triples, expired = conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(valid_to IS NOT NULL AND ("
                "(length(valid_to) = 10 AND valid_to < ?) OR "
                "(length(valid_to) <> 10 AND valid_to < ?))), 0) FROM triples",
                (clock.local_date(now), now),
            ).fetchone()
            predicates = dict(
                conn.execute(
                    "SELECT predicate, COUNT(*) FROM triples GROUP BY predicate "
                    "ORDER BY COUNT(*) DESC, predicate"
                ).fetchall()
            )
        return {
            "entities": entities,
            "triples": triples,
            "current_facts": triples - expired,
            "expired_facts": expired,
            "predicates": predicates,
        }

    # -- moving facts between palaces (migrate) -------------------------------------------
    def export_facts(self) -> Iterator[FactRecord]:
        """Every fact with its entities' types, as stored (ids kept)."""
        sql = (
            f"SELECT {_FACT_COLUMNS}, s.type, o.type FROM triples t "
            "JOIN entities s ON s.id = t.subject JOIN entities o ON o.id = t.object ORDER BY t.id"
        )
        with self._mutex:
            rows = self.conn.execute(sql).fetchall()
        for row in rows:
            yield FactRecord(Fact(*row[:12]), row[12], row[13])

    def import_facts(self, records: Iterable[FactRecord]) -> int:
        """Store facts with their ids as given; a fact whose id is already here is left as it
        is. Returns how many were new."""
        added = 0
        with self._transaction() as conn:
            for rec in records:
                f = rec.fact
                # Entity ids follow this palace's rule (MemPalace may spell them otherwise).
                sid = self._upsert_entity(conn, f.subject, rec.subject_type)
                oid = self._upsert_entity(conn, f.object, rec.object_type)
                cur = conn.execute(
                    "INSERT OR IGNORE INTO triples(id, subject, predicate, object, valid_from, "
                    "valid_to, confidence, source_drawer_id, source_file, recorded_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        f.id,
                        sid,
                        f.predicate,
                        oid,
                        f.valid_from,
                        f.valid_to,
                        f.confidence,
                        f.source_drawer_id,
                        f.source_file,
                        f.recorded_at,
                    ),
                )
                added += cur.rowcount
        return added
