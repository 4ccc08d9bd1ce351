"""The local catalogue of a server palace is a cache: this module keeps it in step.

On a Chroma server the drawers belong to every machine that points at it, so this machine's
catalogue (keyword index, vector mirror) can only be a copy. Agreement is proven by content:

- the server ledger's change token (server_ledger.py) is replaced by every writer before and
  after each drawer write; the catalogue records the token it mirrored. Same token and the same
  number of drawers on both sides (the count catches writers that keep no ledger, such as
  MemPalace): in step, at the cost of two small requests.
- otherwise it catches up from the ledger's change log: the drawers named by change records it
  has not applied yet are read again from the server (what the server holds now is what the
  catalogue takes, so the order of the writes does not matter): the cost is what changed.
- when the log can't explain the server's state (a first mirror, a writer that keeps no log,
  a delete by filter, a catalogue older than the log's retention, counts that still differ
  after catching up), the catalogue is refreshed by content: every drawer's id, text and
  metadata is read from the server and compared with the catalogue's row; rows that differ or
  are new are re-filed with their vectors (fetched for those rows only), rows the server no
  longer has are dropped.

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
WATERMARK = "server_watermark"  # catalogue meta: the newest change record (writer's clock, us)
# Catch up from the log only while our watermark is well inside the log's retention.
RETENTION_SAFE_US = 20 * 3600 * 1_000_000


_CHANGES_TABLE = """
CREATE TABLE IF NOT EXISTS server_changes (id TEXT PRIMARY KEY, at_us INTEGER NOT NULL);
"""


class ServerMirror:
    def __init__(self, core: PalaceCore) -> None:
        self.core = core

    def sync(self) -> int:
        """Bring the catalogue in step with the server if it is not; the number of drawers
        re-filed or dropped (0 when in step)."""
        from mempalace_cli.service.core import WRITE_IN_PROGRESS

        dirty = self.core.catalog.get_meta(WRITE_IN_PROGRESS) == "1"
        if not dirty and self._in_step():
            return 0
        with self.core.lock.hold():
            return self._refresh(incremental=not dirty)

    def _in_step(self) -> bool:
        store, catalog = self.core.store, self.core.catalog
        token = store.ledger.token() or NO_TOKEN
        if catalog.get_meta(SERVER_TOKEN) != token or catalog.get_meta(VECTORS_META) != "1":
            return False
        return store.count() == catalog.count()

    # -- catching up ---------------------------------------------------------------------------
    def _refresh(self, incremental: bool) -> int:
        """Caller holds the palace lock. The token is read first: a write that lands while we
        read changes it again afterwards, so the next check catches up once more."""
        from mempalace_cli.service.core import WRITE_IN_PROGRESS

        store, catalog = self.core.store, self.core.catalog
        token = store.ledger.token() or NO_TOKEN
        if (
            catalog.get_meta(SERVER_TOKEN) == token
            and catalog.get_meta(VECTORS_META) == "1"
            and store.count() == catalog.count()
        ):
            # In step (another process of this machine caught up while we waited, or a writer
            # died before touching the server): a mark left behind is stale, we hold the lock.
            if catalog.get_meta(WRITE_IN_PROGRESS) == "1":
                with catalog.transaction() as conn:
                    catalog.set_meta(conn, WRITE_IN_PROGRESS, "0")
            return 0
        if incremental:
            changed = self._catch_up(token)
            if changed is not None and store.count() == catalog.count():
                return changed
        return self._mirror_all(token)

    def _catch_up(self, token: str) -> int | None:
        """Re-read only the drawers the change log names since our last look; None when the
        log can't explain the server's state (no watermark yet, a writer that keeps no log,
        a delete by filter, records pruned)."""
        from mempalace_cli.server_ledger import ALL, CHANGE_MARGIN_US, CHANGE_PREFIX, now_us

        catalog, ledger = self.core.catalog, self.core.store.ledger
        mark = catalog.get_meta(WATERMARK)
        if mark is None or token == NO_TOKEN or int(mark) < now_us() - RETENTION_SAFE_US:
            return None
        changes = ledger.changes_since(int(mark) - CHANGE_MARGIN_US)
        if CHANGE_PREFIX + token not in {c.id for c in changes}:
            return None
        applied = self._applied([c.id for c in changes])
        new = [c for c in changes if c.id not in applied]
        touched = list(dict.fromkeys(i for c in new for i in c.ids))
        if ALL in touched:
            return None
        return self._apply(touched, new, token)

    def _mirror_all(self, token: str) -> int:
        """Every drawer's id, text and metadata from the server, compared with the catalogue."""
        from mempalace_cli.server_ledger import CHANGE_MARGIN_US, now_us
        from mempalace_cli.service.core import row_from

        store, catalog = self.core.store, self.core.catalog
        catalog.conn.executescript(_CHANGES_TABLE)
        changes = store.ledger.changes_since(now_us() - CHANGE_MARGIN_US)
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
            conn.execute("DELETE FROM server_changes")
            self._commit(conn, gone, fresh, vectors, changes, token, floor=now_us())
        return len(gone) + len(fresh)

    def _apply(self, touched: list[str], changes: list[Any], token: str) -> int:
        """Re-file the current server state of `touched` (the order of the writes that touched
        them does not matter: what the server holds now is what the catalogue takes)."""
        from mempalace_cli.service.core import row_from

        store, catalog = self.core.store, self.core.catalog
        held: dict[str, Any] = {}
        vectors: dict[str, Any] = {}
        for start in range(0, len(touched), 500):
            got = store.get(touched[start : start + 500], ["documents", "metadatas", "embeddings"])
            for i, d, m, v in zip(
                got["ids"], got["documents"], got["metadatas"], got["embeddings"], strict=True
            ):
                held[i] = row_from(i, d or "", dict(m or {}))
                vectors[i] = v
        gone = [i for i in touched if i not in held]
        fresh = list(held.values())
        with catalog.transaction() as conn:
            self._commit(conn, gone, fresh, vectors, changes, token)
        return len(gone) + len(fresh)

    def _commit(
        self,
        conn: Any,
        gone: list[str],
        fresh: list[Any],
        vectors: dict[str, Any],
        changes: list[Any],
        token: str,
        floor: int | None = None,
    ) -> None:
        from mempalace_cli.service.core import WRITE_IN_PROGRESS

        catalog = self.core.catalog
        catalog.delete_drawers(conn, gone)
        if fresh:
            catalog.upsert_drawers(conn, fresh, [vectors[row.id] for row in fresh])
        conn.executemany(
            "INSERT OR IGNORE INTO server_changes(id, at_us) VALUES (?, ?)",
            [(c.id, c.at_us) for c in changes],
        )
        mark = max([c.at_us for c in changes] + [floor or 0, int(catalog.get_meta(WATERMARK) or 0)])
        catalog.set_meta(conn, WATERMARK, str(mark))
        # Records older than the log keeps are never looked at again.
        conn.execute("DELETE FROM server_changes WHERE at_us < ?", (mark - RETENTION_SAFE_US,))
        catalog.set_meta(conn, VECTORS_META, "1")
        catalog.set_meta(conn, WRITE_IN_PROGRESS, "0")
        catalog.set_meta(conn, SERVER_TOKEN, token)
        if gone or fresh:
            catalog.bump_generation(conn)
        self.core.store.ledger.steps.clear()
        self.core._synced_generation = None

    def _applied(self, ids: list[str]) -> set[str]:
        conn = self.core.catalog.conn
        conn.executescript(_CHANGES_TABLE)
        out: set[str] = set()
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ",".join("?" * len(part))
            out.update(
                r[0]
                for r in conn.execute(f"SELECT id FROM server_changes WHERE id IN ({marks})", part)
            )
        return out

    def after_own_write(self) -> None:
        """After our own write (lock held, catalogue updated): if the token moved only through
        our writes since the catalogue last mirrored the server, the catalogue mirrors it still;
        record the new token (and our change records) and spare the next command a refresh."""
        ledger, catalog = self.core.store.ledger, self.core.catalog
        steps, ledger.steps = ledger.steps, []
        if not steps:
            return
        expected = catalog.get_meta(SERVER_TOKEN)
        for step in steps:
            if not step.undisturbed or (step.before or NO_TOKEN) != expected:
                return
            expected = step.after
        catalog.conn.executescript(_CHANGES_TABLE)
        with catalog.transaction() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO server_changes(id, at_us) VALUES (?, ?)",
                [(c.id, c.at_us) for step in steps for c in step.changes],
            )
            catalog.set_meta(conn, SERVER_TOKEN, expected)


def _vectors(store: Any, ids: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for start in range(0, len(ids), 500):
        got = store.get(ids[start : start + 500], include=["embeddings"])
        out.update(zip(got["ids"], got["embeddings"], strict=True))
    return out
