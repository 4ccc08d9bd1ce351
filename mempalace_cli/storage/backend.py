"""A backend per kind of palace: its drawers in its folder (embedded Chroma) or on a Chroma
server. The service holds one `PalaceBackend` and never asks which kind it is: every place the
two kinds differ is a member here.

What a backend owns:
- its drawer store (store.py), opened on first use (chromadb is imported then, not before);
- where this tool keeps its own files for the palace (`index_dir`: the catalogue, the vector
  index, the write lock; palace_owner.py);
- its proof that the catalogue mirrors the store (consistency.py: Chroma's write log for the
  embedded store, a tail probe and the team's change log on a server; `consistency()`);
- whether a palace is there at all (`store_exists`), how this process sees other processes'
  writes (`refresh`, `after_own_write`), how a rewritten drawer is filed (`ids_to_refile`),
  and whether a read of the catalogue brings it in step first (`sync_before_reading`);
- where the palace's model is recorded (`model_recorded_in_catalog`, `may_hold_collections`);
- its knowledge graph store (`open_facts`, `facts_to_read`, `facts_location`): SQLite in the
  folder or a collection on the server. This layer may not import the knowledge graph
  (memory/), so the service hands the backend a `FactStoreMaker` (memory/kg_store.py's
  `FACT_STORES`) and the backend picks which of its two makers to call;
- its explicit links, tunnels and hidden hallways (`open_links`: SQLite beside the catalogue,
  or a collection on the server);
- its coordination log (`open_coordination_log`: SQLite in the palace folder, or a collection
  on the server reached through a client of its own; coordination_log.py);
- its team (`writers_since`: the machines writing to a server palace; none for a folder),
  its name in reports (`kind`) and where its mined sources are (`sources_on_this_machine`);
- its identity text (`shared_identity`, `keep_identity`): a server palace keeps one for every
  machine; an embedded palace keeps none (the user's identity file is used).

`open_backend(settings)` is the one place that looks at `chroma_url` to choose.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol

from mempalace_cli.common.config import Settings
from mempalace_cli.storage import chroma_server
from mempalace_cli.storage.catalog import Catalog
from mempalace_cli.storage.chroma_server import ServerOptions
from mempalace_cli.storage.consistency import (
    Consistency,
    EmbeddedConsistency,
    ServerConsistency,
)
from mempalace_cli.storage.coordination_log import ChromaLog, CoordinationLog, SqliteLog
from mempalace_cli.storage.graph_links import ChromaLinks, SqliteLinks
from mempalace_cli.storage.locking import PalaceLock
from mempalace_cli.storage.palace_owner import index_dir
from mempalace_cli.storage.store import DrawerStore
from mempalace_cli.storage.team_log import TeamLog


class FactStoreMaker(Protocol):
    """Makes the knowledge graph's store for either kind of palace (memory/kg_store.py)."""

    def in_folder(self, palace_path: Path) -> Any:
        """The SQLite fact store in the palace folder (created on first write)."""
        ...

    def folder_has_facts(self, palace_path: Path) -> bool:
        """A fact store file exists in the folder."""
        ...

    def empty(self, palace_path: Path) -> Any:
        """An empty fact store that creates no file (reading a palace with no facts yet)."""
        ...

    def folder_location(self, palace_path: Path) -> str: ...

    def on_server(self, client_of: Callable[[], Any], opts: ServerOptions) -> Any:
        """The fact store in a collection of the palace's Chroma server."""
        ...

    def server_location(self, where: str) -> str: ...


class PalaceBackend(ABC):
    """One palace's storage, embedded or on a server (see the module docstring)."""

    def __init__(
        self,
        settings: Settings,
        binder: Callable[[], tuple[str, str, int]] | None = None,
        retry_guard: Callable[[], AbstractContextManager[Any]] | None = None,
    ) -> None:
        """`binder` names the palace's drawer collection, model and dimension when the store
        first opens it; `retry_guard` is the palace's write lock, held to retry a read that
        raced a writer (store.py)."""
        self.settings = settings
        self.palace_path = settings.palace_path
        self._binder = binder
        self._retry_guard = retry_guard

    # -- the drawer store and our files -----------------------------------------------------
    @cached_property
    def store(self) -> DrawerStore:
        store = self._open_store()
        store.binder = self._binder
        store.retry_guard = self._retry_guard
        return store

    @abstractmethod
    def _open_store(self) -> DrawerStore: ...

    @property
    def location(self) -> str:
        """Where the drawers live, in messages: the folder or the server's address."""
        return self.store.location

    @property
    @abstractmethod
    def index_dir(self) -> Path:
        """Where this tool's catalogue, vector index and write lock for the palace live."""

    @abstractmethod
    def consistency(self, catalog: Catalog, lock: PalaceLock, collection_name: str) -> Consistency:
        """The owner of the catalogue's agreement with this store (consistency.py)."""

    # -- existence and freshness ------------------------------------------------------------
    @abstractmethod
    def store_exists(self) -> bool:
        """The store holds a palace (without creating anything)."""

    @abstractmethod
    def may_hold_collections(self) -> bool:
        """Asking the store for its drawer collections can't create anything (the model is
        looked up there when the catalogue records none)."""

    # The palace's model is the one its catalogue records (an embedded palace: only this
    # folder's writers switch it), or always the store's (a server: a teammate may switch it).
    model_recorded_in_catalog: bool = True

    @abstractmethod
    def refresh(self, generation: Callable[[], int], rebind: Callable[[], None]) -> bool:
        """Before a read and when the write lock is taken: reopen this process's view of the
        store if another process wrote since (`generation` reads the catalogue's write count;
        `rebind` re-resolves the palace's model first). True if it reopened."""

    @abstractmethod
    def after_own_write(self, catalog: Catalog) -> None:
        """After our own write (under the lock): this process's view is current."""

    def ids_to_refile(self, catalog: Catalog, ids: Sequence[str]) -> list[str]:
        """Of the drawers about to be (re)written, those to delete first."""
        return []

    @abstractmethod
    def sync_before_reading(self, catalog: Catalog) -> bool:
        """A read of the catalogue (palace graph, wake-up) brings it in step first."""

    # -- the knowledge graph ----------------------------------------------------------------
    @abstractmethod
    def open_facts(self, maker: FactStoreMaker) -> Any:
        """The palace's fact store (for writes; created on the first one)."""

    @abstractmethod
    def facts_to_read(self, maker: FactStoreMaker, opened: Callable[[], Any]) -> Any | None:
        """The fact store to read (`opened` returns the one `open_facts` made), an empty one
        that creates nothing when there are no facts yet, or None when there is no palace to
        read them from."""

    @abstractmethod
    def facts_location(self, maker: FactStoreMaker) -> str: ...

    def start_palace_for_facts(self, catalog: Catalog) -> None:  # noqa: B027 (most do nothing)
        """Before the first fact of a palace that has nothing yet: make it a palace, so that
        `status` and the other commands see it."""

    # -- the palace's explicit links (tunnels, hidden hallways: graph_links.py) -------------
    @abstractmethod
    def open_links(self) -> Any:
        """The palace's link store (created on the first link, never by reading)."""

    # -- the coordination log (coordination_log.py) -----------------------------------------
    @abstractmethod
    def open_coordination_log(self) -> CoordinationLog:
        """The palace's coordination log (created on its first append, never by reading). Its
        waits run beside the drawers' reads and writes, so it never shares their handles."""

    # -- the team ---------------------------------------------------------------------------
    # What kind of store it is, in reports (status, the MCP server's store agreement).
    kind: str = "embedded"
    # The mined files the palace's manifest names are on this machine (a team palace's are
    # on each member's).
    sources_on_this_machine: bool = True

    def writers_since(self, at_us: int) -> dict[str, tuple[int, int]] | None:
        """The machines that wrote to the palace since `at_us` (writer -> (time of its last
        change record, how many)), or None for a palace no other machine writes to."""
        return None

    # -- the identity text (wake-up's L0) ---------------------------------------------------
    def shared_identity(self) -> str | None:
        """The identity every machine of the palace reads, or None (none kept here)."""
        return None

    def keep_identity(self, text: str) -> str | None:
        """Store `text` as the shared identity; where, or None if this palace keeps none (the
        caller writes the user's identity file)."""
        return None


class EmbeddedBackend(PalaceBackend):
    """The drawers in the palace folder (chroma.sqlite3), read by this process's own Chroma."""

    def _open_store(self) -> DrawerStore:
        return DrawerStore(self.palace_path)

    @cached_property
    def index_dir(self) -> Path:
        # The palace folder, or a folder in the cache when another tool (MemPalace) owns the
        # palace folder, so that using its palace never writes into it.
        return index_dir(self.palace_path, self.settings.home, False)

    def consistency(self, catalog: Catalog, lock: PalaceLock, collection_name: str) -> Consistency:
        return EmbeddedConsistency(self.palace_path, catalog, self.store, lock, collection_name)

    def store_exists(self) -> bool:
        return self.store.has_local_data()

    def may_hold_collections(self) -> bool:
        return self.store.has_local_data()  # opening a folder with no store would create one

    def refresh(self, generation: Callable[[], int], rebind: Callable[[], None]) -> bool:
        # Embedded Chroma keeps its vector index in memory: a long-lived process would neither
        # find the drawers another process filed nor stop finding the ones it deleted, and
        # writing from that stale index could persist it.
        rebind()  # a reembed elsewhere may have switched the collection
        now = generation()
        stale = self.store.is_stale(now)
        if stale:
            self.store.reset_handle()
        self.store.mark_fresh(now)
        return stale

    def after_own_write(self, catalog: Catalog) -> None:
        self.store.mark_fresh(catalog.generation())

    def sync_before_reading(self, catalog: Catalog) -> bool:
        # Our writes keep the catalogue in step; one is missing for a palace another tool made.
        return not catalog.exists

    def open_facts(self, maker: FactStoreMaker) -> Any:
        return maker.in_folder(self.palace_path)

    def facts_to_read(self, maker: FactStoreMaker, opened: Callable[[], Any]) -> Any | None:
        if not self.palace_path.is_dir():
            return None
        if not maker.folder_has_facts(self.palace_path):
            # No facts yet: reading never creates the facts file (in a palace another tool
            # made, or one this user may only read); `kg_add` creates it.
            return maker.empty(self.palace_path)
        return opened()

    def facts_location(self, maker: FactStoreMaker) -> str:
        return maker.folder_location(self.palace_path)

    def open_links(self) -> Any:
        return SqliteLinks(self.index_dir)

    def open_coordination_log(self) -> CoordinationLog:
        return SqliteLog(self.palace_path)

    def start_palace_for_facts(self, catalog: Catalog) -> None:
        if not catalog.exists and not self.store.has_local_data():
            # A new palace: from now on `status` and the other commands see it. (A palace
            # made by MemPalace gets its index from the next command that syncs it.)
            _ = catalog.conn


class ServerBackend(PalaceBackend):
    """The drawers, facts and identity on a Chroma server shared by a team; the palace folder
    keeps this machine's catalogue (a mirror of the server) and the write lock."""

    def __init__(self, settings: Settings, server: ServerOptions, **hooks: Any) -> None:
        super().__init__(settings, **hooks)
        self.server = server

    def _open_store(self) -> DrawerStore:
        return DrawerStore(self.palace_path, server=self.server)

    @property
    def index_dir(self) -> Path:
        return self.palace_path

    def team_log(self, catalog: Catalog) -> TeamLog:
        return TeamLog(catalog, self.store)

    def consistency(self, catalog: Catalog, lock: PalaceLock, collection_name: str) -> Consistency:
        return ServerConsistency(
            self.palace_path,
            catalog,
            self.store,
            lock,
            collection_name,
            team_log=self.team_log(catalog),
        )

    model_recorded_in_catalog = False

    def store_exists(self) -> bool:
        return self.store.collection() is not None

    def may_hold_collections(self) -> bool:
        return True

    def refresh(self, generation: Callable[[], int], rebind: Callable[[], None]) -> bool:
        return False  # every read asks the server: nothing of it is kept in this process

    def after_own_write(self, catalog: Catalog) -> None:
        self.team_log(catalog).after_own_write()

    def ids_to_refile(self, catalog: Catalog, ids: Sequence[str]) -> list[str]:
        # A rewritten drawer is filed as delete + add, so it moves to the end of Chroma's
        # order, where other machines' consistency probe sees it.
        listed = catalog.present(list(ids))
        return [i for i in ids if i in listed]

    def sync_before_reading(self, catalog: Catalog) -> bool:
        return True  # the catalogue is this machine's copy of what the team wrote

    def open_facts(self, maker: FactStoreMaker) -> Any:
        store = self.store
        return maker.on_server(lambda: store.client, self.server)

    def facts_to_read(self, maker: FactStoreMaker, opened: Callable[[], Any]) -> Any | None:
        facts = opened()
        return facts if facts.exists() else None

    def facts_location(self, maker: FactStoreMaker) -> str:
        return maker.server_location(self.location)

    def open_links(self) -> Any:
        store = self.store
        return ChromaLinks(lambda: store.client, self.server)

    def open_coordination_log(self) -> CoordinationLog:
        # A client of the log's own (connected on first use; chromadb is imported then), not
        # the drawer store's.
        guard = threading.Lock()
        client: list[Any] = []

        def client_of() -> Any:
            with guard:
                if not client:
                    client.append(chroma_server.connect(self.server))
                return client[0]

        return ChromaLog(client_of, self.server)

    kind = "chroma-server"
    sources_on_this_machine = False

    def writers_since(self, at_us: int) -> dict[str, tuple[int, int]] | None:
        return self.store.ledger.peers_since(at_us)

    def shared_identity(self) -> str | None:
        return self.store.ledger.identity()

    def keep_identity(self, text: str) -> str | None:
        self.store.ledger.set_identity(text)
        return self.location


def open_backend(settings: Settings, **hooks: Any) -> PalaceBackend:
    """The backend for the palace `settings` select: on its Chroma server when `chroma_url`
    is set, else in its folder. `hooks`: PalaceBackend's `binder` and `retry_guard`."""
    server = ServerOptions.from_settings(settings)
    if server is None:
        return EmbeddedBackend(settings, **hooks)
    return ServerBackend(settings, server, **hooks)
