"""The drawer store: one Chroma collection, `mempalace_drawers`, in cosine space.

chromadb is imported on first use only (it costs over a second). The collection is opened
without an embedding function: we always pass embeddings ourselves, so a palace made by
MemPalace (which registered Chroma's default function) opens too, and nothing here ever tries
to download a model.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, TypeVar

from mempalace_cli.common.config import COLLECTION_NAME
from mempalace_cli.common.errors import (
    IncompatiblePalaceError,
    MemPalaceError,
    PalaceCorruptError,
    from_sqlite_error,
    write_failure,
)
from mempalace_cli.common.lazy import lazy
from mempalace_cli.embedders.base import DIMENSION, MODEL_NAME
from mempalace_cli.storage import chroma_internals, chroma_server
from mempalace_cli.storage.chroma_internals import CHROMA_FILE
from mempalace_cli.storage.chroma_server import ServerOptions
from mempalace_cli.storage.server_ledger import ServerLedger

chromadb = lazy("chromadb")
chromadb_config = lazy("chromadb.config")

T = TypeVar("T")
# Chroma's registry of open folders is process-wide and unguarded: two palace objects of one
# process (the MCP server's read and write lanes) open and let go of clients in turns.
_HANDLES = threading.RLock()
PAGE = 1000


def _silence_chroma() -> None:
    for name in ("chromadb", "chromadb.telemetry", "onnxruntime"):
        logging.getLogger(name).setLevel(logging.ERROR)


def where_filter(wing: str | None, room: str | None) -> dict[str, Any] | None:
    clauses = [{k: v} for k, v in (("wing", wing), ("room", room)) if v is not None]
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def collection_metadata(model: str, dimension: int, **extra: Any) -> dict[str, Any]:
    """What every drawer collection we create carries: the model its vectors come from (so a
    palace on a Chroma server names its model to every machine) and cosine space."""
    meta: dict[str, Any] = {"hnsw:space": "cosine", "embedding_model": model}
    if dimension:
        meta["embedding_dimension"] = dimension
    return meta | extra


class DrawerStore:
    def __init__(
        self, palace_path: Path, chroma_url: str | None = None, server: ServerOptions | None = None
    ) -> None:
        self.palace_path = palace_path
        if server is None and chroma_url:
            server = ServerOptions(url=chroma_url)
        self.server = server
        self.chroma_url = server.url if server else None
        self._client: Any = None
        self._collection: Any = None
        self._ledger: Any = None
        self.expected_generation: int | None = None  # see mark_fresh
        # The palace's (collection name, model name, dimension); MiniLM's collection without it.
        self.binder: Callable[[], tuple[str, str, int]] | None = None
        self.collection_name, self.model_name, self.dimension = COLLECTION_NAME, MODEL_NAME, 0
        # Taken to retry a read that raced a writer (the palace sets its write lock here).
        self.retry_guard: Callable[[], AbstractContextManager[Any]] | None = None

    @property
    def ledger(self) -> Any:
        """The palace's records on the server (change token, identity); server palaces only."""
        if self.server is None:
            raise AssertionError("an embedded palace has no server ledger")
        if self._ledger is None:
            self._ledger = ServerLedger(self.client, self.server)
        return self._ledger

    @property
    def location(self) -> str:
        return self.chroma_url or str(self.palace_path)

    def has_local_data(self) -> bool:
        return (self.palace_path / CHROMA_FILE).exists()

    def _make_client(self) -> Any:
        _silence_chroma()
        settings = chromadb_config.Settings(anonymized_telemetry=False, allow_reset=False)
        if self.server is not None:
            return chroma_server.connect(self.server)
        self.palace_path.mkdir(parents=True, exist_ok=True)
        try:
            try:
                return chromadb.PersistentClient(path=str(self.palace_path), settings=settings)
            except ValueError as exc:
                if "already exists" not in str(exc):
                    raise
                # Another client in this process opened the folder with other settings: share it.
                return chromadb.PersistentClient(path=str(self.palace_path))
        except Exception as exc:
            named = from_sqlite_error(exc, self.palace_path / CHROMA_FILE)
            if named is not None:
                raise named from exc
            raise PalaceCorruptError(
                f"The drawer store in {self.palace_path} can't be opened: {exc}",
                hint="Restore the palace folder from a backup, or move it aside and re-mine. "
                "Nothing was changed.",
            ) from exc

    @property
    def client(self) -> Any:
        if self._client is None:
            with _HANDLES:
                client = self._make_client()
                api = chroma_internals.client_api(client) if not self.chroma_url else None
                if api is not None and not chroma_internals.is_marked(api):
                    # opened fresh now
                    chroma_internals.mark_generation(api, self.expected_generation)
            self._client = client
        return self._client

    def collection(self, create: bool = False) -> Any | None:
        """The drawer collection; None when it doesn't exist and `create` is false."""
        if self._collection is not None:
            return self._collection
        client = self.client
        if self.binder is not None:
            self.collection_name, self.model_name, self.dimension = self.binder()
        try:
            if create:
                col = client.get_or_create_collection(
                    self.collection_name,
                    embedding_function=None,
                    metadata=collection_metadata(self.model_name, self.dimension),
                )
            else:
                names = [getattr(c, "name", c) for c in client.list_collections()]
                if self.collection_name not in names:
                    return None
                col = client.get_collection(self.collection_name, embedding_function=None)
        except MemPalaceError:
            raise
        except Exception as exc:
            if self.server is not None:
                raise chroma_server.classify(exc, self.server) from exc
            raise PalaceCorruptError(
                f"The drawer collection at {self.location} can't be opened: {exc}",
                hint="Restore the palace from a backup, or move it aside and re-mine. "
                "Nothing was changed.",
            ) from exc
        self._check_compatible(col)
        self._collection = col
        return col

    def _check_compatible(self, col: Any) -> None:
        """Refuse a collection embedded by another model: mixing vectors of two models makes
        search return nonsense without any error."""
        meta = col.metadata or {}
        model = meta.get("embedding_model") or MODEL_NAME  # MemPalace's: MiniLM
        if model != self.model_name:
            raise IncompatiblePalaceError(
                f"The drawers at {self.location} were embedded with {model!r}, but the palace "
                f"records {self.model_name!r}. Mixing models would make search return nonsense.",
                hint="Run `mempalace reembed --model NAME` to embed every drawer again with one "
                "model, or use a separate palace (--palace).",
            )
        expected = self.dimension or (DIMENSION if self.model_name == MODEL_NAME else 0)
        # The dimension Chroma recorded from the stored vectors wins over what metadata claims.
        dim = chroma_internals.recorded_dimension(col) or meta.get("embedding_dimension")
        config = getattr(col, "configuration_json", None) or {}
        space = meta.get("hnsw:space") or (config.get("hnsw") or {}).get("space")
        if (dim and expected and int(dim) != expected) or (space and space != "cosine"):
            raise IncompatiblePalaceError(
                f"The drawers at {self.location} use {dim or '?'}-d vectors in {space or '?'} "
                f"space; {self.model_name} needs {expected or '?'}-d cosine.",
                hint="Use a separate palace (--palace) or another Chroma server for this tool.",
            )

    # -- freshness of the embedded store (see PalaceCore.refresh) ---------------------------
    def _api(self) -> Any | None:
        """The in-process Chroma object reads go through: ours, or the one Chroma would hand
        us for this folder (it shares one per folder in a process). None if there is none."""
        if self._client is not None:
            return chroma_internals.client_api(self._client)
        if "chromadb" not in sys.modules:
            return None  # nothing opened in this process (and no need to import it to know)
        return chroma_internals.folder_api(str(self.palace_path))

    def is_stale(self, generation: int) -> bool:
        """True if this process's view of the embedded store predates `generation`."""
        if self.chroma_url:
            return False
        api = self._api()
        return api is not None and chroma_internals.generation_of(api) != generation

    def mark_fresh(self, generation: int) -> None:
        """Record that this process's view reflects palace generation `generation`."""
        self.expected_generation = generation
        api = None if self.chroma_url else self._api()
        if api is not None:
            chroma_internals.mark_generation(api, generation)

    def reset_handle(self) -> None:
        """Forget cached handles so the next call re-reads what other processes wrote.

        Embedded Chroma keeps its vector index in memory: a query in this process does not see
        vectors another process added (or removed) until the store is reopened, and a write
        from a stale handle could persist that stale index.
        """
        client, self._client, self._collection = self._client, None, None
        if self.server is not None:
            self._ledger = None
            return
        with _HANDLES:
            try:
                if client is not None:
                    chroma_internals.release_client(client)
                elif "chromadb" in sys.modules:  # else nothing of this folder is open here
                    chroma_internals.detach_folder(str(self.palace_path))
            except Exception:  # a chromadb that differs: fall back to its public reset
                chroma_internals.reset_all_clients()

    # -- reads ------------------------------------------------------------------------------
    def _read(self, op: Callable[[Any], T], empty: T) -> T:
        """Run a read on the collection (`empty` when there is none yet).

        Embedded Chroma can fail a read that races a write in another process (an index entry
        whose row was just deleted: "Error finding id"). Such a read is retried once, from a
        reopened store, under `retry_guard` (the palace lock: no writer in flight then).
        """
        if self.server is not None:
            return chroma_server.read(self.server, lambda: self._read_once(op, empty))
        try:
            return self._read_once(op, empty)
        except MemPalaceError:
            raise
        except Exception:
            if self.retry_guard is None:
                raise
        with self.retry_guard():
            self.reset_handle()
            col = self.collection()
            try:
                return empty if col is None else op(col)
            except MemPalaceError:
                raise
            except Exception as exc:
                path = self.palace_path / CHROMA_FILE
                raise write_failure(exc, path, "The drawer store") from exc

    def _read_once(self, op: Callable[[Any], T], empty: T) -> T:
        col = self.collection()
        return empty if col is None else op(col)

    def count(self) -> int:
        return self._read(lambda col: col.count(), 0)

    def query(
        self, embedding: Sequence[float], n: int, where: dict[str, Any] | None
    ) -> list[tuple[str, float, str, dict[str, Any]]]:
        """[(id, cosine distance, document, metadata)], nearest first."""
        if n <= 0:
            return []
        res = self._read(
            lambda col: col.query(
                query_embeddings=[list(map(float, embedding))],
                n_results=n,
                where=where,
                include=["documents", "metadatas", "distances"],
            ),
            None,
        )
        if res is None:
            return []
        ids = res["ids"][0]
        return [
            (
                ids[i],
                float(res["distances"][0][i]),
                res["documents"][0][i] or "",
                dict(res["metadatas"][0][i] or {}),
            )
            for i in range(len(ids))
        ]

    def ids_at(self, offset: int, limit: int) -> list[str]:
        """The ids at positions offset..offset+limit-1 of Chroma's insertion order (ids only:
        the consistency probe on a server)."""
        return self._read(
            lambda col: list(col.get(offset=offset, limit=limit, include=[])["ids"]), []
        )

    def reset_collection(self) -> None:
        """Fetch the collection again on next use (a server: its metadata may have changed,
        or it was replaced)."""
        self._collection = None

    def get(self, ids: Sequence[str], include: Sequence[str]) -> dict[str, Any]:
        empty: dict[str, Any] = {"ids": [], **{k: [] for k in include}}
        if not ids:
            return empty
        return self._read(lambda col: col.get(ids=list(ids), include=list(include)), empty)

    def all_ids(self) -> list[str]:
        """Every drawer id, in one request (ids only): a snapshot no concurrent write shifts."""
        return self._read(lambda col: list(col.get(include=[])["ids"]), [])

    def iter_all(
        self, include: Sequence[str] = ("metadatas", "documents"), page_size: int = PAGE
    ) -> Iterator[dict]:
        """Every drawer, page by page, fetched by id from one snapshot of the ids. Pages by
        offset would skip drawers when another process deletes while we read (the rows behind
        the offset move down). A drawer deleted after the snapshot is left out of its page;
        one added after it is not listed (consistency.py's probe sees it)."""
        ids = self.all_ids()
        for start in range(0, len(ids), page_size):
            page = self.get(ids[start : start + page_size], include)
            if len(page["ids"]):
                yield page

    # -- writes (callers hold the palace lock) ----------------------------------------------
    def _write(self, op: Callable[[], None], ids: Sequence[str] | None) -> None:
        """One write touching `ids` (None: any drawer). On a server it is bracketed by the
        ledger's change records (so that other machines see what changed, even if we die
        half-way) and never retried: it is done only when the server acknowledged it."""
        if self.server is None:
            try:
                op()
            except MemPalaceError:
                raise
            except Exception as exc:  # named (disk full, permission), not Chroma's internals
                raise write_failure(
                    exc, self.palace_path / CHROMA_FILE, "The drawer store"
                ) from exc
            return
        self.ledger.begin_write(ids)
        chroma_server.write(self.server, op)
        self.ledger.end_write()

    def upsert(
        self,
        ids: Sequence[str],
        embeddings: Any,
        documents: Sequence[str],
        metadatas: Sequence[dict[str, Any]],
    ) -> None:
        if not self.dimension and len(ids):
            self.dimension = len(embeddings[0])  # a server-side model: known from its answer
        col = self.collection(create=True)

        def run() -> None:
            for start in range(0, len(ids), PAGE):
                end = start + PAGE
                col.upsert(
                    ids=list(ids[start:end]),
                    embeddings=embeddings[start:end],
                    documents=list(documents[start:end]),
                    metadatas=list(metadatas[start:end]),
                )

        self._write(run, ids)

    def delete(self, ids: Sequence[str]) -> None:
        col = self.collection()
        if col is None or not ids:
            return

        def run() -> None:
            for start in range(0, len(ids), PAGE):
                col.delete(ids=list(ids[start : start + PAGE]))

        self._write(run, ids)
