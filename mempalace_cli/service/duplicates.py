"""Groups of drawers that say the same thing, word for word (the duplicate rule of
search/sameness.py: the same words in the same order, case, punctuation, spacing and leading
zeros aside), for a person to keep one and forget the rest.

A long-lived process (`mempalace ui`) keeps one digest per drawer in memory (about 100 bytes a
drawer) and stays true by content, as the keyword postings do (storage/term_postings.py): the
catalogue's change log (`vector_log`, every inserted or deleted drawer's rowid, whoever wrote
it) names the rows to read again; when the log no longer reaches back, or names another
catalogue, or does not exist yet, every drawer is read again. Reading a large palace (over
SYNC_ROWS drawers) happens on a thread of its own, so a page asking for the groups answers at
once with the progress, never waits for the whole read.
"""

from __future__ import annotations

import hashlib
import threading
from typing import TYPE_CHECKING, Any

from mempalace_cli.search.sameness import words
from mempalace_cli.service.core import PalaceCore, Part
from mempalace_cli.service.results import Drawer, DuplicateDrawer, DuplicateGroupsResult
from mempalace_cli.storage.catalog import VECTOR_LOG_TOKEN
from mempalace_cli.storage.sqlite_db import connect_read_only

if TYPE_CHECKING:
    import sqlite3

    from mempalace_cli.service.curation import DrawerCuration

SYNC_ROWS = 1_000  # up to this many drawers, a full read happens in the asking call
BATCH = 2_000
MAX_PAGE = 100


def _digest(text: str) -> bytes:
    return hashlib.blake2b("\x1f".join(words(text)).encode("utf-8"), digest_size=12).digest()


class DuplicateGroups(Part):
    """The near-duplicate groups of one palace, kept up to date across writes; the drawers
    shown come from the `DrawerCuration` part it is given."""

    def __init__(
        self, core: PalaceCore, curation: DrawerCuration, sync_rows: int = SYNC_ROWS
    ) -> None:
        super().__init__(core)
        self.curation = curation
        self.sync_rows = sync_rows
        self._rows: dict[int, tuple[bytes, str]] = {}  # rowid -> (digest, drawer id)
        self._by_digest: dict[bytes, set[int]] = {}  # digest -> rowids saying those words
        self._multi: set[bytes] = set()  # the digests of two rowids or more: the groups
        self._generation: int | None = None  # the catalogue generation the digests are of
        self._position: tuple[str, int] | None = None  # (log token, last seq) read up to
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._progress = (0, 0)  # rows read, rows to read (a full read on its thread)
        self.error: str | None = None

    # -- the answer -------------------------------------------------------------------------
    def groups(self, offset: int = 0, limit: int = 20) -> DuplicateGroupsResult:
        """A page of groups (largest first), each the drawers saying the same words; `ready`
        is False while a large palace is still being read (with `read` and `to_read`)."""
        if not offset >= 0 or not 1 <= limit <= MAX_PAGE:
            raise ValueError("offset >= 0 and 1 <= limit <= 100")
        self.require()
        catalog_path = self.catalog.path
        ready = self._bring_up_to_date(catalog_path)
        if not ready:
            read, to_read = self._progress
            return {"ready": False, "read": read, "to_read": to_read, "error": self.error}
        with self._lock:
            found = sorted(
                (sorted((r, self._rows[r][1]) for r in self._by_digest[d]) for d in self._multi),
                key=lambda g: (-len(g), g[0][0]),
            )
            drawers = len(self._rows)
        page = found[offset : offset + limit]
        ids = [drawer_id for group in page for _rowid, drawer_id in group]
        rows = {d["drawer_id"]: d for d in self.curation.get_drawers(ids)["drawers"]} if ids else {}
        return {
            "ready": True,
            "groups": [[_drawer(rows[i]) for _r, i in group if i in rows] for group in page],
            "total": len(found),
            "duplicates": sum(len(g) - 1 for g in found),
            "drawers": drawers,
            "offset": offset,
            "limit": limit,
        }

    # -- staying true -----------------------------------------------------------------------
    def _bring_up_to_date(self, catalog_path: Any) -> bool:
        if self._thread is not None and self._thread.is_alive():
            return False
        if not catalog_path.exists():
            with self._lock:
                self._rows, self._by_digest, self._multi = {}, {}, set()
            return True
        conn = connect_read_only(catalog_path)
        try:
            generation = _generation(conn)
            if generation == self._generation:
                return True
            position = _log_position(conn)
            if self._follow(conn, position):
                self._generation = generation
                return True
            total = conn.execute("SELECT COUNT(*) FROM drawers").fetchone()[0]
        finally:
            conn.close()
        if total <= self.sync_rows:
            self._read_all(catalog_path)
            return True
        self._progress = (0, total)
        self._thread = threading.Thread(
            target=self._read_all, args=(catalog_path,), name="mempalace-duplicates", daemon=True
        )
        self._thread.start()
        return False

    def _follow(self, conn: sqlite3.Connection, position: tuple[str, int] | None) -> bool:
        """Re-read only the rows the change log names since the last read; False when that
        can't be trusted (no log, another catalogue, the log trimmed past our position)."""
        old = self._position
        if old is None or position is None or old[0] != position[0] or position[1] < old[1]:
            return False
        first = conn.execute("SELECT MIN(seq) FROM vector_log").fetchone()[0]
        if (first is None and position[1] > old[1]) or (first is not None and first > old[1] + 1):
            return False
        changed = sorted(
            {
                r
                for (r,) in conn.execute(
                    "SELECT row FROM vector_log WHERE seq > ? AND seq <= ?", (old[1], position[1])
                )
            }
        )
        fresh: dict[int, tuple[bytes, str]] = {}
        for start in range(0, len(changed), 500):
            part = changed[start : start + 500]
            marks = ",".join("?" * len(part))
            for rowid, drawer_id, text in conn.execute(
                f"SELECT rowid, id, text FROM drawers WHERE rowid IN ({marks})", part
            ):
                fresh[rowid] = (_digest(text), drawer_id)
        with self._lock:
            for rowid in changed:
                self._drop(rowid)
            for rowid, entry in fresh.items():
                self._add(rowid, entry)
            self._position = position
        return True

    def _add(self, rowid: int, entry: tuple[bytes, str]) -> None:
        self._rows[rowid] = entry
        same = self._by_digest.setdefault(entry[0], set())
        same.add(rowid)
        if len(same) > 1:
            self._multi.add(entry[0])

    def _drop(self, rowid: int) -> None:
        entry = self._rows.pop(rowid, None)
        if entry is None:
            return
        same = self._by_digest.get(entry[0], set())
        same.discard(rowid)
        if len(same) < 2:
            self._multi.discard(entry[0])
        if not same:
            self._by_digest.pop(entry[0], None)

    def _read_all(self, catalog_path: Any) -> None:
        """Every drawer's digest, read in one snapshot of the catalogue."""
        try:
            conn = connect_read_only(catalog_path)
            try:
                conn.execute("BEGIN")
                generation = _generation(conn)
                position = _log_position(conn)
                total = conn.execute("SELECT COUNT(*) FROM drawers").fetchone()[0]
                rows: dict[int, tuple[bytes, str]] = {}
                cursor = conn.execute("SELECT rowid, id, text FROM drawers")
                while batch := cursor.fetchmany(BATCH):
                    for rowid, drawer_id, text in batch:
                        rows[rowid] = (_digest(text), drawer_id)
                    self._progress = (len(rows), total)
                conn.execute("COMMIT")
            finally:
                conn.close()
            with self._lock:
                self._rows, self._by_digest, self._multi = {}, {}, set()
                for rowid, entry in rows.items():
                    self._add(rowid, entry)
                self._position = position
            self._generation = generation
            self.error = None
        except Exception as exc:  # shown on the page; the next visit tries again
            self.error = f"{type(exc).__name__}: {exc}"
            self._generation = None


def _generation(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
    return int(row[0]) if row else 0


def _log_position(conn: sqlite3.Connection) -> tuple[str, int] | None:
    """(catalogue token, last change-log sequence number), None before the log exists (the
    same reading as Catalog.log_position, on this connection)."""
    try:
        token = conn.execute("SELECT value FROM meta WHERE key = ?", (VECTOR_LOG_TOKEN,)).fetchone()
        conn.execute("SELECT 1 FROM vector_log LIMIT 1")
        last = conn.execute(
            "SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'vector_log'), 0)"
        ).fetchone()
    except sqlite3.OperationalError:
        return None
    return (token[0], int(last[0])) if token else None


def _drawer(d: Drawer) -> DuplicateDrawer:
    text = " ".join(d["text"].split())
    return {
        "drawer_id": d["drawer_id"],
        "wing": d["wing"],
        "room": d["room"],
        "source_file": d["source_file"],
        "filed_at": d["filed_at"],
        "preview": text if len(text) <= 240 else text[:239] + "…",
    }


__all__ = ["DuplicateGroups"]
