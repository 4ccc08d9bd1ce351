"""The change log of a team palace on a Chroma server, as the catalogue's consistency uses it.

consistency.py owns the agreement between Chroma and the catalogue; on a server it proves it
with a tail probe (drawer count and the id at the end of Chroma's insertion order) and, when
that differs, reconciles every drawer. This module makes the common case of a team cheap and
immediate:

- every writer of this tool replaces the ledger's change token before and after each drawer
  write and, in the same request, records the ids it touches (server_ledger.py);
- `token_current()`: one get by id tells a reader whether any writer of this tool wrote since
  the catalogue last mirrored the server, so it does not wait for the probe's interval;
- `catch_up()`: the drawers named by change records this catalogue has not applied yet are
  read again (what the server holds now is what the catalogue takes, so the order of the
  writes does not matter): the cost is what changed, not the palace's size. When the log
  can't explain the server's state (a first mirror, a writer that keeps no log such as
  MemPalace, a delete by filter, a catalogue older than the log keeps), consistency.py
  reconciles every drawer as before.

This module never imports chromadb itself: the store does, on first use.
"""

from __future__ import annotations

from typing import Any

from mempalace_cli.storage.catalog import Catalog
from mempalace_cli.storage.server_ledger import ALL, CHANGE_MARGIN_US, CHANGE_PREFIX, now_us
from mempalace_cli.storage.store import DrawerStore

SERVER_TOKEN = "server_token"  # catalogue meta: the ledger token the catalogue mirrors
NO_TOKEN = "-"  # recorded when the server has no ledger yet (a palace only MemPalace wrote)
WATERMARK = "server_watermark"  # catalogue meta: the newest change record (writer's clock, us)
# Catch up from the log only while our watermark is well inside the log's retention.
RETENTION_SAFE_US = 20 * 3600 * 1_000_000

_CHANGES_TABLE = """
CREATE TABLE IF NOT EXISTS server_changes (id TEXT PRIMARY KEY, at_us INTEGER NOT NULL);
"""


class TeamLog:
    """The team's change log as one palace's catalogue uses it (see the module docstring)."""

    def __init__(self, catalog: Catalog, store: DrawerStore) -> None:
        self.catalog = catalog
        self.store = store

    def _token(self) -> str:
        return self.store.ledger.token() or NO_TOKEN

    def token_current(self) -> bool:
        """No writer of this tool wrote since the catalogue last mirrored the server."""
        return self.catalog.get_meta(SERVER_TOKEN) == self._token()

    # -- catching up (consistency.py calls these under the palace lock) -------------------------
    def catch_up(self, consistency: Any) -> Any | None:
        """Apply the drawers the change log names since our last look; the Repair, or None
        when the log can't explain the server's state (then everything is reconciled)."""
        catalog, ledger = self.catalog, self.store.ledger
        token = self._token()
        if catalog.get_meta(SERVER_TOKEN) == token:
            return None  # no teammate wrote: the probe saw a foreign writer, reconcile
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
        repair = consistency.apply_team_ids(touched)
        if repair is None:
            return None  # the probe still differs: another writer too; reconcile
        self._record(token, new)
        return repair

    def begin_full(self) -> tuple[str, list[Any]]:
        """Before a full reconcile: the token and recent change records, read first (a write
        that lands during the reconcile changes the token again afterwards)."""
        changes = self.store.ledger.changes_since(now_us() - CHANGE_MARGIN_US)
        return self._token(), changes

    def end_full(self, began: tuple[str, list[Any]] | None) -> None:
        if began is None:
            return
        token, changes = began
        self.catalog.conn.executescript(_CHANGES_TABLE)
        with self.catalog.transaction() as conn:
            conn.execute("DELETE FROM server_changes")
        self._record(token, changes, floor=now_us())

    def _record(self, token: str, changes: list[Any], floor: int = 0) -> None:
        catalog = self.catalog
        catalog.conn.executescript(_CHANGES_TABLE)
        with catalog.transaction() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO server_changes(id, at_us) VALUES (?, ?)",
                [(c.id, c.at_us) for c in changes],
            )
            mark = max([c.at_us for c in changes] + [floor, int(catalog.get_meta(WATERMARK) or 0)])
            catalog.set_meta(conn, WATERMARK, str(mark))
            catalog.set_meta(conn, SERVER_TOKEN, token)
            # Records older than the log keeps are never looked at again.
            conn.execute("DELETE FROM server_changes WHERE at_us < ?", (mark - RETENTION_SAFE_US,))
        self.store.ledger.steps.clear()

    def _applied(self, ids: list[str]) -> set[str]:
        conn = self.catalog.conn
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
        record the new token (and our change records) and spare the next command a repair."""
        ledger, catalog = self.store.ledger, self.catalog
        steps, ledger.steps = ledger.steps, []
        if not steps:
            return
        expected = catalog.get_meta(SERVER_TOKEN)
        for step in steps:
            if not step.undisturbed or (step.before or NO_TOKEN) != expected:
                return
            expected = step.after
        self._record(expected, [c for step in steps for c in step.changes])
