"""Everything this tool reads of Chroma's internals, in one place, checked before it is read.

Chroma's public API can't tell us three things we need, so we read them from its inside:

- the embedded store's write log, to prove the catalogue mirrors the store without importing
  chromadb (consistency.py): in chroma.sqlite3, `collections` (id, name) and
  `embeddings_queue` (seq_id, id, topic); and `collection_metadata` (collection_id, key), to
  tell whose palace a folder is (palace_owner.py);
- chromadb's in-process registry of open folders (`SharedSystemClient._identifier_to_system`,
  `_identifier_to_refcount`, `_refcount_lock`; a client's `_identifier` and `_server`), to
  reopen a folder after another process wrote to it, and to know whether this process's view
  of the folder is older than the palace (kept here, beside chromadb's objects, never as an
  attribute set on them);
- a collection's recorded dimension (`Collection._model.dimension`) and the HTTP client's
  session (`client._server._session`), to check a collection and to bound every request by a
  timeout.

Supported: the chromadb versions in SUPPORTED (pyproject.toml's range). The installed version
is read from its package metadata (no chromadb import, no importlib.metadata: both cost start-up
time) and the file's layout is checked by one statement before the log is read. A store whose
layout differs (a chromadb release renamed a table or a column) is reported as "this chromadb
version is not supported (supported: ...)" with nothing changed, never as a damaged palace; a
file with no Chroma table at all is still reported as unreadable. The registry and attribute
reads fall back to chromadb's public calls (or to doing without) when they are missing.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sqlite3
import threading
import weakref
from collections.abc import Callable
from contextlib import closing, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from mempalace_cli.common.errors import (
    IncompatiblePalaceError,
    PalaceCorruptError,
    from_os_error,
    from_sqlite_error,
)
from mempalace_cli.common.lazy import lazy
from mempalace_cli.storage.sqlite_db import connect_read_only

chromadb_api = lazy("chromadb.api")
chromadb_shared = lazy("chromadb.api.shared_system_client")

T = TypeVar("T")
CHROMA_FILE = "chroma.sqlite3"
# The chromadb versions whose internals this module reads, [lowest, first unsupported): the
# dependency range of pyproject.toml. Each is tested by the suite (tests/test_chroma_layout.py
# checks the installed one and the layout it writes).
SUPPORTED = ((1, 5), (2,))
SUPPORTED_TEXT = "chromadb >=1.5,<2"

# The tables and columns of chroma.sqlite3 read here.
LOG_LAYOUT: dict[str, frozenset[str]] = {
    "collections": frozenset({"id", "name"}),
    "embeddings_queue": frozenset({"seq_id", "id", "topic"}),
}
OWNER_LAYOUT: dict[str, frozenset[str]] = {
    "collection_metadata": frozenset({"collection_id", "key"}),
}
# Any one of these says the file is a Chroma store (of some version), not another file.
_CHROMA_TABLES = ("migrations", "collections", "embeddings_queue", "segments", "embeddings")


class UnsupportedChromaError(IncompatiblePalaceError):
    """The drawer store was written by (or chromadb here is) a version of Chroma whose
    internals this tool does not know: reported as such, never as a damaged palace."""


# -- the installed version --------------------------------------------------------------------
@functools.cache
def installed_version() -> str | None:
    """The installed chromadb's version, from its package metadata (None if not found)."""
    try:
        spec = importlib.util.find_spec("chromadb")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    site = Path(next(iter(spec.submodule_search_locations))).parent
    for meta in sorted(site.glob("chromadb-*.dist-info/METADATA")):
        with meta.open(encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("Version:"):
                    return line.split(":", 1)[1].strip()
                if not line.strip():
                    break
    return None


def version_tuple(version: str) -> tuple[int, ...]:
    """The leading numbers of a version ("1.5.9" -> (1, 5, 9); "2.0.0rc1" -> (2, 0, 0))."""
    out: list[int] = []
    for part in version.split("."):
        digits = ""
        for ch in part:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        out.append(int(digits))
        if len(digits) != len(part):
            break
    return tuple(out)


def is_supported(version: str | None) -> bool:
    """`version` is in SUPPORTED (an unknown version is given the benefit of the doubt: the
    layout check still guards every read)."""
    if version is None:
        return True
    v = version_tuple(version)
    low, high = SUPPORTED
    return bool(v) and low <= v < high


def _unsupported(detail: str, path: Path | None = None) -> UnsupportedChromaError:
    """The "not supported" error: for a store whose layout we don't know (`path`), or for the
    installed chromadb itself."""
    installed = installed_version() or "unknown"
    head = (
        f"This chromadb version is not supported (supported: {SUPPORTED_TEXT}; installed: "
        f"chromadb {installed})."
    )
    if path is None:
        return UnsupportedChromaError(
            f"{head} This tool reads parts of chromadb that {detail}. Nothing was changed.",
            hint=f"Install a supported chromadb (pip install '{SUPPORTED_TEXT.replace(' ', '')}')"
            " or a mempalace-cli release that supports this one.",
        )
    return UnsupportedChromaError(
        f"{head} The drawer store {path} is in a layout this tool does not know ({detail}), "
        "probably written by another chromadb version. Nothing was changed.",
        hint="Use a mempalace-cli release that supports the chromadb that wrote it, or that "
        "chromadb; the palace itself is not damaged (this is not corruption).",
    )


def check_installed() -> None:
    """Refuse to read Chroma's internals under a chromadb outside SUPPORTED."""
    version = installed_version()
    if not is_supported(version):
        raise _unsupported("may differ in other versions")


# -- the layout of chroma.sqlite3 -------------------------------------------------------------
def _store_unreadable(path: Path, why: str) -> PalaceCorruptError:
    return PalaceCorruptError(
        f"The drawer store {path} can't be opened: {why}. Nothing was changed.",
        hint="Restore the palace folder from a backup. To start over from your files, move "
        "the palace folder aside and mine again.",
    )


def _sqlite_error(exc: sqlite3.Error, path: Path) -> Exception:
    """An sqlite error that is about the disk or permissions, named as such."""
    return from_sqlite_error(exc, path) or _store_unreadable(path, str(exc))


def layout_problem(
    conn: sqlite3.Connection, wanted: dict[str, frozenset[str]]
) -> tuple[bool, str | None]:
    """(is a Chroma store at all, what of `wanted` is missing or None), in one statement."""
    names = sorted(set(wanted) | set(_CHROMA_TABLES))
    marks = ",".join("?" * len(names))
    found: dict[str, set[str]] = {}
    for table, column in conn.execute(
        "SELECT m.name, p.name FROM sqlite_master AS m, pragma_table_info(m.name) AS p "
        f"WHERE m.type = 'table' AND m.name IN ({marks})",
        names,
    ):
        found.setdefault(table, set()).add(column)
    if not any(t in found for t in _CHROMA_TABLES):
        return False, None
    for table, columns in wanted.items():
        if table not in found:
            return True, f"no table {table}"
        lacking = sorted(columns - found[table])
        if lacking:
            return True, f"no column {', '.join(lacking)} in table {table}"
    return True, None


# Stores whose layout this process checked already: (path, device, inode, layout). A layout
# that changes under the same file later (a chromadb migration) fails the read itself, which
# then checks the layout again (`_read`).
_CHECKED: set[tuple[str, int, int, str]] = set()


def _check_layout(conn: sqlite3.Connection, path: Path, wanted: dict[str, frozenset[str]]) -> None:
    try:
        is_chroma, problem = layout_problem(conn, wanted)
    except sqlite3.OperationalError as exc:
        raise _sqlite_error(exc, path) from exc
    except sqlite3.DatabaseError as exc:
        raise _store_unreadable(path, str(exc)) from exc
    if not is_chroma:
        raise _store_unreadable(path, "it holds no Chroma tables")
    if problem is not None:
        raise _unsupported(problem, path)


# Each thread keeps its read-only connection to the last few chroma.sqlite3 files it read (a
# search reads the log head every time: opening the file and reading its schema again was 0.1 ms
# of it). Keyed by path, device and inode: a store replaced under the same path gets a new
# connection. An idle connection holds no lock (each statement takes and drops its own), and
# SQLite checks at every read whether another process changed the file.
KEPT_PER_THREAD = 4
_KEPT = threading.local()


def _kept() -> dict[str, tuple[int, int, sqlite3.Connection]]:
    kept = getattr(_KEPT, "conns", None)
    if kept is None or _KEPT.pid != os.getpid():
        # A forked child never uses (nor closes: that would drop the parent's locks) the
        # connections it inherited: SQLite connections do not cross fork().
        kept = _KEPT.conns = {}
        _KEPT.pid = os.getpid()
    return kept


def _connection(path: Path, st: os.stat_result) -> sqlite3.Connection:
    """This thread's read-only connection to the store file `path` (stat `st`)."""
    kept = _kept()
    key = str(path)
    held = kept.pop(key, None)
    if held is not None and held[:2] == (st.st_dev, st.st_ino):
        kept[key] = held  # most recently used last
        return held[2]
    if held is not None:
        held[2].close()
    conn = connect_read_only(path, timeout=10)
    kept[key] = (st.st_dev, st.st_ino, conn)
    while len(kept) > KEPT_PER_THREAD:
        kept.pop(next(iter(kept)))[2].close()
    return conn


def release(path: Path) -> None:
    """Close this thread's kept connection to the store file `path`, if any (a palace closing)."""
    held = _kept().pop(str(path), None)
    if held is not None:
        held[2].close()


def _read(path: Path, wanted: dict[str, frozenset[str]], op: Callable[[Any], T]) -> T:
    """Run `op` on chroma.sqlite3, opened read-only (never created or changed), after checking
    the installed chromadb and (once per file in this process) that the store holds `wanted`.
    A read that fails for a missing table or column is checked again: "not supported"."""
    check_installed()
    st = path.stat()
    key = (str(path), st.st_dev, st.st_ino, ",".join(sorted(wanted)))
    try:
        conn = _connection(path, st)
        if key not in _CHECKED:
            _check_layout(conn, path, wanted)
            _CHECKED.add(key)
        return op(conn)
    except sqlite3.OperationalError as exc:
        release(path)
        if key in _CHECKED and "no such" in str(exc):
            _CHECKED.discard(key)
            with closing(connect_read_only(path, timeout=10)) as conn:
                _check_layout(conn, path, wanted)
        raise _sqlite_error(exc, path) from exc
    except sqlite3.DatabaseError as exc:
        release(path)
        raise _store_unreadable(path, str(exc)) from exc
    except BaseException:
        release(path)
        raise


# -- the embedded store's write log (consistency.py) ------------------------------------------
@dataclass(frozen=True)
class LogHead:
    """Where Chroma's write log stands: the drawer collection's id (None before it exists),
    the newest sequence number and the oldest one still kept (0 when the log is empty)."""

    collection_id: str | None
    seq: int
    oldest: int

    @property
    def key(self) -> str:
        return f"{self.collection_id or '-'}:{self.seq}"


def read_log_head(palace_path: Path, collection_name: str) -> LogHead | None:
    """Chroma's log head for the palace's embedded store; None if chroma.sqlite3 is absent.
    A file that is not a Chroma store (emptied, damaged) raises PalaceCorruptError; one of a
    Chroma whose layout we don't know, UnsupportedChromaError."""
    path = palace_path / CHROMA_FILE
    try:
        if path.stat().st_size == 0:
            raise _store_unreadable(path, "the file is empty (0 bytes)")
    except FileNotFoundError:
        release(path)  # a kept connection to a deleted store would keep its disk space
        return None
    except OSError as exc:
        raise from_os_error(exc, path, "read the drawer store") from exc

    def head(conn: sqlite3.Connection) -> tuple[Any, Any, Any]:
        # Every statement read to its end: a kept connection holds no lock afterwards.
        found = conn.execute(
            "SELECT id FROM collections WHERE name = ?", (collection_name,)
        ).fetchall()
        log = conn.execute(  # two subqueries: each one index lookup (together: a scan)
            "SELECT (SELECT max(seq_id) FROM embeddings_queue), "
            "(SELECT min(seq_id) FROM embeddings_queue)"
        )
        seq, oldest = log.fetchall()[0]
        return found[0] if found else None, seq, oldest

    try:
        row, seq, oldest = _read(path, LOG_LAYOUT, head)
    except FileNotFoundError:
        release(path)
        return None  # removed since the check above
    return LogHead(row[0] if row else None, int(seq or 0), int(oldest or 0))


def log_ids_since(palace_path: Path, head: LogHead, since: int) -> list[str] | None:
    """The drawer ids written (added, updated, deleted) after sequence number `since`, in log
    order; None when the log no longer holds everything after `since` (purged)."""
    if head.seq <= since:
        return []
    if head.oldest > since + 1 or head.collection_id is None:
        return None
    path = palace_path / CHROMA_FILE
    try:
        rows = _read(
            path,
            LOG_LAYOUT,
            lambda conn: conn.execute(
                "SELECT id, topic FROM embeddings_queue WHERE seq_id > ? AND seq_id <= ? "
                "ORDER BY seq_id",
                (since, head.seq),
            ).fetchall(),
        )
    except FileNotFoundError:
        return None  # the store went away since its head was read: compare everything
    # A log entry's topic ends with its collection's id ("persistent://tenant/db/<id>").
    mine = [i for i, topic in rows if str(topic).endswith(head.collection_id)]
    return list(dict.fromkeys(mine))


# -- whose palace a folder is (palace_owner.py) -----------------------------------------------
def any_collection_marked(chroma_file: Path, key: str) -> bool:
    """One of the store's collections carries metadata `key`. A store this can't read (or of
    a layout we don't know) counts as marked, so that the store's own checks name the problem
    as they always did."""
    try:
        row = _read(
            chroma_file,
            OWNER_LAYOUT,
            lambda conn: (
                conn.execute(
                    "SELECT 1 FROM collection_metadata WHERE key = ? LIMIT 1", (key,)
                ).fetchall()  # read to the end: a kept connection holds no lock afterwards
                or None
            ),
        )
    except (sqlite3.Error, PalaceCorruptError, IncompatiblePalaceError):
        return True
    except OSError:
        return True
    return row is not None


# -- chromadb's in-process registry of open folders (store.py) --------------------------------
# Which palace generation each in-process Chroma view reflects (see DrawerStore.mark_fresh):
# keyed by chromadb's object, which every client of one folder in this process shares.
_GENERATIONS: weakref.WeakKeyDictionary[Any, int | None] = weakref.WeakKeyDictionary()


def _shared() -> Any | None:
    """chromadb's SharedSystemClient when it has the registry we read, else None."""
    try:
        shared = chromadb_shared.SharedSystemClient
    except (ImportError, AttributeError):  # no chromadb, or one that moved the class
        return None
    needed = ("_identifier_to_system", "_identifier_to_refcount", "_refcount_lock")
    return shared if all(hasattr(shared, n) for n in needed) else None


def client_api(client: Any) -> Any | None:
    """The object an embedded client's reads go through (None if this chromadb hides it)."""
    return getattr(client, "_server", None)


def folder_api(folder: str) -> Any | None:
    """The in-process Chroma object Chroma would hand a new client of `folder` (it shares
    one per folder in a process); None if there is none (or this chromadb hides it)."""
    shared = _shared()
    if shared is None:
        return None
    try:
        system = shared._identifier_to_system.get(folder)
        return None if system is None else system.instance(chromadb_api.ServerAPI)
    except Exception:
        return None


def generation_of(api: Any) -> int | None:
    """The palace generation `api`'s view was marked with (None: never marked)."""
    try:
        return _GENERATIONS.get(api)
    except TypeError:  # not weakly referenceable: never marked
        return None


def is_marked(api: Any) -> bool:
    try:
        return api in _GENERATIONS
    except TypeError:
        return False


def mark_generation(api: Any, generation: int | None) -> None:
    with suppress(TypeError):  # not weakly referenceable: left unmarked (stale next time)
        _GENERATIONS[api] = generation


def release_client(client: Any) -> None:
    """Let go of an embedded client so that the next one opens the folder afresh.

    Chroma shares one "system" per folder among the clients of a process. When only this
    client uses it, it is closed (freeing its memory and files); when other clients of this
    process still use it, it is detached from the folder's entry and left to them. Without the
    registry this reads (another chromadb), chromadb's public reset is used.
    """
    shared = _shared()
    ident = getattr(client, "_identifier", None)
    if shared is None or ident is None:
        reset_all_clients()
        return
    with shared._refcount_lock:
        system = shared._identifier_to_system.get(ident)
        if system is None or system.instance(chromadb_api.ServerAPI) is not client_api(client):
            return  # already detached by another client of this process
        users = shared._identifier_to_refcount.get(ident, 0)
        if users > 2:  # the client and its admin client count two; others use it too
            shared._identifier_to_system.pop(ident, None)
            shared._identifier_to_refcount.pop(ident, None)
            return
    client.close()


def detach_folder(folder: str) -> None:
    """Make the next client for this folder open it afresh, leaving the shared one to the
    clients of this process that still hold it."""
    shared = _shared()
    if shared is None:
        reset_all_clients()
        return
    with shared._refcount_lock:
        shared._identifier_to_system.pop(folder, None)
        shared._identifier_to_refcount.pop(folder, None)


def reset_all_clients() -> None:
    """chromadb's public reset of every client of this process."""
    chromadb_shared.SharedSystemClient.clear_system_cache()


# -- collections and clients ------------------------------------------------------------------
def recorded_dimension(col: Any) -> int | None:
    """The vector size Chroma recorded for the collection from its stored vectors (None when
    it recorded none, or this chromadb keeps it elsewhere)."""
    dim = getattr(getattr(col, "_model", None), "dimension", None)
    return int(dim) if isinstance(dim, int) and not isinstance(dim, bool) else None


def set_http_timeout(client: Any, timeout: Any) -> bool:
    """Bound every request of an HTTP client by `timeout` (chromadb's own client sets none);
    False if this chromadb keeps its session elsewhere."""
    session = getattr(client_api(client), "_session", None)
    if session is None:
        return False
    session.timeout = timeout
    return True
