"""The palace's shared machinery: settings, the drawer store, the catalogue, the write lock and
the embedder, each created on first use, plus the two write primitives every path goes through
(`_file_drawers` and `_remove_drawers`), so the lexical index can never fall out of step."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

from mempalace_cli.catalog import Catalog, DrawerRow, FileRecord
from mempalace_cli.config import Settings, resolve_settings
from mempalace_cli.embedder import Embedder, get_embedder
from mempalace_cli.errors import NoPalaceError
from mempalace_cli.locking import PalaceLock
from mempalace_cli.store import DrawerStore

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


class PalaceCore:
    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or resolve_settings()
        self.path = self.settings.palace_path
        self._synced_generation: int | None = None

    # -- components, created lazily ---------------------------------------------------------
    @cached_property
    def store(self) -> DrawerStore:
        return DrawerStore(self.path, self.settings.chroma_url)

    @cached_property
    def catalog(self) -> Catalog:
        return Catalog(self.path)

    @cached_property
    def lock(self) -> PalaceLock:
        return PalaceLock(self.path, self.settings.lock_timeout)

    @property
    def embedder(self) -> Embedder:
        return get_embedder(self.settings.embedding_model_dir)

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
        return new

    # -- keeping the catalogue in step with the store ---------------------------------------
    def sync(self) -> int:
        """Rebuild the catalogue from the store when their drawer counts differ.

        Returns how many drawers were re-indexed (0 when already in step). Cheap when in step:
        one count on each side.
        """
        generation = self.catalog.generation()
        if self._synced_generation == generation and not self.settings.chroma_url:
            return 0
        if self.store.count() == self.catalog.count():
            self._synced_generation = generation
            return 0
        with self.lock.hold():
            if self.store.count() == self.catalog.count():
                return 0
            rows: list[DrawerRow] = []
            with self.catalog.transaction() as conn:
                self.catalog.clear(conn)
                for page in self.store.iter_all(("metadatas", "documents")):
                    batch = [
                        row_from(i, d or "", dict(m or {}))
                        for i, d, m in zip(
                            page["ids"], page["documents"], page["metadatas"], strict=True
                        )
                    ]
                    self.catalog.upsert_drawers(conn, batch)
                    rows.extend(batch)
                self.catalog.bump_generation(conn)
            self._synced_generation = self.catalog.generation()
            return len(rows)

    # -- the two write primitives (callers hold the lock) -----------------------------------
    def _file_drawers(
        self,
        rows: Sequence[DrawerRow],
        embeddings: Any,
        replace_ids: Sequence[str] = (),
        files: Sequence[FileRecord] = (),
    ) -> None:
        """Store drawers in Chroma, then the catalogue; `replace_ids` are removed first, and
        `files` (the mining manifest) commit in the same catalogue transaction as their drawers.

        Chroma is written first: a crash in between leaves the catalogue behind, which `sync`
        or the next mine repairs, never a catalogue row without its drawer.
        """
        new_ids = {r.id for r in rows}
        stale = [i for i in dict.fromkeys(replace_ids) if i not in new_ids]
        self.store.delete(stale)
        if rows:
            self.store.upsert(
                [r.id for r in rows], embeddings, [r.text for r in rows], [meta_from(r) for r in rows]
            )
        with self.catalog.transaction() as conn:
            self.catalog.delete_drawers(conn, stale)
            self.catalog.upsert_drawers(conn, rows)
            stamp = now_iso()
            for rec in files:
                self.catalog.put_file(conn, rec, stamp)
            self.catalog.bump_generation(conn)

    def _remove_drawers(self, ids: Sequence[str], forget_files: Sequence[str] = ()) -> None:
        self.store.delete(list(ids))
        with self.catalog.transaction() as conn:
            self.catalog.delete_drawers(conn, list(ids))
            for source_file in forget_files:
                self.catalog.delete_file(conn, source_file)
            self.catalog.bump_generation(conn)
