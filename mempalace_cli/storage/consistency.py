"""One truth: Chroma holds the drawers; the catalogue is derived from it and proves it is in step.

Chroma (the drawer store, embedded in the palace folder or on a Chroma server) is the source of
truth for drawers. The catalogue (mempalace_index.sqlite3: keyword index, vector mirror, mining
manifest) is a copy that must show, by content and never by a count, that it mirrors Chroma:

- Embedded store (`EmbeddedConsistency`): Chroma logs every write in `embeddings_queue`
  (chroma.sqlite3, read through chroma_internals.py, which checks the installed chromadb and
  the file's layout first) under a sequence number that only grows. The catalogue records the
  collection id and the last sequence number it mirrors (`store_head`). Every command compares
  it with Chroma's log head, read with sqlite3 (no chromadb import; a few milliseconds). If the
  head moved and we did not write it, the ids written since are read from the log, fetched
  from Chroma and applied to the catalogue (only those ids); if the log no longer reaches back
  that far (Chroma purges it) the whole catalogue is reconciled against Chroma.
- Chroma server (`ServerConsistency`): its log is not ours to read. The catalogue records how
  many drawers it holds and the id at the end of Chroma's insertion order; one small `get`
  (offset n-1, limit 2, ids only) shows any add or delete, since Chroma appends new rows at
  the end. Our own writers
  re-file a changed drawer as delete + add, so it moves to the end too. A long-lived process
  re-checks at most every SERVER_CHECK_SECONDS before a read. An in-place update by a foreign
  writer (same id, same position) is not seen by this probe; `verify()` (`status --verify`)
  finds it.

A full reconcile reads the store by id, from one snapshot of every id (store.iter_all), never
page by offset: a delete by another writer while we read would shift the rows behind the
offset and we would drop drawers the store still holds. On a server, the probe is recorded
only if the catalogue holds the server's last drawer; otherwise (a write landed while we
read) nothing is recorded as in step and the next check compares again.

The first index of a palace (an empty catalogue that records no store state: a palace made by
another tool, a team palace on a new machine) is a note, not a repair.

Repair always runs from Chroma to the catalogue, under the palace lock, and is never silent:
what changed is returned, kept in `repairs` for the adapters to show, and recorded in the
catalogue (`last_repair`, shown by `status`).
"""

from __future__ import annotations

import json
import logging
import math
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mempalace_cli.common.errors import MemPalaceError, PalaceCorruptError
from mempalace_cli.common.lazy import lazy
from mempalace_cli.storage.catalog import VECTORS_META, Catalog, DrawerRow
from mempalace_cli.storage.chroma_internals import LogHead, log_ids_since, read_log_head
from mempalace_cli.storage.locking import PalaceLock
from mempalace_cli.storage.store import DrawerStore

np = lazy("numpy")

log = logging.getLogger("mempalace.consistency")
notices = logging.getLogger("mempalace.notice")  # one-time notes that are not repairs

# Catalogue meta keys.
WRITE_IN_PROGRESS = "write_in_progress"  # "1" while a write is between Chroma and the catalogue
STORE_HEAD = "store_head"  # the Chroma state the catalogue mirrors (see StoreHead)
LAST_REPAIR = "last_repair"  # JSON of the last repair, shown by status
SERVER_CHECK_SECONDS = 2.0  # staleness bound of a long-lived process on a Chroma server
# STORE_HEAD of a server palace whose catalogue could not be shown in step after a repair (a
# write landed while it read): never equal to a probe, so the next check compares again.
SERVER_UNSETTLED = "server:unsettled"
# Metadata keys that live in their own catalogue columns.
_COLUMN_KEYS = ("wing", "room", "source_file", "chunk_index", "filed_at")
_REPORTED_IDS = 20  # ids listed per kind in a repair record; the counts are always complete


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def row_from(drawer_id: str, text: str, meta: dict[str, Any]) -> DrawerRow:
    """A Chroma record as a catalogue row."""
    chunk = meta.get("chunk_index")
    return DrawerRow(
        id=drawer_id,
        wing=str(meta.get("wing") or ""),
        room=str(meta.get("room") or ""),
        source_file=str(meta.get("source_file") or ""),
        chunk_index=int(chunk) if isinstance(chunk, int | float) else None,
        filed_at=str(meta.get("filed_at") or ""),
        text=text,
        metadata={k: v for k, v in meta.items() if k not in _COLUMN_KEYS},
    )


def meta_from(row: DrawerRow) -> dict[str, Any]:
    """A catalogue row's metadata as Chroma stores it."""
    meta = dict(row.metadata)
    meta.update(wing=row.wing, room=row.room, source_file=row.source_file, filed_at=row.filed_at)
    if row.chunk_index is not None:
        meta["chunk_index"] = row.chunk_index
    return meta


# -- the repair report ------------------------------------------------------------------------
@dataclass
class Repair:
    """What a repair changed in the catalogue (always from Chroma to the catalogue)."""

    reason: str
    full: bool
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    files_to_remine: list[str] = field(default_factory=list)
    at: str = field(default_factory=now_iso)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "at": self.at,
            "reason": self.reason,
            "full": self.full,
            "added": len(self.added),
            "updated": len(self.updated),
            "removed": len(self.removed),
            "ids": {
                "added": self.added[:_REPORTED_IDS],
                "updated": self.updated[:_REPORTED_IDS],
                "removed": self.removed[:_REPORTED_IDS],
            },
            "files_to_remine": self.files_to_remine[:_REPORTED_IDS],
        }

    def summary(self) -> str:
        return (
            f"The palace index was out of step with the drawer store ({REASONS[self.reason]}) "
            f"and was repaired from it: {len(self.added)} drawers added, {len(self.updated)} "
            f"updated, {len(self.removed)} removed."
            + (
                f" {len(self.files_to_remine)} mined files lost drawers and will be re-read by "
                "the next mine."
                if self.files_to_remine
                else ""
            )
        )


REASONS = {
    "first_index": "the palace had not been indexed by mempalace-cli yet",
    "foreign_write": "another program wrote to the drawer store",
    "interrupted_write": "a write was interrupted",
    "unrecorded": "the index did not record which store state it mirrors",
    "new_collection": "the drawer collection was replaced",
    "log_purged": "another program wrote more than Chroma's log still holds",
    "server_changed": "the drawers on the Chroma server changed",
    "team_write": "another machine wrote to the palace on the Chroma server",
    "migrated": "mempalace migrate copied drawers into the store",
    "verify": "a full check (status --verify) found drawers the index had wrong",
}


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12)  # Chroma may print the last digit differently
    return a == b and type(a) is type(b)


def _same_row(a: DrawerRow, b: DrawerRow) -> bool:
    """The same drawer content: text, columns and every metadata value."""
    if (a.id, a.wing, a.room, a.source_file, a.chunk_index, a.filed_at, a.text) != (
        b.id,
        b.wing,
        b.room,
        b.source_file,
        b.chunk_index,
        b.filed_at,
        b.text,
    ):
        return False
    keys = set(a.metadata) | set(b.metadata)
    return all(
        k in a.metadata and k in b.metadata and _same_value(a.metadata[k], b.metadata[k])
        for k in keys
    )


def _same_vector(blob: bytes, vec: Any) -> bool:
    """Chroma hands back float32 vectors that may differ from what was written in the last
    bit (a round trip through float64): equal within 1e-6 is the same vector."""
    old = np.frombuffer(blob, dtype=np.float32)
    return old.shape == vec.shape and bool(np.allclose(old, vec, rtol=0, atol=1e-6))


# -- the one owner of Chroma <-> catalogue agreement ------------------------------------------
class Consistency:
    """Decides whether the catalogue mirrors Chroma, proves it cheaply, and repairs it.

    What is the same for both kinds of store lives here (applying Chroma's content to the
    catalogue, the repair report, the write-in-progress mark); how the agreement is proven is
    each kind's own: `EmbeddedConsistency` (Chroma's write log) and `ServerConsistency` (a tail
    probe and the team's change log). The backend (backend.py) picks one."""

    def __init__(
        self,
        palace_path: Path,
        catalog: Catalog,
        store: DrawerStore,
        lock: PalaceLock,
        collection_name: str,
        on_repair: Callable[[Repair], None] | None = None,
    ) -> None:
        self.path = palace_path
        self.catalog = catalog
        self.store = store
        self.lock = lock
        self.collection_name = collection_name
        self.on_repair = on_repair
        self.repairs: list[Repair] = []  # made by this process, for the adapters to show

    # -- proofs (each kind's own) -----------------------------------------------------------
    # `trusted()` can prove the catalogue in step from local marks alone (no store request).
    proves_from_marks = False

    def trusted(self) -> bool:
        """True when the catalogue, vectors included, provably mirrors the store without
        asking Chroma anything (never imports chromadb)."""
        return False

    def in_step(self) -> bool:
        """The cheap check that the catalogue mirrors the store."""
        raise NotImplementedError

    def _repair_locked(self, backfill: bool) -> Repair | None:
        raise NotImplementedError

    def _full_reconcile(self, reason: str) -> Repair:
        """Compare every drawer and record the store's state (caller holds the lock)."""
        raise NotImplementedError

    def mirrors_store_now(self) -> bool:
        """The catalogue is recorded as mirroring the store's current state (no write
        half-done): `reembed` keeps that record across its switch."""
        return False

    def record_head(self, conn: sqlite3.Connection, collection_name: str) -> None:
        """Record (in `conn`'s transaction) that the catalogue mirrors the store as it stands
        now in `collection_name` (after `reembed` moved the drawers to that collection)."""

    def begin_write(self) -> None:
        """Before Chroma is written (under the lock): a crash from here on leaves the mark, and
        the next reader repairs the catalogue from Chroma."""
        with self.catalog.transaction() as conn:
            self.catalog.set_meta(conn, WRITE_IN_PROGRESS, "1")
            # Readers in other processes reopen Chroma from here on, even if we die mid-write.
            self.catalog.bump_generation(conn)

    def end_write(self, conn: sqlite3.Connection, written: Iterable[str]) -> None:
        """In the catalogue transaction that mirrors our Chroma write of `written` ids."""
        self.catalog.set_meta(conn, WRITE_IN_PROGRESS, "0")

    def writing_from_step(self) -> bool:
        """True while our write is under way (the lock held) on a catalogue that mirrored the
        store when it began: until it commits, the catalogue as committed is a true, slightly
        older copy, which a reader of this process may read without waiting for the lock."""
        return False

    def record_new_store(self) -> None:
        """A palace created by us with an empty catalogue: it mirrors the (empty) store."""

    def check_store_present(self, read_head: bool = True) -> None:
        """The store is there and readable before anything trusts the catalogue."""

    # -- shared -----------------------------------------------------------------------------
    def _marks(self) -> dict[str, str]:
        return dict(
            self.catalog.conn.execute(
                "SELECT key, value FROM meta WHERE key IN (?, ?, ?)",
                (WRITE_IN_PROGRESS, VECTORS_META, STORE_HEAD),
            ).fetchall()
        )

    def needs_repair(self) -> bool:
        """A writer died mid-write (its in-progress mark is still set)."""
        return self.catalog.exists and self.catalog.get_meta(WRITE_IN_PROGRESS) == "1"

    def sync(self, backfill: bool = False) -> Repair | None:
        """Make the catalogue mirror Chroma before a read. Cheap when in step. With `backfill`
        (a search), a catalogue made before vectors were mirrored gets them from Chroma."""
        self.check_store_present(read_head=False)
        if self.in_step() and not (backfill and self.catalog.get_meta(VECTORS_META) != "1"):
            return None
        with self.lock.hold():
            return self._repair_locked(backfill)

    def reconcile(self, reason: str) -> Repair:
        """Compare every drawer with the catalogue and apply the differences, as an expected
        step (after `migrate` filled the store): not reported as a repair. Caller holds the
        palace lock."""
        return self._full_reconcile(reason)

    def verify(self) -> tuple[int, Repair | None]:
        """Compare every drawer in Chroma (text, metadata, vector) with the catalogue and repair
        what differs: the check no probe can replace (an in-place update by a foreign writer on
        a Chroma server keeps the id and the position). Returns how many drawers the store
        holds and the repair (None when everything matched)."""
        self.check_store_present(read_head=False)
        with self.lock.hold():
            self._reopen_store()
            repair = self._full_reconcile("verify")
            return self.catalog.count(), self._finish(repair)

    def _reopen_store(self) -> None:
        """Read the store afresh (not through this process's cached view)."""
        self.store.reset_handle()

    def _unrecorded(self, dirty: bool) -> str:
        """The reason when the catalogue records no store state: a first index when it is
        empty too (a palace another tool made, a team palace on a new machine, a catalogue
        moved aside), else a catalogue that lost its record."""
        return "first_index" if not dirty and self.catalog.count() == 0 else "unrecorded"

    def _first_index_note(self, repair: Repair) -> str:
        where = self.catalog.path.parent
        note = (
            f"Indexed {len(repair.added)} drawers of the palace at {self.store.location} for "
            "search and status (the first time mempalace-cli opened it)."
        )
        if where != self.path:
            note += (
                " The palace folder belongs to another tool: no files of ours were written "
                f"into it (our index is kept in {where})."
            )
        return note

    def _finish(self, repair: Repair) -> Repair | None:
        if not repair.changed:
            return None
        if repair.reason == "first_index":
            notices.warning("%s", self._first_index_note(repair))  # expected: not a repair
            return repair
        self.repairs.append(repair)
        log.warning("%s", repair.summary())  # never silent: the CLI prints it, servers log it
        if self.on_repair is not None:
            self.on_repair(repair)
        return repair

    # -- applying Chroma's content to the catalogue -----------------------------------------
    def _apply_ids(self, reason: str, ids: list[str], head_key: str | None) -> Repair:
        """Bring the rows of `ids` in step with Chroma (only those: read from its log)."""
        repair = Repair(reason, full=False)
        got: dict[str, Any] = {"ids": [], "documents": [], "metadatas": [], "embeddings": []}
        for start in range(0, len(ids), 500):
            page = self.store.get(
                ids[start : start + 500], ["documents", "metadatas", "embeddings"]
            )
            for key in got:
                got[key].extend(list(page[key]) if page[key] is not None else [])
        with self.catalog.transaction() as conn:
            self._apply_page(conn, got, repair)
            present = set(got["ids"])
            listed = self.catalog.get([i for i in ids if i not in present])
            gone = [i for i in ids if i in listed]
            self._remove(conn, gone, repair)
            self._settle(conn, head_key, repair)
        return repair

    def _reconcile_all(self, reason: str, head_key: str | None) -> Repair:
        """Compare every drawer in Chroma with the catalogue and apply the differences."""
        repair = Repair(reason, full=True)
        in_store = self.store.count()
        in_catalog = self.catalog.count()
        if in_store == 0 and in_catalog > 0 and reason not in ("interrupted_write",):
            raise PalaceCorruptError(
                f"The drawer store at {self.store.location} is empty, but the palace index "
                f"lists {in_catalog} drawers. Nothing was changed.",
                hint="Restore the palace folder (or the Chroma server's data) from a backup. "
                f"If the drawers were deleted on purpose, move the index aside "
                f"(mv {self.catalog.path} {self.catalog.path}.bad) and mine again.",
            )
        seen: set[str] = set()
        with self.catalog.transaction() as conn:
            for page in self.store.iter_all(("metadatas", "documents", "embeddings")):
                self._apply_page(conn, page, repair)
                seen.update(page["ids"])
            self._remove(conn, [i for i in self.catalog.all_ids() if i not in seen], repair)
            self._settle(conn, self._head_after_reconcile(head_key), repair)
        return repair

    def _head_after_reconcile(self, head_key: str | None) -> str | None:
        """The store state to record once a full reconcile applied everything."""
        return head_key

    def _unsettled_head(self) -> str | None:
        """What to record when no store state could be recorded (None: leave it)."""
        return None

    def _apply_page(self, conn: sqlite3.Connection, page: dict[str, Any], repair: Repair) -> None:
        ids = list(page["ids"])
        if not ids:
            return
        current = self.catalog.get(ids)
        blobs = self.catalog.embedding_blobs(ids)

        rows, vectors = [], []
        for i, doc, meta, emb in zip(
            ids, page["documents"], page["metadatas"], page["embeddings"], strict=True
        ):
            row = row_from(i, doc or "", dict(meta or {}))
            vec = np.asarray(emb, dtype=np.float32)
            old = current.get(i)
            if old is None:
                repair.added.append(i)
            elif not _same_row(old, row):
                repair.updated.append(i)
            elif blobs.get(i) is None:
                pass  # a missing vector is a backfill, not a change
            elif not _same_vector(blobs[i], vec):
                repair.updated.append(i)
            else:
                continue
            rows.append(row)
            vectors.append(vec)
        if rows:
            self.catalog.upsert_drawers(conn, rows, np.stack(vectors))

    def _remove(self, conn: sqlite3.Connection, ids: Sequence[str], repair: Repair) -> None:
        if not ids:
            return
        self.catalog.delete_drawers(conn, ids)
        repair.removed.extend(ids)

    def _settle(self, conn: sqlite3.Connection, head_key: str | None, repair: Repair) -> None:
        """After applying: files whose drawers are no longer all there are marked changed in
        the manifest (the next mine re-reads them, or removes them if they are gone), the head
        is recorded, other processes are told."""
        lost = set(repair.removed)
        if lost:
            for source_file, drawer_ids in conn.execute(
                "SELECT source_file, drawer_ids FROM files"
            ).fetchall():
                if lost.intersection(json.loads(drawer_ids)):
                    self.catalog.invalidate_file(conn, source_file)
                    repair.files_to_remine.append(source_file)
        if not self.catalog.missing_vectors():
            self.catalog.set_meta(conn, VECTORS_META, "1")
        self.catalog.set_meta(conn, WRITE_IN_PROGRESS, "0")
        head_key = head_key if head_key is not None else self._unsettled_head()
        if head_key is not None:
            self.catalog.set_meta(conn, STORE_HEAD, head_key)
        if repair.changed and repair.reason != "first_index":
            self.catalog.set_meta(conn, LAST_REPAIR, json.dumps(repair.to_dict()))
        self.catalog.bump_generation(conn)

    def _backfill_vectors(self, conn: sqlite3.Connection) -> None:
        """Copy every drawer's vector from Chroma into a catalogue made before it mirrored
        them (caller holds the lock, catalogue and store in step)."""
        for page in self.store.iter_all(("embeddings",)):
            self.catalog.set_embeddings(conn, page["ids"], page["embeddings"])
        if not self.catalog.missing_vectors():
            self.catalog.set_meta(conn, VECTORS_META, "1")

    # -- for status -------------------------------------------------------------------------
    def last_repair(self) -> dict[str, Any] | None:
        raw = self.catalog.get_meta(LAST_REPAIR) if self.catalog.exists else None
        return json.loads(raw) if raw else None

    def report(self) -> dict[str, Any]:
        """For status: what the catalogue mirrors and the last repair."""
        return {
            "authoritative": "chroma",
            "mirrors": self.catalog.get_meta(STORE_HEAD),
            "last_repair": self.last_repair(),
        }


class EmbeddedConsistency(Consistency):
    """The embedded store: Chroma's write log (chroma.sqlite3, read through
    chroma_internals.py) proves the catalogue in step, and names the ids a foreign write
    touched."""

    proves_from_marks = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._write_base: LogHead | None = None  # the log head when our write began

    def head(self) -> LogHead | None:
        return read_log_head(self.path, self.collection_name)

    def trusted(self) -> bool:
        """No write half-done, every row has its vector, and Chroma's log head is the one the
        catalogue recorded."""
        if not self.catalog.exists:
            return False
        head = self.head()  # before reading the marks: a write in between shows
        if head is None:
            return False
        marks = self._marks()
        return (
            marks.get(WRITE_IN_PROGRESS) != "1"
            and marks.get(VECTORS_META) == "1"
            and marks.get(STORE_HEAD) == head.key
        )

    def in_step(self) -> bool:
        """The log head (one sqlite read) is the one the catalogue recorded."""
        marks = self._marks()
        if marks.get(WRITE_IN_PROGRESS) == "1":
            return False
        head = self.head()
        if head is None:  # no store yet: in step while the catalogue is empty too
            return self.catalog.count() == 0
        return marks.get(STORE_HEAD) == head.key

    def mirrors_store_now(self) -> bool:
        head = self.head()
        return (
            head is not None
            and self.catalog.get_meta(WRITE_IN_PROGRESS) != "1"
            and self.catalog.get_meta(STORE_HEAD) == head.key
        )

    def record_head(self, conn: sqlite3.Connection, collection_name: str) -> None:
        head = read_log_head(self.path, collection_name)
        if head is not None:
            self.catalog.set_meta(conn, STORE_HEAD, head.key)

    def _repair_locked(self, backfill: bool) -> Repair | None:
        marks = self._marks()
        # A live writer sets the mark too; holding the lock, a set mark means a dead one.
        dirty = marks.get(WRITE_IN_PROGRESS) == "1"
        recorded = marks.get(STORE_HEAD)
        head = self.head()
        if head is None:
            self.check_store_present()
            return None
        if not dirty and recorded == head.key:
            if backfill and marks.get(VECTORS_META) != "1":
                with self.catalog.transaction() as conn:
                    self._backfill_vectors(conn)
            return None
        # Chroma changed without us: this process's in-memory index may predate it.
        self.store.reset_handle()
        ids = None
        reason = "interrupted_write" if dirty else "foreign_write"
        if recorded is None:
            reason = self._unrecorded(dirty)
        else:
            cid, _, seq = recorded.rpartition(":")
            if cid != (head.collection_id or "-"):
                reason = "new_collection"
            elif seq.isdigit():
                ids = log_ids_since(self.path, head, int(seq))
                if ids is None:
                    reason = "log_purged" if not dirty else reason
        repair = (
            self._apply_ids(reason, ids, head.key)
            if ids is not None
            else self._reconcile_all(reason, head.key)
        )
        return self._finish(repair)

    def _full_reconcile(self, reason: str) -> Repair:
        head = self.head()
        return self._reconcile_all(reason, head.key if head is not None else None)

    # -- our own writes ---------------------------------------------------------------------
    def writing_from_step(self) -> bool:
        return self._write_base is not None and self.lock.held

    def begin_write(self) -> None:
        recorded = self.catalog.get_meta(STORE_HEAD)
        base = self.head()
        # Our write can prove itself only if the catalogue mirrored the store when it began.
        self._write_base = base if base is not None and base.key == recorded else None
        super().begin_write()

    def end_write(self, conn: sqlite3.Connection, written: Iterable[str]) -> None:
        """Record the new head, but only if every log entry since the write began is ours.
        Otherwise (a foreign write slipped in) the old head stays and the next check
        repairs."""
        super().end_write(conn, written)
        recorded = self.catalog.get_meta(STORE_HEAD)
        base, self._write_base = self._write_base, None
        head = self.head()
        if head is None:
            return
        if base is None:
            # A brand-new store (no head recorded yet, or none before our first write).
            if recorded not in (None, "-:0") or self.catalog.count() != len(set(written)):
                return
            base = LogHead(head.collection_id, 0, 0)
        if base.collection_id not in (None, head.collection_id):
            return
        since = log_ids_since(self.path, head, base.seq)
        if since is None:
            # Chroma purged part of the log during our write (it does so as its vector index
            # persists); what is left must still be ours.
            since = log_ids_since(self.path, head, head.oldest - 1) or []
        if set(since) <= set(written):
            self.catalog.set_meta(conn, STORE_HEAD, head.key)

    def record_new_store(self) -> None:
        if self.catalog.get_meta(STORE_HEAD) is not None or self.catalog.count():
            return
        key = (self.head() or LogHead(None, 0, 0)).key
        with self.catalog.transaction() as conn:
            self.catalog.set_meta(conn, STORE_HEAD, key)

    # -- checks -----------------------------------------------------------------------------
    def check_store_present(self, read_head: bool = True) -> None:
        """The index lists drawers but the embedded store's files are gone or emptied: say so,
        instead of letting Chroma create an empty store that the next sync would mirror."""
        if not self.store.has_local_data():
            listed = self.catalog.count() if self.catalog.exists else 0
            if listed:
                raise PalaceCorruptError(
                    f"The palace at {self.path} has an index of {listed} drawers but no drawer "
                    f"store (chroma.sqlite3 is missing). Nothing was changed.",
                    hint="Restore the palace folder from a backup. To start over from your "
                    f"files, move the index aside (mv {self.catalog.path} "
                    f"{self.catalog.path}.bad) and mine again.",
                )
            return
        if read_head:
            self.head()  # an emptied or damaged chroma.sqlite3 raises here, before Chroma opens it


class ServerConsistency(Consistency):
    """A Chroma server: its log is not ours to read. A tail probe (count, last id) shows adds
    and deletes; the team's change log (team_log.py) names what teammates wrote."""

    def __init__(self, *args: Any, team_log: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._server_checked_at: float | None = None
        # The palace's change log on the server: writers of this tool record what they
        # touch, so a reader sees them at once and repairs only those drawers.
        self.team_log = team_log

    def head(self) -> LogHead | None:
        return None

    def in_step(self) -> bool:
        """The tail probe (one small request), skipped within SERVER_CHECK_SECONDS of the last
        one; at once out of step when a teammate's write changed the change token."""
        marks = self._marks()
        if marks.get(WRITE_IN_PROGRESS) == "1":
            return False
        if self.team_log is not None and not self.team_log.token_current():
            return False  # another machine of the team wrote: no need to wait for the probe
        now = time.monotonic()
        if (
            self._server_checked_at is not None
            and now - self._server_checked_at < SERVER_CHECK_SECONDS
        ):
            return True
        recorded = marks.get(STORE_HEAD)
        if recorded is None:
            return False
        try:
            ok = recorded == self._server_probe(self.catalog.count())
        except MemPalaceError:
            raise
        except Exception:  # the collection was replaced under a cached handle: reconcile
            return False
        if ok:
            self._server_checked_at = now
        return ok

    def _server_probe(self, n: int) -> str | None:
        """The server's state as the catalogue would record it if it holds `n` drawers:
        "server:n:<id at position n-1>"; None if the server holds more or fewer."""
        ids = self.store.ids_at(max(n - 1, 0), 2)
        if n == 0:
            return "server:0:" if not ids else None
        return f"server:{n}:{ids[0]}" if len(ids) == 1 else None

    def _server_head(self) -> str | None:
        """The probe to record once the catalogue was brought in step: None (record nothing,
        so the next check compares again) unless the server holds as many drawers as the
        catalogue and its last drawer is in the catalogue. A write that landed while we read
        (after the id snapshot) shows here, even one that left the count unchanged."""
        probe = self._server_probe(self.catalog.count())
        if probe is None:
            return None
        tail = probe.split(":", 2)[2]
        return probe if not tail or self.catalog.get([tail]) else None

    def _head_after_reconcile(self, head_key: str | None) -> str | None:
        return self._server_head()

    def _unsettled_head(self) -> str | None:
        return SERVER_UNSETTLED

    def _repair_locked(self, backfill: bool) -> Repair | None:
        marks = self._marks()
        # A live writer sets the mark too; holding the lock, a set mark means a dead one.
        dirty = marks.get(WRITE_IN_PROGRESS) == "1"
        recorded = marks.get(STORE_HEAD)
        self.store.reset_collection()
        n = self.catalog.count()
        probe = self._server_probe(n)
        if not dirty and recorded is not None and recorded == probe:
            self._server_checked_at = time.monotonic()
            return None
        team = self.team_log
        if team is not None and not dirty and recorded is not None:
            caught_up = team.catch_up(self)
            if caught_up is not None:
                self._server_checked_at = time.monotonic()
                # A teammate's write is the palace working as meant: applied, not warned about.
                return caught_up if caught_up.changed else None
        reason = "server_changed"
        if dirty or recorded is None:
            reason = "interrupted_write" if dirty else self._unrecorded(dirty)
        return self._finish(self._full_reconcile(reason))

    def _full_reconcile(self, reason: str) -> Repair:
        team = self.team_log
        began = team.begin_full() if team is not None else None
        repair = self._reconcile_all(reason, None)
        if team is not None:
            team.end_full(began)
        self._server_checked_at = time.monotonic()
        return repair

    def _reopen_store(self) -> None:
        self.store.reset_collection()

    def apply_team_ids(self, ids: list[str]) -> Repair | None:
        """Bring `ids` in step (another machine's write, named by the team log); the result
        when the server's probe then matches the catalogue, else None (reconcile instead)."""
        repair = self._apply_ids("team_write", ids, None)
        # Same count and our last row is the server's last: nobody else wrote meanwhile.
        probe = self._server_head()
        if probe is None:
            return None
        with self.catalog.transaction() as conn:
            self.catalog.set_meta(conn, STORE_HEAD, probe)
        return repair

    # -- our own writes ---------------------------------------------------------------------
    def end_write(self, conn: sqlite3.Connection, written: Iterable[str]) -> None:
        """Record the probe after our write, when the catalogue recorded one before it."""
        super().end_write(conn, written)
        recorded = self.catalog.get_meta(STORE_HEAD)
        probe = self._server_probe(self.catalog.count())
        if probe is not None and recorded not in (None, SERVER_UNSETTLED):
            self.catalog.set_meta(conn, STORE_HEAD, probe)
            self._server_checked_at = time.monotonic()
