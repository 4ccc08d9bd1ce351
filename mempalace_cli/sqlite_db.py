"""Opening the palace's SQLite files (catalogue, knowledge graph) the same way everywhere."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from mempalace_cli.errors import PalaceCorruptError


def open_palace_db(
    path: Path,
    schema: str,
    what: str,
    hint: str,
    setup: Callable[[sqlite3.Connection], None] | None = None,
) -> sqlite3.Connection:
    """Connect in WAL mode (readers never block the one writer), create the schema, run
    `setup` (migrations), commit. A file that isn't a readable database becomes a
    PalaceCorruptError naming it (`what`) with `hint`; it is never replaced."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(path, timeout=30, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.executescript(schema)
        if setup is not None:
            setup(conn)
        conn.commit()
    except sqlite3.DatabaseError as exc:
        raise PalaceCorruptError(f"{what} {path} can't be read: {exc}.", hint=hint) from exc
    return conn
