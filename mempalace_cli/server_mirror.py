"""The local catalogue of a server palace is a cache: this module keeps it in step.

On a Chroma server the drawers belong to every machine that points at it, so this machine's
catalogue (keyword index, vector mirror) can only be a copy. Agreement is proven by content:

- the server ledger's change token (server_ledger.py) is replaced by every writer before and
  after each drawer write; the catalogue records the token it mirrored. Same token and the same
  number of drawers on both sides (the count catches writers that keep no ledger, such as
  MemPalace): in step, at the cost of two small requests.
- otherwise the catalogue is refreshed by content: every drawer's id, text and metadata is read
  from the server and compared with the catalogue's row; rows that differ or are new are
  re-filed with their vectors (fetched for those rows only), rows the server no longer has
  are dropped.

Every command and every MCP tool call checks (two small requests), so a long-lived process
(MCP server, watch mode) sees another machine's finished write on its next call: the bound is
one check plus one refresh, well under the 5 s the team palace promises.

This module never imports chromadb itself: the store does, on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mempalace_cli.catalog import VECTORS_META
from mempalace_cli.errors import PalaceCorruptError

if TYPE_CHECKING:
    from mempalace_cli.service.core import PalaceCore

SERVER_TOKEN = "server_token"  # catalogue meta: the ledger token the catalogue mirrors
NO_TOKEN = "-"  # recorded when the server has no ledger yet (a palace only MemPalace wrote)


class ServerMirror:
    def __init__(self, core: PalaceCore) -> None:
        self.core = core

    def sync(self) -> int:
        """Bring the catalogue in step with the server if it is not; the number of drawers
        re-filed (0 when in step)."""
        from mempalace_cli.service.core import WRITE_IN_PROGRESS

        core = self.core
        catalog = core.catalog
        dirty = catalog.get_meta(WRITE_IN_PROGRESS) == "1"
        if not dirty and self._in_step():
            return 0
        with core.lock.hold():
            return self._refresh()

    def _in_step(self) -> bool:
        store, catalog = self.core.store, self.core.catalog
        token = store.ledger.token() or NO_TOKEN
        if catalog.get_meta(SERVER_TOKEN) != token or catalog.get_meta(VECTORS_META) != "1":
            return False
        return store.count() == catalog.count()

    def _refresh(self) -> int:
        """Caller holds the palace lock. Read the token first: a write that lands while we
        read changes it again afterwards, so the next check refreshes once more."""
        from mempalace_cli.service.core import WRITE_IN_PROGRESS, row_from

        core = self.core
        store, catalog = core.store, core.catalog
        token = store.ledger.token() or NO_TOKEN
        col = store.collection()
        if col is None and catalog.count():
            raise PalaceCorruptError(
                f"The Chroma server at {store.location} holds no drawer collection, but this "
                f"machine's index lists {catalog.count()} drawers. Nothing was changed.",
                hint="Check chroma_url and chroma_database. If the palace on the server was "
                f"deleted on purpose, move the index aside (mv {catalog.path} "
                f"{catalog.path}.bad) and mine again.",
            )
        server_rows = {}
        for page in store.iter_all(("metadatas", "documents")):
            for i, d, m in zip(page["ids"], page["documents"], page["metadatas"], strict=True):
                server_rows[i] = row_from(i, d or "", dict(m or {}))
        local = {row.id: row for row in catalog.iter_drawers()}
        gone = [i for i in local if i not in server_rows]
        fresh = [row for i, row in server_rows.items() if local.get(i) != row]
        vectors = _vectors(store, [row.id for row in fresh])
        # A drawer deleted between the two reads has no vector: leave it to the next check.
        fresh = [row for row in fresh if row.id in vectors]
        with catalog.transaction() as conn:
            catalog.delete_drawers(conn, gone)
            if fresh:
                catalog.upsert_drawers(conn, fresh, [vectors[row.id] for row in fresh])
            catalog.set_meta(conn, VECTORS_META, "1")
            catalog.set_meta(conn, WRITE_IN_PROGRESS, "0")
            catalog.set_meta(conn, SERVER_TOKEN, token)
            if gone or fresh:
                catalog.bump_generation(conn)
        store.ledger.steps.clear()
        core._synced_generation = catalog.generation()
        return len(gone) + len(fresh)

    def after_own_write(self) -> None:
        """After our own write (lock held, catalogue updated): if the token moved only through
        our writes since the catalogue last mirrored the server, the catalogue mirrors it still;
        record the new token and spare the next command a refresh."""
        ledger, catalog = self.core.store.ledger, self.core.catalog
        steps, ledger.steps = ledger.steps, []
        if not steps:
            return
        expected = catalog.get_meta(SERVER_TOKEN)
        for step in steps:
            if not step.undisturbed or (step.before or NO_TOKEN) != expected:
                return
            expected = step.after
        with catalog.transaction() as conn:
            catalog.set_meta(conn, SERVER_TOKEN, expected)


def _vectors(store: Any, ids: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for start in range(0, len(ids), 500):
        got = store.get(ids[start : start + 500], include=["embeddings"])
        out.update(zip(got["ids"], got["embeddings"], strict=True))
    return out
