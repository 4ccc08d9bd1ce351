"""The MCP activity log: one row per tool call an MCP server answered, kept in the palace.

Each row says when, who (the client's name and version from its `initialize` request, the
transport, an HTTP peer's address), which tool, a summary of the arguments, the drawer ids the
call returned, how long it took and how it ended (ok, or the error's kind and message). It never
holds a token: the bearer token is checked before any call and is not an argument, and argument
text is cut to a short preview after the secret values in it are redacted with the rules that
keep secrets out of drawers (miners/secrets.py).

Where and how big: `mcp_activity.sqlite3` beside the palace's catalogue (the palace folder, or
this tool's cache folder for a palace another tool owns), its own SQLite file (WAL), so
recording a call never takes the palace's write lock, never waits on a mine and never blocks a
search. It keeps the newest MAX_ROWS calls (10,000); each insert drops the rows older than that.
A row is at most about 2.5 KB (arguments summarised to ARGS_CHARS characters, MAX_STORED_IDS
drawer ids, the message cut to MESSAGE_CHARS), so the file stays under about 25 MB (a few MB
with typical calls). A palace this user may not write (a read-only folder or disk) is served
without recording: one warning on stderr, and every call still answers.

`read_activity` returns the rows as `ActivityRow`s for `mempalace activity` (and a web page).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import sqlite3
import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mempalace_cli.common.errors import Failure, InvalidInputError, MemPalaceError, failure_of
from mempalace_cli.miners.secrets import redact
from mempalace_cli.storage.sqlite_db import open_palace_db

log = logging.getLogger("mempalace.mcp")

ACTIVITY_FILE = "mcp_activity.sqlite3"
MAX_ROWS = 10_000  # calls kept; each insert drops older ones
VALUE_CHARS = 80  # a string argument's preview
KEY_CHARS = 60
MAX_ARGS = 20  # arguments summarised per call
LIST_ITEMS = 5  # items of a list argument shown
ARGS_CHARS = 1_000  # the whole summary, as JSON
MAX_STORED_IDS = 20  # drawer ids kept per call (the count is kept whole)
MESSAGE_CHARS = 300
BUSY_MS = 1_000  # how long one insert may wait for another server's insert

_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    client TEXT,
    client_version TEXT,
    transport TEXT NOT NULL,
    peer TEXT,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL DEFAULT '{}',
    drawer_ids TEXT NOT NULL DEFAULT '[]',
    drawers INTEGER NOT NULL DEFAULT 0,
    duration_ms REAL NOT NULL,
    outcome TEXT NOT NULL,
    error_kind TEXT,
    message TEXT
);
CREATE INDEX IF NOT EXISTS calls_tool ON calls (tool, id);
"""
_COLUMNS = (
    "id, at, client, client_version, transport, peer, tool, arguments, drawer_ids, drawers, "
    "duration_ms, outcome, error_kind, message"
)


@dataclass(frozen=True)
class Caller:
    """Who made a call: the client's own name and version (from `initialize`), the transport,
    and for HTTP the peer's address (host:port)."""

    client: str | None = None
    client_version: str | None = None
    transport: str = "stdio"
    peer: str | None = None


@dataclass(frozen=True)
class ActivityRow:
    """One recorded MCP call, newest first from `read_activity`."""

    id: int
    at: str  # UTC, ISO 8601 with milliseconds
    client: str | None
    client_version: str | None
    transport: str
    peer: str | None
    tool: str
    arguments: dict[str, Any]  # the summary: previews, never whole texts
    drawer_ids: list[str]  # the first MAX_STORED_IDS drawer ids the call returned
    drawers: int  # how many drawer ids it returned in all
    duration_ms: float
    outcome: str  # "ok" or "error"
    error_kind: str | None = None  # errors.MemPalaceError.kind, or "unexpected"
    message: str | None = None  # the error's message (cut to MESSAGE_CHARS)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def activity_folder(palace: Any) -> Path:
    """Where a palace's activity log lives: with this tool's other files for it (its folder,
    or the cache folder for a palace another tool owns, whose folder we never write into)."""
    return Path(getattr(palace, "index_dir", None) or palace.path)


# -- summaries --------------------------------------------------------------------------------
REDACT_CHARS = VALUE_CHARS * 8  # the head of a text searched for secrets before it is cut


def _redact(text: str) -> str:
    """`text` with secret values replaced by [REDACTED:kind] (miners/secrets.py, the rules that
    keep secrets out of drawers). If the redaction can't run, nothing of the text is kept."""
    try:
        return redact(text).text
    except Exception:  # never keep a text that was not screened
        log.exception("could not screen an argument for secrets; it is not recorded")
        return "[not shown]"


def prepare() -> None:
    """Load the secret rules now (a long-lived server: before the first call needs them)."""
    _redact("warm-up")


def _preview(text: str, cap: int = VALUE_CHARS) -> str:
    """The first `cap` characters of `text`, secrets redacted, its length noted when cut."""
    shown = _redact(text[:REDACT_CHARS])
    if len(text) <= cap and len(shown) <= cap:
        return shown
    return f"{shown[: cap - 1]}… ({len(text):,} chars)"


def _summary_value(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return _preview(value)
    if isinstance(value, list | tuple):
        shown = [_summary_value(v) if not isinstance(v, list | dict) else "…" for v in value]
        if len(shown) > LIST_ITEMS:
            return [*shown[:LIST_ITEMS], f"… ({len(shown):,} items)"]
        return shown
    if isinstance(value, dict):
        return f"{{{len(value)} fields}}"
    return _preview(str(value))


def summarize_arguments(arguments: Any) -> dict[str, Any]:
    """A call's arguments as the log keeps them: secret values redacted, each string cut to
    VALUE_CHARS characters (its full length noted), lists to their first LIST_ITEMS items, at
    most MAX_ARGS names, about ARGS_CHARS characters in all."""
    if not isinstance(arguments, Mapping):
        return {"(arguments)": _summary_value(arguments)}
    out: dict[str, Any] = {}
    size = 2
    for n, (key, value) in enumerate(arguments.items()):
        if n >= MAX_ARGS or size > ARGS_CHARS:
            out["…"] = f"{len(arguments) - n} more"
            break
        name = _preview(str(key), KEY_CHARS)
        out[name] = _summary_value(value)
        size += len(json.dumps({name: out[name]}, ensure_ascii=False, default=str))
    return out


def returned_drawer_ids(result: Any) -> list[str]:
    """Every drawer id a tool's result carries (a `drawer_id` field, up to three levels down:
    a search's results, a listing's drawers, a diary's entries), in order, once each."""
    found: dict[str, None] = {}

    def walk(value: Any, depth: int) -> None:
        if depth > 3:
            return
        if isinstance(value, dict):
            drawer_id = value.get("drawer_id")
            if isinstance(drawer_id, str):
                found.setdefault(drawer_id)
            for item in value.values():
                if isinstance(item, dict | list):
                    walk(item, depth + 1)
        elif isinstance(value, list):
            for item in value:
                walk(item, depth + 1)

    walk(result, 0)
    return list(found)


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# -- writing ----------------------------------------------------------------------------------
class ActivityLog:
    """The activity log of one palace, written by one MCP server (any number of servers may
    write the same file). Opened on the first call; never raises: a call's answer never
    depends on its record."""

    def __init__(self, palace_path: Path, max_rows: int = MAX_ROWS) -> None:
        self.palace_path = palace_path
        self.path = palace_path / ACTIVITY_FILE
        self.max_rows = max_rows
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.RLock()
        self.disabled: str | None = None  # why nothing is recorded (said once on stderr)
        self._warned: set[str] = set()

    def record(
        self,
        caller: Caller,
        tool: str,
        arguments: Any,
        result: Any,
        duration_ms: float,
        failure: Failure | None = None,
    ) -> None:
        if self.disabled is not None:
            return
        try:
            ids = returned_drawer_ids(result) if failure is None else []
            row = (
                _now(),
                _cut(caller.client, 200),
                _cut(caller.client_version, 100),
                caller.transport,
                _cut(caller.peer, 200),
                _cut(tool, 200),
                json.dumps(summarize_arguments(arguments), ensure_ascii=False, default=str),
                json.dumps(ids[:MAX_STORED_IDS], ensure_ascii=False),
                len(ids),
                round(duration_ms, 3),  # to the microsecond: a refusal takes < 0.05 ms
                "ok" if failure is None else "error",
                None if failure is None else failure.kind,
                None if failure is None else _cut(failure.message, MESSAGE_CHARS),
            )
        except Exception:  # a summary we could not make: the call's answer stands
            log.exception("could not summarise the %s call for the activity log", tool)
            return
        with self._lock:
            self._insert(row)

    def _insert(self, row: tuple[Any, ...]) -> None:
        try:
            conn = self._connect()
            if conn is None:
                return
            with conn:
                cur = conn.execute(
                    "INSERT INTO calls (at, client, client_version, transport, peer, tool, "
                    "arguments, drawer_ids, drawers, duration_ms, outcome, error_kind, message) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    row,
                )
                oldest_kept = int(cur.lastrowid) - self.max_rows
                conn.execute("DELETE FROM calls WHERE id <= ?", (oldest_kept,))
        except (OSError, sqlite3.Error, MemPalaceError) as exc:
            self._failed(exc)

    def _connect(self) -> sqlite3.Connection | None:
        if self._conn is not None:
            return self._conn
        if not self.palace_path.is_dir():
            return None  # no palace yet: the first call that files a drawer makes one
        if not _may_write(self.path):
            self._disable(
                f"The palace folder {self.palace_path} is read-only for this user, so MCP calls "
                "are not recorded in its activity log (mempalace activity). Searching and "
                "reading work; tools that write are refused."
            )
            return None
        conn = open_palace_db(self.path, _SCHEMA, "The MCP activity log", hint=_hint(self.path))
        conn.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
        self._conn = conn
        return conn

    def _failed(self, exc: Exception) -> None:
        failure = failure_of(exc, self.path, "record the call in the activity log")
        if failure.kind == "permission_denied":
            self._disable(
                f"{failure.message} MCP calls are not recorded in the activity log "
                "(mempalace activity); every call still answers."
            )
            return
        if failure.kind not in self._warned:  # once per kind: a full disk, a busy file...
            self._warned.add(failure.kind)
            first = failure.message.split(". ")[0].rstrip(".")
            log.warning(
                "An MCP call was not recorded in the activity log: %s. Calls still answer, and "
                "are recorded again once the log can be written.%s",
                first,
                f" Hint: {failure.hint}" if failure.hint else "",
            )
        if failure.kind in ("corrupt", "unexpected"):
            self.close()

    def _disable(self, why: str) -> None:
        self.disabled = why
        log.warning("%s", why)
        self.close()

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _may_write(path: Path) -> bool:
    folder = path.parent
    if not os.access(folder, os.W_OK | os.X_OK):
        return False
    return not path.exists() or os.access(path, os.W_OK)


def _cut(text: str | None, cap: int) -> str | None:
    if text is None:
        return None
    text = str(text)
    return text if len(text) <= cap else text[: cap - 1] + "…"


# -- reading ----------------------------------------------------------------------------------
def read_activity(
    palace_path: Path,
    limit: int = 50,
    tool: str | None = None,
    client: str | None = None,
    errors_only: bool = False,
) -> list[ActivityRow]:
    """The newest recorded MCP calls first: at most `limit`, only `tool`'s (exact name, with or
    without the `mempalace_` prefix) or `client`'s when given, only failed ones with
    `errors_only`. An empty list when nothing was recorded yet. Opens the file read-only if
    this user may not write it."""
    if limit < 1:
        raise InvalidInputError(f"The limit must be at least 1, not {limit}.")
    conn = _open_for_reading(Path(palace_path))
    if conn is None:
        return []
    try:
        clauses, params = [], []
        if tool:
            clauses.append("tool IN (?, ?)")
            params += [tool, tool if tool.startswith("mempalace_") else f"mempalace_{tool}"]
        if client:
            clauses.append("client = ?")
            params.append(client)
        if errors_only:
            clauses.append("outcome != 'ok'")
        where = " AND ".join(clauses) or "1"
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM calls WHERE {where} ORDER BY id DESC LIMIT ?",
            [*params, limit],
        ).fetchall()
    finally:
        conn.close()
    return [_row(r) for r in rows]


def activity_tools(palace_path: Path) -> list[str]:
    """The tool names the log holds, for a hint when a --tool filter matches nothing."""
    conn = _open_for_reading(Path(palace_path))
    if conn is None:
        return []
    try:
        return [r[0] for r in conn.execute("SELECT DISTINCT tool FROM calls ORDER BY tool")]
    finally:
        conn.close()


def _open_for_reading(palace_path: Path) -> sqlite3.Connection | None:
    path = palace_path / ACTIVITY_FILE
    if not path.exists():
        return None
    return open_palace_db(path, _SCHEMA, "The MCP activity log", hint=_hint(path))


def _hint(path: Path) -> str:
    return f"Move it aside (mv {path} {path}.bad); the MCP server starts a new one."


def _row(r: tuple[Any, ...]) -> ActivityRow:
    """A row of `_COLUMNS` (ActivityRow's fields, in order), its JSON columns decoded."""
    values = list(r)
    values[7], values[8] = _json(r[7], {}), _json(r[8], [])
    return ActivityRow(*values)


def _json(text: str | None, empty: Any) -> Any:
    try:
        value = json.loads(text or "")
    except ValueError:
        return empty
    return value if isinstance(value, type(empty)) else empty


__all__ = [
    "ACTIVITY_FILE",
    "MAX_ROWS",
    "ActivityLog",
    "ActivityRow",
    "Caller",
    "activity_folder",
    "activity_tools",
    "read_activity",
    "returned_drawer_ids",
    "summarize_arguments",
]
