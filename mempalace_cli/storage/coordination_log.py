"""Where the coordination log lives: events in one append order, and artifacts (exact text by
id). The rules (what an event may hold, tasks, acks, redaction, waiting) are the service's
(service/coordination.py); this module only keeps records and finds them.

Two stores with one interface (`CoordinationLog`):

- `SqliteLog`, an embedded palace: `mempalace_coordination.sqlite3` in the palace folder (WAL:
  readers never block the writer). An event's `seq` is the next integer, taken inside the
  append's own transaction; callers write under the palace's write lock.
- `ChromaLog`, a team palace: the collection `mempalace_coordination` on the palace's Chroma
  server, so every machine of the team shares one log. Event `seq` n is the record id
  `ev_<n, 12 digits>`: an append claims the first free slot with `add` (Chroma keeps the first
  record of an id and ignores a repeat) and reads it back; a slot another machine took first
  sends it on to the next. Slots are therefore filled in order without gaps, across machines,
  with no clock involved. Artifacts are records `art_...`; Chroma wants a vector with every
  record, so each carries a constant 1-d one.

An event's public id, `ev_<seq>_<8 hex>`, carries its seq (a cursor needs no lookup) and a
random part (an id from another palace, or a guessed one, is not found). Waiting is polling:
`watch()` gives a cheap "did anything change?" (SQLite's `PRAGMA data_version` on one open
connection; on a server, one get by id of the next slot).
"""

from __future__ import annotations

import json
import re
import secrets
import sqlite3
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from mempalace_cli.common.errors import PalaceCorruptError, ServerError, from_sqlite_error
from mempalace_cli.storage import chroma_server
from mempalace_cli.storage.chroma_server import ServerOptions
from mempalace_cli.storage.side_collection import SideCollection
from mempalace_cli.storage.sqlite_db import open_palace_db, open_read_only

LOG_FILE = "mempalace_coordination.sqlite3"
LOG_COLLECTION = "mempalace_coordination"
# The text fields of an event, in the order results show them.
TEXT_FIELDS = (
    "type",
    "stream",
    "room",
    "topic",
    "from_agent",
    "to_agent",
    "correlation_id",
    "branch",
    "base_commit",
    "status",
    "body",
    "ack_of",
)
BROADCAST = "*"  # to_agent of an event meant for every agent
_ID = re.compile(r"ev_(\d{1,12})_([0-9a-f]{8})")
_VECTOR = [1.0]
_CLAIM_TRIES = 1000  # slots one append may try before giving up (each taken by another writer)
_HINT = (
    "Move the file aside (it is the palace's coordination log: events, tasks and artifacts) "
    "and run the command again to start a new log; the drawers are not affected."
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    type TEXT NOT NULL,
    stream TEXT NOT NULL,
    room TEXT NOT NULL,
    topic TEXT,
    from_agent TEXT NOT NULL,
    to_agent TEXT,
    correlation_id TEXT,
    branch TEXT,
    base_commit TEXT,
    status TEXT,
    body TEXT,
    ack_of TEXT,
    metadata TEXT,
    artifact_ids TEXT NOT NULL DEFAULT '[]',
    writer TEXT NOT NULL,
    created_at TEXT NOT NULL,
    created_us INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS events_stream ON events (stream, seq);
CREATE INDEX IF NOT EXISTS events_to ON events (to_agent, seq);
CREATE INDEX IF NOT EXISTS events_correlation ON events (correlation_id, seq);
CREATE INDEX IF NOT EXISTS events_type ON events (type, seq);
CREATE INDEX IF NOT EXISTS events_ack ON events (ack_of);
CREATE TABLE IF NOT EXISTS artifacts (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    size_bytes INTEGER NOT NULL,
    content BLOB NOT NULL,
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL,
    metadata TEXT
);
"""


# -- records ---------------------------------------------------------------------------------
def event_id(seq: int, nonce: str) -> str:
    return f"ev_{seq}_{nonce}"


def parse_event_id(value: str) -> tuple[int, str] | None:
    """(seq, random part) of an id this log gave out; None for anything else."""
    m = _ID.fullmatch(value) if isinstance(value, str) else None
    return (int(m.group(1)), m.group(2)) if m else None


def now_stamp() -> tuple[str, int]:
    """The time as results show it (UTC, milliseconds) and as microseconds since the epoch."""
    us = time.time_ns() // 1000
    moment = datetime.fromtimestamp(us / 1_000_000, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z", us


def _new_event(seq: int, nonce: str, new: dict[str, Any], writer: str) -> dict[str, Any]:
    stamp, us = now_stamp()
    event: dict[str, Any] = {"id": event_id(seq, nonce), "seq": seq}
    event.update({k: new.get(k) for k in TEXT_FIELDS})
    event["metadata"] = new.get("metadata")
    event["artifact_ids"] = list(new.get("artifact_ids") or [])
    event.update(writer=writer, created_at=stamp, created_us=us)
    return event


@dataclass(frozen=True)
class EventFilter:
    """Which events: every field given must match. `to_agent` also matches broadcasts ('*');
    `correlation_ids` any of them; `since_us` created at or after; `with_status` only events
    that set a status."""

    stream: str | None = None
    room: str | None = None
    topic: str | None = None
    type: str | None = None
    to_agent: str | None = None
    from_agent: str | None = None
    writer: str | None = None
    correlation_id: str | None = None
    status: str | None = None
    ack_of: str | None = None
    correlation_ids: tuple[str, ...] | None = None
    since_us: int | None = None
    with_status: bool = False

    def equalities(self) -> dict[str, str]:
        skip = {"to_agent", "correlation_ids", "since_us", "with_status"}
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name not in skip and getattr(self, f.name) is not None
        }

    def matches(self, event: dict[str, Any]) -> bool:
        if any(event.get(k) != v for k, v in self.equalities().items()):
            return False
        if self.to_agent is not None and event.get("to_agent") not in (self.to_agent, BROADCAST):
            return False
        if self.correlation_ids is not None and event.get("correlation_id") not in set(
            self.correlation_ids
        ):
            return False
        if self.since_us is not None and int(event.get("created_us") or 0) < self.since_us:
            return False
        return not (self.with_status and event.get("status") is None)


class Watch(Protocol):
    def changed(self) -> bool:
        """True when the log may hold something new since the last call (cheap)."""
        ...


class CoordinationLog(ABC):
    """What both stores keep and how a query's matches are paged."""

    location: str
    poll_seconds: float  # how often a wait checks for news

    @abstractmethod
    def exists(self) -> bool: ...

    @abstractmethod
    def append(self, new: dict[str, Any], writer: str) -> dict[str, Any]: ...

    @abstractmethod
    def get_event(self, event_id: str) -> dict[str, Any] | None: ...

    def events(
        self,
        flt: EventFilter,
        after_seq: int = 0,
        before_seq: int | None = None,
        limit: int | None = 50,
        newest_first: bool = False,
    ) -> tuple[list[dict[str, Any]], bool]:
        """Matching events after `after_seq` (and before `before_seq`), in append order (or
        newest first), at most `limit` (None: all); and whether more matched."""
        at_most = None if limit is None else int(limit) + 1
        found = self._matching(flt, after_seq, before_seq, newest_first, at_most)
        if limit is not None and len(found) > limit:
            return found[:limit], True
        return found, False

    @abstractmethod
    def _matching(
        self, flt: EventFilter, after: int, before: int | None, desc: bool, at_most: int | None
    ) -> list[dict[str, Any]]:
        """The events `flt` matches with seq above `after` (and below `before`), in append
        order (`desc`: newest first), at most `at_most` of them (None: all)."""

    @abstractmethod
    def head(self) -> tuple[int, str | None]: ...

    @abstractmethod
    def watch(self) -> Any: ...

    @abstractmethod
    def put_artifact(self, record: dict[str, Any]) -> tuple[dict[str, Any], bool]: ...

    @abstractmethod
    def get_artifact(self, artifact_id: str) -> dict[str, Any] | None: ...

    @abstractmethod
    def artifacts_present(self, ids: list[str]) -> set[str]: ...


# -- an embedded palace: SQLite ----------------------------------------------------------------
_COLUMNS = (
    "seq, id, type, stream, room, topic, from_agent, to_agent, correlation_id, branch, "
    "base_commit, status, body, ack_of, metadata, artifact_ids, writer, created_at, created_us"
)


def _row_event(row: sqlite3.Row) -> dict[str, Any]:
    event: dict[str, Any] = {"id": row["id"], "seq": row["seq"]}
    event.update({k: row[k] for k in TEXT_FIELDS})
    event["metadata"] = json.loads(row["metadata"]) if row["metadata"] else None
    event["artifact_ids"] = json.loads(row["artifact_ids"] or "[]")
    event.update(writer=row["writer"], created_at=row["created_at"], created_us=row["created_us"])
    return event


def _sql_where(flt: EventFilter) -> tuple[list[str], list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    for key, value in flt.equalities().items():
        clauses.append(f"{key} = ?")
        params.append(value)
    if flt.to_agent is not None:
        clauses.append("(to_agent = ? OR to_agent = ?)")
        params += [flt.to_agent, BROADCAST]
    if flt.correlation_ids is not None:
        ids = list(flt.correlation_ids) or [""]
        clauses.append(f"correlation_id IN ({', '.join('?' * len(ids))})")
        params += ids
    if flt.since_us is not None:
        clauses.append("created_us >= ?")
        params.append(flt.since_us)
    if flt.with_status:
        clauses.append("status IS NOT NULL")
    return clauses, params


class SqliteLog(CoordinationLog):
    """The log of an embedded palace: one SQLite file in its folder. Each call opens its own
    connection and closes it, so one object serves any number of threads."""

    poll_seconds = 0.02  # a wait's check costs one PRAGMA on an open connection

    def __init__(self, folder: Path) -> None:
        self.path = folder / LOG_FILE
        self.location = str(self.path)
        self._borrowed = threading.local()  # a waiting thread's own open connection

    def exists(self) -> bool:
        return self.path.is_file()

    @contextmanager
    def _failures(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.DatabaseError as exc:
            named = from_sqlite_error(exc, self.path)
            if named is not None:
                raise named from exc
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc).lower():
                raise
            raise PalaceCorruptError(
                f"The coordination log {self.path} can't be read: {exc}.", hint=_HINT
            ) from exc

    def _writing(self) -> sqlite3.Connection:
        conn = open_palace_db(self.path, SCHEMA, "The coordination log", _HINT)
        conn.row_factory = sqlite3.Row
        return conn

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection | None]:
        """A read-only connection (reading never creates the file), or None when there is no
        log yet."""
        borrowed = getattr(self._borrowed, "conn", None)
        if borrowed is not None:  # this thread is waiting: reuse its connection
            with self._failures():
                yield borrowed
            return
        if not self.exists():
            yield None
            return
        with self._failures():
            conn = open_read_only(self.path)
            conn.row_factory = sqlite3.Row
            with closing(conn):
                yield conn

    def _has_tables(self, conn: sqlite3.Connection) -> bool:
        row = conn.execute(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'events'"
        ).fetchone()
        return bool(row[0])

    # -- events -------------------------------------------------------------------------------
    def append(self, new: dict[str, Any], writer: str) -> dict[str, Any]:
        with self._failures(), closing(self._writing()) as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                seq = conn.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM events").fetchone()[0]
                event = _new_event(seq, secrets.token_hex(4), new, writer)
                conn.execute(
                    f"INSERT INTO events ({_COLUMNS}) VALUES ({', '.join('?' * 19)})",
                    (
                        event["seq"],
                        event["id"],
                        *(event[k] for k in TEXT_FIELDS),
                        json.dumps(event["metadata"], ensure_ascii=False)
                        if event["metadata"] is not None
                        else None,
                        json.dumps(event["artifact_ids"]),
                        event["writer"],
                        event["created_at"],
                        event["created_us"],
                    ),
                )
                conn.commit()
            except BaseException:
                conn.rollback()
                raise
        return event

    def get_event(self, event_id: str) -> dict[str, Any] | None:
        parsed = parse_event_id(event_id)
        if parsed is None:
            return None
        with self._reading() as conn:
            if conn is None or not self._has_tables(conn):
                return None
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM events WHERE seq = ? AND id = ?", (parsed[0], event_id)
            ).fetchone()
        return _row_event(row) if row else None

    def _matching(
        self, flt: EventFilter, after: int, before: int | None, desc: bool, at_most: int | None
    ) -> list[dict[str, Any]]:
        clauses, params = _sql_where(flt)
        clauses.append("seq > ?")
        params.append(after)
        if before is not None:
            clauses.append("seq < ?")
            params.append(before)
        sql = (
            f"SELECT {_COLUMNS} FROM events WHERE {' AND '.join(clauses)} "
            f"ORDER BY seq {'DESC' if desc else 'ASC'}"
        )
        if at_most is not None:
            sql += f" LIMIT {at_most}"
        with self._reading() as conn:
            if conn is None or not self._has_tables(conn):
                return []
            rows = conn.execute(sql, params).fetchall()
        return [_row_event(r) for r in rows]

    def head(self) -> tuple[int, str | None]:
        """The newest event's (seq, id); (0, None) for an empty log."""
        with self._reading() as conn:
            if conn is None or not self._has_tables(conn):
                return 0, None
            row = conn.execute("SELECT seq, id FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        return (int(row[0]), str(row[1])) if row else (0, None)

    @contextmanager
    def watch(self) -> Iterator[Watch]:
        watcher = _SqliteWatch(self)
        try:
            yield watcher
        finally:
            watcher.close()

    # -- artifacts ----------------------------------------------------------------------------
    def put_artifact(self, record: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """Store `record` (id, kind, sha256, size_bytes, content as bytes, created_by,
        created_at, metadata) unless its id is stored already; the stored record, and whether
        it is new."""
        with self._failures(), closing(self._writing()) as conn, conn:
            cur = conn.execute(
                "INSERT OR IGNORE INTO artifacts (id, kind, sha256, size_bytes, content, "
                "created_by, created_at, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record["id"],
                    record["kind"],
                    record["sha256"],
                    record["size_bytes"],
                    record["content"],
                    record["created_by"],
                    record["created_at"],
                    json.dumps(record["metadata"], ensure_ascii=False)
                    if record.get("metadata") is not None
                    else None,
                ),
            )
            created = cur.rowcount == 1
        stored = self.get_artifact(record["id"])
        assert stored is not None
        return stored, created

    def get_artifact(self, artifact_id: str) -> dict[str, Any] | None:
        with self._reading() as conn:
            if conn is None or not self._has_tables(conn):
                return None
            row = conn.execute(
                "SELECT id, kind, sha256, size_bytes, content, created_by, created_at, metadata "
                "FROM artifacts WHERE id = ?",
                (artifact_id,),
            ).fetchone()
        if row is None:
            return None
        record = dict(row)
        record["content"] = bytes(record["content"])
        record["metadata"] = json.loads(record["metadata"]) if record["metadata"] else None
        return record

    def artifacts_present(self, ids: list[str]) -> set[str]:
        if not ids:
            return set()
        with self._reading() as conn:
            if conn is None or not self._has_tables(conn):
                return set()
            rows = conn.execute(
                f"SELECT id FROM artifacts WHERE id IN ({', '.join('?' * len(ids))})", ids
            ).fetchall()
        return {r[0] for r in rows}


class _SqliteWatch:
    """One read-only connection held while a caller waits: `PRAGMA data_version` changes
    whenever another connection (any process) commits to the file."""

    def __init__(self, log: SqliteLog) -> None:
        self.log = log
        self.conn: sqlite3.Connection | None = None
        self.version: int | None = None
        self._open()

    def _open(self) -> None:
        if self.conn is None and self.log.exists():
            with self.log._failures():
                self.conn = open_read_only(self.log.path)
                self.conn.row_factory = sqlite3.Row
                self.version = self.conn.execute("PRAGMA data_version").fetchone()[0]
            self.log._borrowed.conn = self.conn

    def changed(self) -> bool:
        if self.conn is None:
            self._open()
            return self.conn is not None  # the log was just created
        with self.log._failures():
            version = self.conn.execute("PRAGMA data_version").fetchone()[0]
        if version != self.version:
            self.version = version
            return True
        return False

    def close(self) -> None:
        if self.conn is not None:
            self.log._borrowed.conn = None
            self.conn.close()
            self.conn = None


# -- a team palace: a collection on its Chroma server ------------------------------------------
def slot_id(seq: int) -> str:
    return f"ev_{seq:012d}"


def _chroma_meta(event: dict[str, Any], nonce: str) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "record": "event",
        "seq": event["seq"],
        "event_id": event["id"],
        "nonce": nonce,
        "writer": event["writer"],
        "created_at": event["created_at"],
        "created_us": event["created_us"],
        "has_body": event["body"] is not None,
        "has_status": event["status"] is not None,
        "artifact_ids_json": json.dumps(event["artifact_ids"]),
    }
    for key in TEXT_FIELDS:
        if key != "body" and event[key] is not None:
            meta[key] = event[key]
    if event["metadata"] is not None:
        meta["metadata_json"] = json.dumps(event["metadata"], ensure_ascii=False)
    return meta


def _chroma_event(meta: dict[str, Any], document: str | None) -> dict[str, Any]:
    event: dict[str, Any] = {"id": meta["event_id"], "seq": int(meta["seq"])}
    event.update({k: meta.get(k) for k in TEXT_FIELDS})
    event["body"] = (document or "") if meta.get("has_body") else None
    raw = meta.get("metadata_json")
    event["metadata"] = json.loads(raw) if raw else None
    event["artifact_ids"] = json.loads(meta.get("artifact_ids_json") or "[]")
    event.update(
        writer=meta.get("writer"), created_at=meta.get("created_at"), created_us=meta["created_us"]
    )
    return event


def _chroma_where(flt: EventFilter, after_seq: int, before_seq: int | None) -> dict[str, Any]:
    clauses: list[dict[str, Any]] = [{"record": "event"}, {"seq": {"$gt": after_seq}}]
    clauses += [{k: v} for k, v in flt.equalities().items()]
    if before_seq is not None:
        clauses.append({"seq": {"$lt": before_seq}})
    if flt.to_agent is not None:
        clauses.append({"$or": [{"to_agent": flt.to_agent}, {"to_agent": BROADCAST}]})
    if flt.correlation_ids is not None:
        clauses.append({"correlation_id": {"$in": list(flt.correlation_ids) or [""]}})
    if flt.since_us is not None:
        clauses.append({"created_us": {"$gte": flt.since_us}})
    if flt.with_status:
        clauses.append({"has_status": True})
    return {"$and": clauses}


class ChromaLog(CoordinationLog):
    """The log of a team palace, in a collection of its Chroma server (see the module's
    docstring for how appends from several machines get one order). Safe for several
    threads: the client is, and the only state kept here is the highest slot seen."""

    poll_seconds = 0.05  # a wait's check is one request to the server

    def __init__(self, client_of: Callable[[], Any], opts: ServerOptions) -> None:
        self._opts = opts
        self._collection = SideCollection(client_of, opts, LOG_COLLECTION)
        self._high = 0  # the highest slot known to be taken (slots fill in order)
        self._high_id: str | None = None
        self.location = f"{opts.where} (collection {LOG_COLLECTION})"

    def _col(self, create: bool = False) -> Any | None:
        return self._collection.open(create)

    def exists(self) -> bool:
        return self._col() is not None

    def _get(self, **kwargs: Any) -> dict[str, Any]:
        col = self._col()
        if col is None:
            return {"ids": [], "metadatas": [], "documents": []}
        return chroma_server.read(self._opts, lambda: col.get(**kwargs))

    # -- events -------------------------------------------------------------------------------
    def head(self) -> tuple[int, str | None]:
        """The newest event's (seq, id): the taken slots after the highest one known, found in
        batches by id (a process new to a long log needs a few requests, then one each)."""
        if self._col() is None:
            return 0, None
        batch = 32
        while True:
            start = self._high + 1
            got = self._get(
                ids=[slot_id(n) for n in range(start, start + batch)], include=["metadatas"]
            )
            taken = {int(m["seq"]): m for m in got["metadatas"]}
            n = self._high
            while n + 1 in taken:
                n += 1
            if n == self._high:
                return self._high, self._high_id
            self._high, self._high_id = n, str(taken[n]["event_id"])
            if n < start + batch - 1:
                return self._high, self._high_id
            batch = min(batch * 4, 2048)

    def append(self, new: dict[str, Any], writer: str) -> dict[str, Any]:
        col = self._col(create=True)
        seq = self.head()[0] + 1
        for _ in range(_CLAIM_TRIES):
            nonce = secrets.token_hex(4)
            event = _new_event(seq, nonce, new, writer)
            meta = _chroma_meta(event, nonce)
            document = event["body"] or ""
            chroma_server.write(
                self._opts,
                lambda seq=seq, document=document, meta=meta: col.add(
                    ids=[slot_id(seq)],
                    embeddings=[_VECTOR],
                    documents=[document],
                    metadatas=[meta],
                ),
            )
            got = self._get(ids=[slot_id(seq)], include=["metadatas", "documents"])
            if not got["ids"]:
                raise chroma_server.classify(
                    RuntimeError("the server acknowledged the event but does not return it"),
                    self._opts,
                )
            stored = got["metadatas"][0]
            if stored.get("nonce") == nonce:  # the slot is ours
                if seq > self._high:
                    self._high, self._high_id = seq, event["id"]
                return _chroma_event(stored, got["documents"][0])
            seq += 1  # another writer took this slot first: the next one
        raise ServerError(
            f"Could not append to the coordination log on {self._opts.where}: "
            f"{_CLAIM_TRIES} slots in a row were taken by other writers.",
            hint="Nothing was appended. Run the command again.",
        )

    def get_event(self, event_id: str) -> dict[str, Any] | None:
        parsed = parse_event_id(event_id)
        if parsed is None:
            return None
        got = self._get(ids=[slot_id(parsed[0])], include=["metadatas", "documents"])
        if not got["ids"] or got["metadatas"][0].get("event_id") != event_id:
            return None
        return _chroma_event(got["metadatas"][0], got["documents"][0])

    def _matching(
        self, flt: EventFilter, after: int, before: int | None, desc: bool, at_most: int | None
    ) -> list[dict[str, Any]]:
        got = self._get(where=_chroma_where(flt, after, before), include=["metadatas"])
        metas = sorted(got["metadatas"], key=lambda m: int(m["seq"]), reverse=desc)
        if at_most is not None:
            metas = metas[:at_most]
        with_body = [m for m in metas if m.get("has_body")]
        documents: dict[str, str] = {}
        if with_body:
            bodies = self._get(
                ids=[slot_id(int(m["seq"])) for m in with_body], include=["documents"]
            )
            documents = dict(zip(bodies["ids"], bodies["documents"], strict=True))
        return [_chroma_event(m, documents.get(slot_id(int(m["seq"])))) for m in metas]

    def watch(self) -> Any:
        log = self

        class _Watch:
            def __init__(self) -> None:
                self.seen = log.head()[0]

            def changed(self) -> bool:
                if log._col() is None:
                    return False
                got = log._get(ids=[slot_id(self.seen + 1)], include=[])
                if got["ids"]:
                    self.seen = log.head()[0]
                    return True
                return False

        @contextmanager
        def watching() -> Iterator[Watch]:
            yield _Watch()

        return watching()

    # -- artifacts ----------------------------------------------------------------------------
    def put_artifact(self, record: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        col = self._col(create=True)
        nonce = secrets.token_hex(8)
        meta: dict[str, Any] = {
            "record": "artifact",
            "kind": record["kind"],
            "sha256": record["sha256"],
            "size_bytes": record["size_bytes"],
            "created_by": record["created_by"],
            "created_at": record["created_at"],
            "nonce": nonce,
        }
        if record.get("metadata") is not None:
            meta["metadata_json"] = json.dumps(record["metadata"], ensure_ascii=False)
        text = record["content"].decode("utf-8")
        chroma_server.write(
            self._opts,
            lambda: col.add(
                ids=[record["id"]], embeddings=[_VECTOR], documents=[text], metadatas=[meta]
            ),
        )
        found = self._artifact(record["id"])
        if found is None:
            raise chroma_server.classify(
                RuntimeError("the server acknowledged the artifact but does not return it"),
                self._opts,
            )
        return found[0], found[1] == nonce

    def _artifact(self, artifact_id: str) -> tuple[dict[str, Any], str | None] | None:
        got = self._get(ids=[artifact_id], include=["metadatas", "documents"])
        if not got["ids"] or got["metadatas"][0].get("record") != "artifact":
            return None
        m, text = got["metadatas"][0], got["documents"][0] or ""
        raw = m.get("metadata_json")
        record = {
            "id": artifact_id,
            "kind": m["kind"],
            "sha256": m["sha256"],
            "size_bytes": int(m["size_bytes"]),
            "content": text.encode("utf-8"),
            "created_by": m["created_by"],
            "created_at": m["created_at"],
            "metadata": json.loads(raw) if raw else None,
        }
        return record, m.get("nonce")

    def get_artifact(self, artifact_id: str) -> dict[str, Any] | None:
        found = self._artifact(artifact_id)
        return found[0] if found else None

    def artifacts_present(self, ids: list[str]) -> set[str]:
        if not ids:
            return set()
        got = self._get(ids=list(ids), include=["metadatas"])
        return {
            i
            for i, m in zip(got["ids"], got["metadatas"], strict=True)
            if m["record"] == "artifact"
        }
