"""The palace's shared machinery: settings, the drawer store, the catalogue, the write lock and
the embedder, each created on first use, plus the two write primitives every path goes through
(`_file_drawers` and `_remove_drawers`), so the lexical index can never fall out of step."""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

from mempalace_cli.catalog import VECTORS_META, Catalog, DrawerRow, FileRecord
from mempalace_cli.config import COLLECTION_NAME, Settings, resolve_settings
from mempalace_cli.embedder import MODEL_NAME, Embedder, get_embedder
from mempalace_cli.errors import IncompatiblePalaceError, NoPalaceError, PalaceCorruptError
from mempalace_cli.locking import PalaceLock
from mempalace_cli.service.models import (
    COLLECTION_META,
    MODEL_META,
    Binding,
    active_collection,
    binding_from_collection,
    default_model,
    dimension_of,
    drawer_collections,
)
from mempalace_cli.store import CHROMA_FILE, DrawerStore

# Metadata keys that live in their own catalogue columns.
_COLUMN_KEYS = ("wing", "room", "source_file", "chunk_index", "filed_at")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def row_from(drawer_id: str, text: str, meta: dict[str, Any]) -> DrawerRow:
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
    meta = dict(row.metadata)
    meta.update(wing=row.wing, room=row.room, source_file=row.source_file, filed_at=row.filed_at)
    if row.chunk_index is not None:
        meta["chunk_index"] = row.chunk_index
    return meta


# A catalogue meta key set while a drawer write is between Chroma and the catalogue: found set
# by a later process (the writer was killed), it means "rebuild the catalogue from Chroma".
WRITE_IN_PROGRESS = "write_in_progress"
CRASH_ENV = "MEMPALACE_TEST_CRASH_AT"
# The embedded store file's size and mtime when the catalogue was last known to mirror it
# (recorded under the lock after every write and sync). While the file still matches, a fresh
# process can trust the catalogue without importing chromadb to count drawers.
STORE_STAMP = "store_stamp"


_crash_hits: dict[str, int] = {}


def crashpoint(name: str) -> None:
    """Test hook: `MEMPALACE_TEST_CRASH_AT=name[:n]` kills this process with SIGKILL the n-th
    time (default the first) it passes here, so the crash-safety tests can stop a write at an
    exact point, as a power cut or `kill -9` would."""
    spec = os.environ.get(CRASH_ENV)
    if not spec or spec.split(":")[0] != name:
        return
    _crash_hits[name] = _crash_hits.get(name, 0) + 1
    if _crash_hits[name] == int(spec.partition(":")[2] or 1):
        os.kill(os.getpid(), signal.SIGKILL)


class PalaceCore:
    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or resolve_settings()
        self.path = self.settings.palace_path
        self._synced_generation: int | None = None
        self._binding: Binding | None = None

    # -- components, created lazily ---------------------------------------------------------
    @cached_property
    def store(self) -> DrawerStore:
        store = DrawerStore(self.path, self.settings.chroma_url)
        store.retry_guard = self.lock.hold
        store.binder = self._store_binding
        return store

    @cached_property
    def catalog(self) -> Catalog:
        return Catalog(self.path)

    @cached_property
    def lock(self) -> PalaceLock:
        return PalaceLock(self.path, self.settings.lock_timeout, on_acquire=self.refresh)

    @property
    def embedder(self) -> Embedder:
        """The palace's own model: every vector of this palace, queries included."""
        return get_embedder(self.binding().model, self.settings.embedding_model_dir)

    def embedder_for(self, model: str) -> Embedder:
        return get_embedder(model, self.settings.embedding_model_dir)

    # -- the palace's embedding model (service/models.py) ----------------------------------
    def binding(self) -> Binding:
        """The palace's model and drawer collection, resolved once (see `current_binding`)."""
        if self._binding is None:
            self._binding = self._resolve_binding()
        return self._binding

    def current_binding(self) -> Binding:
        """The binding, re-resolved if the palace changed since (a `reembed` in another
        process switches model and collection with a generation bump)."""
        binding = self._binding
        moved = binding is not None and self.catalog.exists
        if moved and self.catalog.generation() != binding.generation:
            fresh = self._resolve_binding()
            if (fresh.model, fresh.collection) != (binding.model, binding.collection):
                self.store.reset_handle()
            self._binding = fresh
        return self.binding()

    def _resolve_binding(self) -> Binding:
        generation = self.catalog.generation() if self.catalog.exists else -1
        local = not self.settings.chroma_url
        if local and self.catalog.exists:
            recorded = self.catalog.get_meta(MODEL_META)
            if recorded:
                name = self.catalog.get_meta(COLLECTION_META) or COLLECTION_NAME
                return Binding(recorded, name, "recorded", generation)
            if self.catalog.count():
                return Binding(MODEL_NAME, COLLECTION_NAME, "legacy", generation)
        if not local or self.store.has_local_data():
            found = active_collection(drawer_collections(self.store.client))
            if found is not None:
                b = binding_from_collection(*found)
                return Binding(b.model, b.collection, b.origin, generation)
        return Binding(default_model(self.settings), COLLECTION_NAME, "new", generation)

    def _store_binding(self) -> tuple[str, str, int]:
        b = self.binding()
        dim = dimension_of(b.model) or get_embedder(b.model).dimension
        return b.collection, b.model, dim

    def _record_binding(self, conn: Any) -> None:
        """Write the palace's model into the catalogue (with the first write, or after a
        server told us), so that it never depends on a default that may change."""
        b = self.binding()
        if b.origin == "recorded":
            return
        self.catalog.set_meta(conn, MODEL_META, b.model)
        self.catalog.set_meta(conn, COLLECTION_META, b.collection)
        if not self.settings.chroma_url:
            self._binding = Binding(b.model, b.collection, "recorded", b.generation)

    def close(self) -> None:
        if "catalog" in self.__dict__:
            self.catalog.close()

    # -- existence --------------------------------------------------------------------------
    def exists(self) -> bool:
        """A palace exists once `init` or a write created it, or when MemPalace made one here."""
        if self.catalog.exists or self.store.has_local_data():
            return True
        return bool(self.settings.chroma_url) and self.store.collection() is not None

    def require(self) -> None:
        if not self.exists():
            raise NoPalaceError(str(self.path))

    def create(self) -> bool:
        """Create the palace folder and its catalogue; True if it was new."""
        new = not self.exists()
        self.path.mkdir(parents=True, exist_ok=True)
        _ = self.catalog.conn
        if new:
            with self.catalog.transaction() as conn:
                self._record_binding(conn)
        return new

    # -- seeing other processes' writes -----------------------------------------------------
    def refresh(self) -> bool:
        """Reopen the embedded Chroma store if another process wrote since we last looked.

        Every write bumps the catalogue's generation. Embedded Chroma keeps its vector index in
        memory, so a long-lived process (the MCP server, watch mode) would neither find the
        drawers another process filed nor stop finding the ones it deleted, and writing from
        that stale index could persist it. Runs before every read (`sync`) and whenever the
        write lock is taken. A Chroma server needs none of this. True if it reopened.
        """
        if self.settings.chroma_url or not self.catalog.exists:
            return False
        if self._binding is not None:
            self.current_binding()  # a reembed elsewhere may have switched the collection
        generation = self.catalog.generation()
        stale = self.store.is_stale(generation)
        if stale:
            self.store.reset_handle()
        self.store.mark_fresh(generation)
        return stale

    def _wrote(self) -> None:
        """After our own write (under the lock): the handle and the catalogue are current."""
        generation = self.catalog.generation()
        self._synced_generation = generation
        if not self.settings.chroma_url:
            self.store.mark_fresh(generation)

    # -- keeping the catalogue in step with the store ---------------------------------------
    def _store_stamp(self) -> str | None:
        """Size and mtime_ns of the embedded store's files; None without a local store."""
        if self.settings.chroma_url:
            return None
        parts = []
        for name in (CHROMA_FILE, CHROMA_FILE + "-wal"):
            try:
                st = os.stat(self.path / name)
            except FileNotFoundError:
                if name == CHROMA_FILE:
                    return None
                continue
            parts.append(f"{st.st_size}:{st.st_mtime_ns}")
        return " ".join(parts)

    def _record_stamp(self, conn: Any) -> None:
        """Under the lock, with the catalogue in step with the store: remember the store file."""
        stamp = self._store_stamp()
        if stamp is not None:
            self.catalog.set_meta(conn, STORE_STAMP, stamp)

    def catalog_trusted(self) -> bool:
        """True when the catalogue, vectors included, is known to mirror the embedded store,
        checked without opening Chroma: no write half-done, every row has its vector, and the
        store file is exactly as it was after the last write or sync under the lock. A Chroma
        server is never trusted this way (its files are not ours to look at)."""
        if self.settings.chroma_url or not self.catalog.exists:
            return False
        stamp = self._store_stamp()  # before reading the marks: a write in between shows
        if stamp is None:
            return False
        marks = dict(
            self.catalog.conn.execute(
                "SELECT key, value FROM meta WHERE key IN (?, ?, ?)",
                (WRITE_IN_PROGRESS, VECTORS_META, STORE_STAMP),
            ).fetchall()
        )
        return (
            marks.get(WRITE_IN_PROGRESS) != "1"
            and marks.get(VECTORS_META) == "1"
            and marks.get(STORE_STAMP) == stamp
        )

    def needs_repair(self) -> bool:
        """A writer died mid-write (its in-progress mark is still set): `sync` must run."""
        return self.catalog.exists and self.catalog.get_meta(WRITE_IN_PROGRESS) == "1"

    def sync(self, restamp: bool = False) -> int:
        """Rebuild the catalogue from the store when a writer died half-way or their drawer
        counts differ (a palace MemPalace wrote, another machine on a Chroma server).

        Returns how many drawers were re-indexed (0 when already in step). Cheap when in step:
        one generation read, or one count on each side.
        """
        self.refresh()
        generation = self.catalog.generation()
        dirty = self.catalog.get_meta(WRITE_IN_PROGRESS) == "1"
        local = not self.settings.chroma_url
        if not dirty and self._synced_generation == generation and local:
            return 0
        self._check_store_present()
        if not dirty and self.store.count() == self.catalog.count():
            self._synced_generation = generation
            # Opening Chroma touches its file. A search (`restamp`) records it (and backfills
            # vectors) under the lock, so the next fresh process can search without Chroma;
            # other reads leave the catalogue alone.
            if not (local and restamp) or self.catalog_trusted():
                return 0
        with self.lock.hold():
            # A live writer sets the flag too; holding the lock, a set flag means a dead one.
            dirty = self.catalog.get_meta(WRITE_IN_PROGRESS) == "1"
            in_store, in_catalog = self.store.count(), self.catalog.count()
            if not dirty and in_store == in_catalog:
                with self.catalog.transaction() as conn:
                    if self.catalog.get_meta(VECTORS_META) != "1":
                        self._backfill_vectors(conn)
                    self._record_stamp(conn)
                self._wrote()
                return 0
            if in_store == 0 and in_catalog > 0 and not dirty:
                raise PalaceCorruptError(
                    f"The drawer store at {self.store.location} is empty, but the palace index "
                    f"lists {in_catalog} drawers. Nothing was changed.",
                    hint="Restore the palace folder (or the Chroma server's data) from a backup. "
                    f"If the drawers were deleted on purpose, move the index aside "
                    f"(mv {self.catalog.path} {self.catalog.path}.bad) and mine again.",
                )
            rows = 0
            with self.catalog.transaction() as conn:
                self.catalog.clear(conn)
                for page in self.store.iter_all(("metadatas", "documents", "embeddings")):
                    batch = [
                        row_from(i, d or "", dict(m or {}))
                        for i, d, m in zip(
                            page["ids"], page["documents"], page["metadatas"], strict=True
                        )
                    ]
                    self.catalog.upsert_drawers(conn, batch, page["embeddings"])
                    rows += len(batch)
                self.catalog.set_meta(conn, VECTORS_META, "1")
                self.catalog.set_meta(conn, WRITE_IN_PROGRESS, "0")
                self._record_stamp(conn)
                self.catalog.bump_generation(conn)
            self._wrote()
            return rows

    def _backfill_vectors(self, conn: Any) -> None:
        """Copy every drawer's vector from Chroma into a catalogue made before it mirrored
        them (caller holds the lock, catalogue and store in step)."""
        for page in self.store.iter_all(("embeddings",)):
            self.catalog.set_embeddings(conn, page["ids"], page["embeddings"])
        if not self.catalog.missing_vectors():
            self.catalog.set_meta(conn, VECTORS_META, "1")

    def _check_store_present(self) -> None:
        """The index lists drawers but the embedded store's files are gone: say so, instead of
        letting Chroma create an empty store that the next sync would mirror."""
        if self.settings.chroma_url or self.store.has_local_data():
            return
        listed = self.catalog.count()
        if listed:
            raise PalaceCorruptError(
                f"The palace at {self.path} has an index of {listed} drawers but no drawer store "
                f"(chroma.sqlite3 is missing). Nothing was changed.",
                hint="Restore the palace folder from a backup. To start over from your files, "
                f"move the index aside (mv {self.catalog.path} {self.catalog.path}.bad) and "
                "mine again.",
            )

    # -- the two write primitives (callers hold the lock around read-then-write) ----------
    def _file_drawers(
        self,
        rows: Sequence[DrawerRow],
        embeddings: Any,
        replace_ids: Sequence[str] = (),
        files: Sequence[FileRecord] = (),
        forget_files: Sequence[str] = (),
    ) -> None:
        """Store drawers in Chroma, then the catalogue; `replace_ids` are removed first, and
        `files` (the mining manifest; `forget_files` leave it) commit in the same catalogue
        transaction as their drawers.

        Chroma is written first, under a write-in-progress mark: a crash in between leaves the
        mark and an old manifest, so the next reader rebuilds the catalogue from Chroma and the
        next mine redoes the files; never a catalogue row or a manifest entry without drawers.
        """
        new_ids = {r.id for r in rows}
        stale = [i for i in dict.fromkeys(replace_ids) if i not in new_ids]
        with self.lock.hold():  # re-entrant: callers already hold it around read-then-write
            self._file_drawers_locked(rows, embeddings, stale, files, forget_files)

    def _file_drawers_locked(
        self,
        rows: Sequence[DrawerRow],
        embeddings: Any,
        stale: list[str],
        files: Sequence[FileRecord],
        forget_files: Sequence[str],
    ) -> None:
        self._check_vector_size(embeddings, len(rows))
        self._mark_writing()
        crashpoint("before_store_write")
        self.store.delete(stale)
        if rows:
            self.store.upsert(
                [r.id for r in rows],
                embeddings,
                [r.text for r in rows],
                [meta_from(r) for r in rows],
            )
        crashpoint("after_store_write")
        with self.catalog.transaction() as conn:
            self._record_binding(conn)
            self.catalog.delete_drawers(conn, stale)
            self.catalog.upsert_drawers(conn, rows, embeddings)
            stamp = now_iso()
            for source_file in forget_files:
                self.catalog.delete_file(conn, source_file)
            for rec in files:
                self.catalog.put_file(conn, rec, stamp)
            self.catalog.set_meta(conn, WRITE_IN_PROGRESS, "0")
            self._record_stamp(conn)
            self.catalog.bump_generation(conn)
        self._wrote()
        crashpoint("after_catalog_write")

    def _check_vector_size(self, embeddings: Any, n: int) -> None:
        """Refuse vectors of another model (embedded before a `reembed` elsewhere switched the
        palace while this process was working): they would corrupt the ranking silently."""
        expected = dimension_of(self.binding().model)
        got = len(embeddings[0]) if n else 0
        if n and expected and got != expected:
            raise IncompatiblePalaceError(
                f"The palace now embeds with {self.binding().model} ({expected}-d), but these "
                f"drawers were embedded with {got}-d vectors (the model changed while this "
                "command ran). Nothing was filed.",
                hint="Run the command again.",
            )

    def _remove_drawers(self, ids: Sequence[str], forget_files: Sequence[str] = ()) -> None:
        with self.lock.hold():
            self._mark_writing()
            self.store.delete(list(ids))
            crashpoint("after_store_delete")
            with self.catalog.transaction() as conn:
                self.catalog.delete_drawers(conn, list(ids))
                for source_file in forget_files:
                    self.catalog.delete_file(conn, source_file)
                self.catalog.set_meta(conn, WRITE_IN_PROGRESS, "0")
                self._record_stamp(conn)
                self.catalog.bump_generation(conn)
            self._wrote()

    def _mark_writing(self) -> None:
        with self.catalog.transaction() as conn:
            self.catalog.set_meta(conn, WRITE_IN_PROGRESS, "1")
            # Readers in other processes reopen Chroma from here on, even if we die mid-write.
            self.catalog.bump_generation(conn)
