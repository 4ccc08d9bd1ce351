"""Opening the palace's SQLite files (catalogue, knowledge graph) the same way everywhere."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

from mempalace_cli.common.errors import PalaceCorruptError, from_os_error, from_sqlite_error


def open_palace_db(
    path: Path,
    schema: str,
    what: str,
    hint: str,
    setup: Callable[[sqlite3.Connection], None] | None = None,
) -> sqlite3.Connection:
    """Connect in WAL mode (readers never block the one writer), create the schema, run
    `setup` (migrations), commit. A file that isn't a readable database becomes a
    PalaceCorruptError naming it (`what`) with `hint`; it is never replaced. A full disk or a
    permission problem is named as such. A file this user may only read is opened read-only
    (reads work; a write is refused with a permission error)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise from_os_error(exc, path.parent, f"create the folder of {what.lower()}") from exc
    try:
        if path.exists() and not writable(path):
            return open_read_only(path)
        conn = sqlite3.connect(path, timeout=30, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.executescript(schema)
        if setup is not None:
            setup(conn)
        conn.commit()
    except sqlite3.DatabaseError as exc:
        storage = from_sqlite_error(exc, path)
        if storage is not None:
            raise storage from exc
        raise PalaceCorruptError(f"{what} {path} can't be read: {exc}.", hint=hint) from exc
    return conn


class PalaceDb:
    """One SQLite file of the palace, opened with `open_palace_db` on first use and kept open
    until `close`. A file that can't be read is named as `what`, with the hint "Move it aside
    (mv ...)" followed by `then` (what happens next)."""

    def __init__(
        self,
        path: Path,
        schema: str,
        what: str,
        then: str,
        setup: Callable[[sqlite3.Connection], None] | None = None,
    ) -> None:
        self.path = path
        self._opening = (schema, what, then, setup)
        self._conn: sqlite3.Connection | None = None

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            schema, what, then, setup = self._opening
            hint = f"Move it aside (mv {self.path} {self.path}.bad){then}"
            self._conn = open_palace_db(self.path, schema, what, hint=hint, setup=setup)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def add_column(conn: sqlite3.Connection, table: str, column: str, declaration: str) -> bool:
    """Upgrade a file made by an older version: add `column` to `table` when it has none.
    True when this call added it (False: it was there, or another process added it just
    now)."""
    if column in {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}:
        return False
    try:
        conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
    except sqlite3.OperationalError as exc:  # another process upgraded it just now
        if "duplicate column" not in str(exc):
            raise
        return False
    return True


def sqlite_uri(path: Path, **params: str | int) -> str:
    """The SQLite URI of the file at `path` with query `params` (e.g. mode="ro"), every
    character of the path that means something in a URI (`#`, `?`, `%`, spaces, non-ASCII)
    percent-encoded: unquoted, `file:/a#b?c/x.sqlite3?mode=ro` would open `/a` (the rest is a
    fragment) in read-write mode, creating an empty file there. Every URI this project hands
    to SQLite is built here."""
    absolute = os.path.abspath(os.fspath(path))
    # "file://" + an absolute path: an empty authority, so a path starting with "//" is a path.
    uri = "file://" + quote(os.fsencode(absolute), safe="/")
    if params:
        uri += "?" + "&".join(f"{k}={quote(str(v), safe='')}" for k, v in params.items())
    return uri


def connect_read_only(
    path: Path, timeout: float = 30, immutable: bool = False, **kwargs: object
) -> sqlite3.Connection:
    """Open the file read-only (never created, never written); with `immutable`, also
    without the -shm file WAL mode wants (storage this process can't write)."""
    uri = sqlite_uri(path, immutable=1) if immutable else sqlite_uri(path, mode="ro")
    return sqlite3.connect(uri, uri=True, timeout=timeout, **kwargs)  # type: ignore[arg-type]


def writable(path: Path) -> bool:
    """This process may write the file and create its -wal/-shm companions next to it."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK)


def open_read_only(path: Path) -> sqlite3.Connection:
    """A palace on read-only storage or owned by someone else: read it as it is. In WAL mode
    SQLite needs its -shm file; where it can't create one, the file is read as immutable."""
    conn = connect_read_only(path, check_same_thread=False)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError:
        conn.close()
    conn = connect_read_only(path, immutable=True, check_same_thread=False)
    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    return conn
