"""`reembed`: switch a palace to another embedding model, re-embedding every drawer from its
stored text.

How it stays safe:
- Searches keep working on the old vectors until the end: the new vectors go into a NEW Chroma
  collection (created with state "building", so nothing resolves to it) and into a side table
  of the catalogue (`reembed_vectors`), never into the drawers searches read.
- Resumable: each batch is committed (Chroma first, then the side table with each drawer's
  text hash). After Ctrl-C or kill -9, running the same command again skips every drawer whose
  vector is already there with the same text.
- Other writers are welcome meanwhile: the palace lock is taken per batch only. At the switch,
  under the lock, drawers filed, changed or removed since are caught up.
- The switch is one step for a reader: the catalogue transaction that moves the new vectors
  into the drawers, records the model and the collection, and bumps the generation (local
  palaces read only the catalogue's record), after the new collection was marked active with
  the newest activation time (what a palace on a Chroma server resolves to). The old
  collection is deleted last; one left by a crash is deleted by the next reembed.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from typing import Any

from mempalace_cli.common.errors import InvalidInputError
from mempalace_cli.common.lazy import lazy
from mempalace_cli.embedders import MODELS, check_model_name
from mempalace_cli.service.core import PalaceCore, Part, crashpoint, meta_from
from mempalace_cli.service.models import (
    ACTIVATED_KEY,
    ACTIVE,
    BUILDING,
    COLLECTION_META,
    MODEL_META,
    STATE_KEY,
    Binding,
    default_model,
    dimension_of,
    drawer_collections,
    is_mempalace_collection,
    target_collection,
)
from mempalace_cli.service.results import ModelsResult, ReembedResult
from mempalace_cli.storage.catalog import VECTORS_META, DrawerRow
from mempalace_cli.storage.passage_vectors import CJK_WEIGHT, PASSAGES_FROM, embed_passages
from mempalace_cli.storage.store import collection_metadata

np = lazy("numpy")

BATCH = 64
TARGET_META = "reembed_target"  # "<model>\t<collection>" while a reembed is unfinished
_SIDE_TABLE = """
CREATE TABLE IF NOT EXISTS reembed_vectors (
    id TEXT PRIMARY KEY, text_hash TEXT NOT NULL, embedding BLOB NOT NULL
)"""

Progress = Callable[[str, dict[str, Any]], None]


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class Reembedder:
    """One run of `reembed` on one palace (composed with the palace, not mixed into it)."""

    def __init__(self, palace: PalaceCore, model: str, force: bool, progress: Progress | None):
        self.palace = palace
        self.model = check_model_name(model)
        self.force = force
        self.progress = progress or (lambda event, data: None)
        self.catalog = palace.catalog

    # -- the run ----------------------------------------------------------------------------
    def run(self) -> ReembedResult:
        p = self.palace
        p.require()
        p.sync()
        before = p.current_binding()
        pending = self._pending()
        if before.model == self.model and pending is None:
            with p.lock.hold():
                self._drop_retired(before.collection)
            report = self._report(before, before, 0, 0, switched=False)
            # A palace made before passage vectors gets them for its long drawers.
            report["passages_added"] = fill_passages(p, p.embedder_for(self.model))
            return report
        active_meta = self._active_meta(before)
        if is_mempalace_collection(active_meta) and not self.force:
            raise InvalidInputError(
                f"The palace at {p.path} was made by MemPalace, which searches it with "
                f"{before.model}. After a reembed MemPalace could no longer search it.",
                hint=f"Pass --force to switch it to {self.model} anyway, or keep using "
                "MemPalace's model.",
            )
        target = self._start(before, pending)
        embedder = p.embedder_for(self.model)
        embedder.ensure_loaded()
        total = self.catalog.count()
        done = self._count_done()
        resumed = done
        self.progress("reembed_start", {"total": total, "done": done, "model": self.model})
        started = time.monotonic()
        cursor = 0
        while True:
            todo, cursor = self._todo(BATCH, cursor)
            if not todo:
                break
            vectors = embedder.embed([r.text for r in todo])
            with p.lock.hold():
                self._store_batch(target, todo, vectors)
            done = min(total, done + len(todo))
            crashpoint("reembed_batch")
            self.progress(
                "reembed_batch",
                {"done": done, "total": total, "seconds": time.monotonic() - started},
            )
        with p.lock.hold():
            caught_up = self._catch_up(target, embedder)
            crashpoint("reembed_before_switch")
            after = self._switch(before, target)
        self.progress("reembed_done", {"done": total, "total": total})
        report = self._report(before, after, total - resumed, resumed, switched=True)
        report["caught_up"] = caught_up
        # The switch dropped the old model's passage vectors: the new model's, after it (a crash
        # before they are all there leaves drawers scored by their own vector until the next
        # `reembed`, which fills them in).
        report["passages_added"] = fill_passages(p, embedder)
        return report

    # -- state ------------------------------------------------------------------------------
    def _pending(self) -> tuple[str, str] | None:
        raw = self.catalog.get_meta(TARGET_META)
        if not raw:
            return None
        model, _, collection = raw.partition("\t")
        return model, collection

    def _active_meta(self, binding: Binding) -> dict[str, Any]:
        for name, meta in drawer_collections(self.palace.store.client):
            if name == binding.collection:
                return meta
        return {"embedding_model": binding.model}  # nothing filed yet: nothing to protect

    def _start(self, before: Binding, pending: tuple[str, str] | None) -> str:
        """The collection to fill: the unfinished run's, when it was for the same model."""
        client = self.palace.store.client
        with self.palace.lock.hold():
            conn = self.catalog.conn
            conn.execute(_SIDE_TABLE)
            if pending is not None and pending[0] != self.model:
                self._drop_collection(pending[1])  # an abandoned run for another model
                pending = None
            if pending is None:
                conn.execute("DELETE FROM reembed_vectors")
                target = target_collection(before.collection, self.model)
                self._drop_collection(target)  # a leftover of a crash after a switch
                with self.catalog.transaction() as tx:
                    self.catalog.set_meta(tx, TARGET_META, f"{self.model}\t{target}")
            else:
                target = pending[1]
            conn.commit()
            client.get_or_create_collection(
                target,
                embedding_function=None,
                metadata=collection_metadata(
                    self.model, dimension_of(self.model), **{STATE_KEY: BUILDING}
                ),
            )
        return target

    def _count_done(self) -> int:
        return self.catalog.conn.execute(
            "SELECT COUNT(*) FROM reembed_vectors r JOIN drawers d ON d.id = r.id"
        ).fetchone()[0]

    def _todo(self, limit: int, after_rowid: int) -> tuple[list[DrawerRow], int]:
        """The next drawers (in rowid order, past `after_rowid`) without a new vector; and the
        last rowid looked at. A drawer rewritten meanwhile gets a new rowid, so it comes again."""
        found = self.catalog.conn.execute(
            "SELECT d.rowid, d.id FROM drawers d LEFT JOIN reembed_vectors r ON r.id = d.id "
            "WHERE r.id IS NULL AND d.rowid > ? ORDER BY d.rowid LIMIT ?",
            (after_rowid, limit),
        ).fetchall()
        if not found:
            return [], after_rowid
        rows = self.catalog.get([i for _, i in found])
        return [rows[i] for _, i in found if i in rows], found[-1][0]

    def _changed(self, limit: int) -> list[DrawerRow]:
        """Drawers whose text differs from what their new vector was made from, or that have
        none (one full pass; run under the lock, at the switch)."""
        stale = []
        for drawer_id, text, known in self.catalog.conn.execute(
            "SELECT d.id, d.text, r.text_hash FROM drawers d LEFT JOIN reembed_vectors r "
            "ON r.id = d.id ORDER BY d.rowid"
        ):
            if known != _hash(text):
                stale.append(drawer_id)
                if len(stale) >= limit:
                    break
        return list(self.catalog.get(stale).values())

    def _store_batch(self, target: str, rows: list[DrawerRow], vectors: Any) -> None:
        """Chroma first, then the side table: a crash in between only means the batch is
        embedded again (Chroma upserts are idempotent)."""
        mirrored = self._head_mirrored()
        col = self.palace.store.client.get_collection(target, embedding_function=None)
        col.upsert(
            ids=[r.id for r in rows],
            embeddings=vectors,
            documents=[r.text for r in rows],
            metadatas=[meta_from(r) for r in rows],
        )
        with self.catalog.transaction() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO reembed_vectors(id, text_hash, embedding) VALUES (?,?,?)",
                [
                    (r.id, _hash(r.text), v.tobytes())
                    for r, v in zip(rows, _float32(vectors), strict=True)
                ],
            )
            # Chroma's log moved (another collection): the catalogue still mirrors the drawers
            # searches read, so say so, and a fresh search need not open Chroma.
            if mirrored:
                self._record_head(conn, self.palace.consistency.collection_name)

    def _head_mirrored(self) -> bool:
        """The catalogue is recorded as mirroring the store now (no write half-done)."""
        return self.palace.consistency.mirrors_store_now()

    def _record_head(self, conn: Any, collection: str) -> None:
        self.palace.consistency.record_head(conn, collection)

    def _catch_up(self, target: str, embedder: Any) -> int:
        """Under the lock, before the switch: drawers filed or changed since their batch get
        their new vector; drawers removed since leave the new collection."""
        n = 0
        while rows := self._changed(BATCH):
            self._store_batch(target, rows, embedder.embed([r.text for r in rows]))
            n += len(rows)
        gone = [
            r[0]
            for r in self.catalog.conn.execute(
                "SELECT id FROM reembed_vectors WHERE id NOT IN (SELECT id FROM drawers)"
            )
        ]
        if gone:
            col = self.palace.store.client.get_collection(target, embedding_function=None)
            col.delete(ids=gone)
            with self.catalog.transaction() as conn:
                conn.executemany("DELETE FROM reembed_vectors WHERE id = ?", [(i,) for i in gone])
            n += len(gone)
        return n

    def _switch(self, before: Binding, target: str) -> Binding:
        p = self.palace
        client = p.store.client
        col = client.get_collection(target, embedding_function=None)
        meta = {k: v for k, v in (col.metadata or {}).items() if k != "hnsw:space"}
        meta.update({STATE_KEY: ACTIVE, ACTIVATED_KEY: time.time()})
        col.modify(metadata=meta)  # what a palace on a Chroma server resolves to from now on
        crashpoint("reembed_after_activate")
        mirrored = self._head_mirrored()
        with self.catalog.transaction() as conn:
            conn.execute(
                "UPDATE drawers SET embedding = (SELECT r.embedding FROM reembed_vectors r "
                "WHERE r.id = drawers.id)"
            )
            self.catalog.set_meta(conn, MODEL_META, self.model)
            self.catalog.set_meta(conn, COLLECTION_META, target)
            self.catalog.set_meta(conn, VECTORS_META, "1")
            conn.execute("DELETE FROM meta WHERE key = ?", (TARGET_META,))
            conn.execute("DELETE FROM reembed_vectors")
            if mirrored:
                self._record_head(conn, target)
            self.catalog.bump_generation(conn)
        crashpoint("reembed_after_switch")
        p.store.reset_handle()
        p.rebind()  # consistency reads the log of the palace's collection
        after = p.current_binding()
        if before.collection != target:
            self._drop_collection(before.collection)
        self._drop_retired(target)
        with self.catalog.transaction() as conn:
            if mirrored:
                self._record_head(conn, target)
            self.catalog.bump_generation(conn)
        p.wrote()
        return after

    def _drop_retired(self, active: str) -> None:
        """Delete drawer collections a crash left behind after a switch (never one being
        built: that is an unfinished reembed's work)."""
        for name, meta in drawer_collections(self.palace.store.client):
            if name != active and meta.get(STATE_KEY) != BUILDING:
                self._drop_collection(name)

    def _drop_collection(self, name: str) -> None:
        client = self.palace.store.client
        if name in [getattr(c, "name", c) for c in client.list_collections()]:
            client.delete_collection(name)

    def _report(
        self, before: Binding, after: Binding, embedded: int, resumed: int, switched: bool
    ) -> ReembedResult:
        return {
            "palace_path": str(self.palace.path),
            "model_before": before.model,
            "model": after.model,
            "collection": after.collection,
            "switched": switched,
            "embedded": embedded,
            "resumed_from": resumed,
            "drawers": self.catalog.count(),
        }


def fill_passages(palace: PalaceCore, embedder: Any) -> int:
    """Give every long drawer without passage vectors its passages' vectors
    (storage/passage_vectors.py), BATCH drawers at a time, each batch under the lock in one
    catalogue transaction (the passages live in the catalogue only, not in Chroma). Returns how
    many drawers got them."""
    catalog = palace.catalog
    done, after = 0, 0
    while rows := catalog.lacking_passages(PASSAGES_FROM // CJK_WEIGHT, BATCH, after):
        after = rows[-1].chunk_index or after  # lacking_passages puts the rowid there
        vectors = embed_passages([(r.id, r.text) for r in rows], embedder.embed)
        if not vectors:
            continue
        with palace.lock.hold():
            with catalog.transaction() as conn:
                done += catalog.set_passages(conn, vectors)
                catalog.bump_generation(conn)
            palace.wrote()
    return done


def _float32(vectors: Any) -> Any:
    return np.asarray(vectors, dtype=np.float32)


class Reembedding(Part):
    """The palace's embedding model: which models there are, and switching to another."""

    def reembed(
        self, model: str, force: bool = False, progress: Progress | None = None
    ) -> ReembedResult:
        """Re-embed every drawer with `model` and switch the palace to it (see module doc).
        Progress events: reembed_start, reembed_batch {done, total, seconds}, reembed_done."""
        return Reembedder(self.core, model, force, progress).run()

    def embedding_models(self) -> ModelsResult:
        """The models this tool can embed with, the palace's own (None before its first
        drawer or `init`), and the default for new palaces."""
        binding = self.current_binding() if self.exists() else None
        return {
            "palace_path": str(self.path),
            "palace_model": binding.model if binding else None,
            "palace_model_origin": binding.origin if binding else None,
            "default_model": default_model(self.settings),
            "models": [
                {
                    "name": m.name,
                    "dimension": m.dimension,
                    "languages": m.languages,
                    "package": m.package,
                    "about": m.about,
                }
                for m in MODELS.values()
            ]
            + (
                [
                    {
                        "name": binding.model,
                        "dimension": 0,
                        "languages": "served by embedding_api_url",
                        "package": "",
                        "about": "OpenAI-compatible endpoint",
                    }
                ]
                if binding and binding.model not in MODELS
                else []
            ),
        }
