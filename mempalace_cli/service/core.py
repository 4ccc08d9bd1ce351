"""The palace's shared machinery: settings, the drawer store, the catalogue, the write lock and
the embedder, each created on first use, plus the two write primitives every path goes through
(`_file_drawers` and `_remove_drawers`), so the lexical index can never fall out of step."""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from mempalace_cli.common.config import COLLECTION_NAME, Settings, resolve_settings
from mempalace_cli.common.errors import IncompatiblePalaceError, NoPalaceError
from mempalace_cli.embedders.base import MODEL_NAME, Embedder, get_embedder
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
from mempalace_cli.service.server_mirror import TeamLog
from mempalace_cli.storage.catalog import VECTORS_META, Catalog, DrawerRow, FileRecord
from mempalace_cli.storage.chroma_server import ServerOptions
from mempalace_cli.storage.consistency import (
    WRITE_IN_PROGRESS,
    Consistency,
    meta_from,
    now_iso,
    row_from,
)
from mempalace_cli.storage.drawer_rules import prepare_rows
from mempalace_cli.storage.locking import PalaceLock
from mempalace_cli.storage.palace_owner import index_dir
from mempalace_cli.storage.store import DrawerStore

__all__ = ["WRITE_IN_PROGRESS", "PalaceCore", "crashpoint", "meta_from", "now_iso", "row_from"]


CRASH_ENV = "MEMPALACE_TEST_CRASH_AT"


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
        self._binding: Binding | None = None

    # -- components, created lazily ---------------------------------------------------------
    @cached_property
    def store(self) -> DrawerStore:
        store = DrawerStore(self.path, server=ServerOptions.from_settings(self.settings))
        store.retry_guard = self.lock.hold
        store.binder = self._store_binding
        return store

    @cached_property
    def team_log(self) -> TeamLog:
        """A server palace's change log: teammates' writes seen at once, repaired by id."""
        return TeamLog(self)

    @cached_property
    def index_dir(self) -> Path:
        """Where our own files for this palace live (catalogue, vector index, write lock): its
        folder, or a folder in the cache when another tool (MemPalace) owns the palace folder,
        so that using its palace never writes into it (see palace_owner.py)."""
        return index_dir(self.path, self.settings.home, bool(self.settings.chroma_url))

    @cached_property
    def catalog(self) -> Catalog:
        return Catalog(self.index_dir)

    @cached_property
    def lock(self) -> PalaceLock:
        return PalaceLock(self.index_dir, self.settings.lock_timeout, on_acquire=self.refresh)

    @cached_property
    def consistency(self) -> Consistency:
        """The one owner of Chroma <-> catalogue agreement (see consistency.py)."""
        consistency = Consistency(
            self.path,
            self.catalog,
            self.store,
            self.lock,
            server=bool(self.settings.chroma_url),
            collection_name=self.binding().collection,
        )
        if self.settings.chroma_url:
            consistency.team_log = self.team_log
        return consistency

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
                self.__dict__.pop("consistency", None)  # it reads the old collection's log
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
                # No record, yet drawers: a catalogue from before model records (MiniLM), or
                # one rebuilt from Chroma, whose collection records the model it holds.
                found = self._recorded_collection()
                if found is not None and found.model != MODEL_NAME:
                    return Binding(found.model, found.collection, found.origin, generation)
                return Binding(MODEL_NAME, COLLECTION_NAME, "legacy", generation)
        if not local or self.store.has_local_data():
            found = active_collection(drawer_collections(self.store.client))
            if found is not None:
                b = binding_from_collection(*found)
                return Binding(b.model, b.collection, b.origin, generation)
        return Binding(default_model(self.settings), COLLECTION_NAME, "new", generation)

    def _recorded_collection(self) -> Binding | None:
        """The embedded store's active drawer collection, when it records its model."""
        if not self.store.has_local_data():
            return None
        found = active_collection(drawer_collections(self.store.client))
        if found is None or not found[1].get(MODEL_META):
            return None
        return binding_from_collection(*found)

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
            self.consistency.record_new_store()
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
        if self.settings.chroma_url:
            self.team_log.after_own_write()
        else:
            self.store.mark_fresh(generation)

    # -- keeping the catalogue in step with the store (consistency.py owns the rules) -------
    # The other palace object of this process that writes (the MCP server's write lane), if
    # any: while it writes from a catalogue in step, reads here need not wait for its lock.
    sibling_writer: PalaceCore | None = None

    def _sibling_writing(self) -> bool:
        other = self.sibling_writer
        consistency = None if other is None else other.__dict__.get("consistency")
        return consistency is not None and consistency.writing_from_step()

    def catalog_trusted(self) -> bool:
        """The catalogue provably mirrors the embedded store (no chromadb import), or is a
        true copy of it as it was before a write this process is making."""
        return self.consistency.trusted() or (
            self._sibling_writing() and self.catalog.get_meta(VECTORS_META) == "1"
        )

    def needs_repair(self) -> bool:
        return self.consistency.needs_repair()

    def sync(self, restamp: bool = False) -> int:
        """Repair the catalogue from Chroma if it is out of step (see consistency.py); with
        `restamp` (a search) also backfill vectors into an old catalogue. Returns how many
        drawers the repair changed (0 when already in step)."""
        if self._sibling_writing() and not restamp:
            return 0  # the catalogue as committed is true; the write ends in step
        self.refresh()
        repair = self.consistency.sync(backfill=restamp)
        if repair is None:
            return 0
        self.store.mark_fresh(self.catalog.generation())
        return len(repair.added) + len(repair.updated) + len(repair.removed)

    def _check_store_present(self) -> None:
        """A missing, emptied or damaged drawer store is reported before anything trusts the
        manifest (a file check and one sqlite read)."""
        self.consistency.check_store_present()

    # -- the two write primitives (callers hold the lock around read-then-write) ----------
    def _file_drawers(
        self,
        rows: Sequence[DrawerRow],
        embeddings: Any,
        replace_ids: Sequence[str] = (),
        files: Sequence[FileRecord] = (),
        forget_files: Sequence[str] = (),
        keep_secrets: bool = False,
    ) -> None:
        """Store drawers in Chroma, then the catalogue; `replace_ids` are removed first, and
        `files` (the mining manifest; `forget_files` leave it) commit in the same catalogue
        transaction as their drawers.

        Chroma is written first, under a write-in-progress mark: a crash in between leaves the
        mark and an old manifest, so the next reader rebuilds the catalogue from Chroma and the
        next mine redoes the files; never a catalogue row or a manifest entry without drawers.
        Every row is checked before the mark is set: a value Chroma would refuse is an
        InvalidInputError with nothing written, never a half-done write.

        Secrets never enter the palace through a drawer's other fields either: every text
        value of its metadata (topic, speakers, added_by...) and its source are redacted here
        (the text was redacted before it was embedded), unless the mining run was started
        with --keep-secrets.
        """
        rows = prepare_rows(rows)
        if not keep_secrets:
            rows = _redact_fields(rows)
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
        self.consistency.begin_write()
        crashpoint("before_store_write")
        if self.settings.chroma_url:
            # On a server a rewritten drawer is filed as delete + add, so it moves to the end
            # of Chroma's order, where other machines' consistency probe sees it.
            listed = self.catalog.get([r.id for r in rows])
            stale = stale + [r.id for r in rows if r.id in listed]
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
            self.consistency.end_write(conn, [*stale, *(r.id for r in rows)])
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
            self.consistency.begin_write()
            self.store.delete(list(ids))
            crashpoint("after_store_delete")
            with self.catalog.transaction() as conn:
                self.catalog.delete_drawers(conn, list(ids))
                for source_file in forget_files:
                    self.catalog.delete_file(conn, source_file)
                self.consistency.end_write(conn, ids)
                self.catalog.bump_generation(conn)
            self._wrote()


def _redact_fields(rows: Sequence[DrawerRow]) -> list[DrawerRow]:
    """`rows` with each secret value in their metadata text and source replaced by
    `[REDACTED:kind]` (miners/secrets.py; its prefilter makes a value with no trigger literal
    cost one regex pass)."""
    from dataclasses import replace

    from mempalace_cli.miners.secrets import redact

    def clean(value: Any) -> Any:
        return redact(value).text if isinstance(value, str) and value else value

    out: list[DrawerRow] = []
    for row in rows:
        metadata = {k: clean(v) for k, v in row.metadata.items()}
        source_file = clean(row.source_file)
        if metadata != row.metadata or source_file != row.source_file:
            row = replace(row, metadata=metadata, source_file=source_file)
        out.append(row)
    return out
