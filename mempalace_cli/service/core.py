"""The palace's shared resources: settings, the drawer store, the catalogue, the write lock and
the embedder, each created on first use, with the palace's embedding model (its binding) and
the checks every verb starts with (exists, require, sync). `PalaceCore` is what the `Palace`
facade hands its parts; `Part` is the base of a part, which reads those resources through it.
The two write primitives live in service/writer.py (`DrawerWriter`)."""

from __future__ import annotations

import logging
import os
import signal
import sqlite3
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any, Generic, TypeVar, overload

from mempalace_cli.common.config import COLLECTION_NAME, Settings, resolve_settings
from mempalace_cli.common.errors import NoPalaceError
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
from mempalace_cli.storage.backend import PalaceBackend, open_backend
from mempalace_cli.storage.catalog import VECTORS_META, Catalog
from mempalace_cli.storage.chroma_internals import CHROMA_FILE
from mempalace_cli.storage.chroma_internals import release as release_store_reads
from mempalace_cli.storage.consistency import (
    WRITE_IN_PROGRESS,
    Consistency,
    meta_from,
    now_iso,
    row_from,
)
from mempalace_cli.storage.locking import PalaceLock
from mempalace_cli.storage.store import DrawerStore
from mempalace_cli.storage.vector_index import VectorIndex

__all__ = [
    "WRITE_IN_PROGRESS",
    "PalaceCore",
    "Part",
    "Via",
    "crashpoint",
    "meta_from",
    "now_iso",
    "row_from",
]


T = TypeVar("T")

CRASH_ENV = "MEMPALACE_TEST_CRASH_AT"
log = logging.getLogger("mempalace.core")


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
    """One palace's shared resources, each made on first use (chromadb is imported only when
    the drawer store is opened). `embedder_source`, when given, is asked for the embedder
    instead of the palace's model (the facade passes its own `embedder`, which a subclass may
    override: the benchmarks' stand-ins, the MCP write lane's own model instances)."""

    def __init__(
        self,
        settings: Settings | None = None,
        embedder_source: Callable[[], Embedder] | None = None,
    ) -> None:
        self.settings = settings or resolve_settings()
        self.path = self.settings.palace_path
        self._binding: Binding | None = None
        self.embedder_source = embedder_source

    # -- components, created lazily ---------------------------------------------------------
    @cached_property
    def backend(self) -> PalaceBackend:
        """The palace's kind of storage, in its folder or on a Chroma server: every difference
        between the two lives there (storage/backend.py); nothing here asks which it is."""
        return open_backend(
            self.settings, binder=self._store_binding, retry_guard=lambda: self.lock.hold()
        )

    @property
    def store(self) -> DrawerStore:
        return self.backend.store

    @cached_property
    def index_dir(self) -> Path:
        """Where our own files for this palace live (catalogue, vector index, write lock): its
        folder, or a folder in the cache when another tool (MemPalace) owns the palace folder,
        so that using its palace never writes into it (see palace_owner.py)."""
        return self.backend.index_dir

    @cached_property
    def catalog(self) -> Catalog:
        return Catalog(self.index_dir)

    @cached_property
    def lock(self) -> PalaceLock:
        return PalaceLock(self.index_dir, self.settings.lock_timeout, on_acquire=self.refresh)

    @cached_property
    def consistency(self) -> Consistency:
        """The one owner of Chroma <-> catalogue agreement (see consistency.py)."""
        return self.backend.consistency(self.catalog, self.lock, self.binding().collection)

    @property
    def embedder(self) -> Embedder:
        """What embeds every vector of this palace, queries included."""
        if self.embedder_source is not None:
            return self.embedder_source()
        return self.model_embedder()

    def model_embedder(self) -> Embedder:
        """The palace's own model (this process's shared instance)."""
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
        if self.backend.model_recorded_in_catalog and self.catalog.exists:
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
        if self.backend.may_hold_collections():
            found = active_collection(drawer_collections(self.store.client))
            if found is not None:
                b = binding_from_collection(*found)
                return Binding(b.model, b.collection, b.origin, generation)
        return Binding(default_model(self.settings), COLLECTION_NAME, "new", generation)

    def _recorded_collection(self) -> Binding | None:
        """The store's active drawer collection, when it records its model."""
        if not self.backend.may_hold_collections():
            return None
        found = active_collection(drawer_collections(self.store.client))
        if found is None or not found[1].get(MODEL_META):
            return None
        return binding_from_collection(*found)

    def _store_binding(self) -> tuple[str, str, int]:
        b = self.binding()
        dim = dimension_of(b.model) or get_embedder(b.model).dimension
        return b.collection, b.model, dim

    def record_binding(self, conn: Any) -> None:
        """Write the palace's model into the catalogue (with the first write, or after a
        server told us), so that it never depends on a default that may change."""
        b = self.binding()
        if b.origin == "recorded":
            return
        self.catalog.set_meta(conn, MODEL_META, b.model)
        self.catalog.set_meta(conn, COLLECTION_META, b.collection)
        if self.backend.model_recorded_in_catalog:
            self._binding = Binding(b.model, b.collection, "recorded", b.generation)

    def rebind(self) -> None:
        """Forget the resolved model and collection (a `reembed` just switched them): the
        next use resolves them again, and consistency reads the new collection's log."""
        self._binding = None
        self.__dict__.pop("consistency", None)

    def adopt_binding(self, binding: Binding) -> None:
        """Take `binding` as the palace's model and collection (a `migrate` target with
        nothing filed takes its source's)."""
        self._binding = binding

    def close(self) -> None:
        if "catalog" in self.__dict__:
            self.catalog.close()
        release_store_reads(self.path / CHROMA_FILE)  # this thread's kept read connection

    # -- existence --------------------------------------------------------------------------
    def exists(self) -> bool:
        """A palace exists once `init` or a write created it, or when MemPalace made one here."""
        return self.catalog.exists or self.backend.store_exists()

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
                self.record_binding(conn)
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
        if not self.catalog.exists:
            return False
        return self.backend.refresh(self.catalog.generation, self._rebind_if_switched)

    def _rebind_if_switched(self) -> None:
        if self._binding is not None:
            self.current_binding()  # a reembed elsewhere may have switched the collection

    def wrote(self) -> None:
        """After our own write (under the lock): the handle and the catalogue are current, and
        so is the vector index (searches never update it: they only read)."""
        self.backend.after_own_write(self.catalog)
        self.keep_vector_index()

    def keep_vector_index(self) -> None:
        """Bring the on-disk vector index (storage/vector_index.py) up to the catalogue's last
        change: after every write of ours and every repair, so that the search that follows
        reads it as it is. Only where searches rank from it (a catalogue provably in step);
        an index that can't be written (read-only storage) is left to searches' exact path."""
        if not self.consistency.proves_from_marks or not self.catalog.exists:
            return
        try:
            VectorIndex(self.index_dir, self.catalog.conn).current()
        except (OSError, sqlite3.Error) as exc:
            log.debug("vector index not updated: %s", exc)

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
        self.keep_vector_index()  # the repair changed rows: the index follows (its own lock)
        return len(repair.added) + len(repair.updated) + len(repair.removed)

    def check_store_present(self) -> None:
        """A missing, emptied or damaged drawer store is reported before anything trusts the
        manifest (a file check and one sqlite read)."""
        self.consistency.check_store_present()

    def known_places(self) -> dict[str, list[str]]:
        """wing -> its rooms, from the catalogue (for name resolution and hints)."""
        places: dict[str, list[str]] = {}
        for wing, room, _n in self.catalog.counts_by_wing_room():
            places.setdefault(wing, []).append(room)
        return places


class Via(Generic[T]):
    """An attribute its owner reads from an object it holds, under the same name: on a part,
    `Via("core")` is `part.core.<name>`; on the facade, `Via("drawers")` is the drawers part's
    verb of that name, its signature and docstring with it. An instance may still set its own
    (a test injecting a fault)."""

    def __init__(self, holder: str) -> None:
        self.holder = holder
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Via[T]: ...

    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...

    def __get__(self, obj: object | None, owner: type | None = None) -> Any:
        return self if obj is None else self.read(obj)

    def read(self, obj: object) -> T:
        value: T = getattr(getattr(obj, self.holder), self.name)
        return value


class Part:
    """The base of a part of the palace (mining, search, curation...): it is given the
    palace's shared resources (`core`) and reads them under the same names the core has, so a
    part's code says `self.catalog`, `self.lock.hold()`, `self.sync()`. What parts share
    beyond these is a public method of one part handed to the other (the `DrawerWriter`)."""

    def __init__(self, core: PalaceCore) -> None:
        self.core = core

    # -- the core's resources ---------------------------------------------------------------
    settings: Via[Settings] = Via("core")
    path: Via[Path] = Via("core")
    store: Via[DrawerStore] = Via("core")
    backend: Via[PalaceBackend] = Via("core")
    catalog: Via[Catalog] = Via("core")
    lock: Via[PalaceLock] = Via("core")
    consistency: Via[Consistency] = Via("core")
    index_dir: Via[Path] = Via("core")
    embedder: Via[Embedder] = Via("core")
    # -- the model and the checks every verb starts from ----------------------------------
    embedder_for: Via[Callable[[str], Embedder]] = Via("core")
    binding: Via[Callable[[], Binding]] = Via("core")
    current_binding: Via[Callable[[], Binding]] = Via("core")
    exists: Via[Callable[[], bool]] = Via("core")
    require: Via[Callable[[], None]] = Via("core")
    create: Via[Callable[[], bool]] = Via("core")
    refresh: Via[Callable[[], bool]] = Via("core")
    sync: Via[Callable[..., int]] = Via("core")  # sync(restamp=False)
    catalog_trusted: Via[Callable[[], bool]] = Via("core")
    needs_repair: Via[Callable[[], bool]] = Via("core")
    known_places: Via[Callable[[], dict[str, list[str]]]] = Via("core")
