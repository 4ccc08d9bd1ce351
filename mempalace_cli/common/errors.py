"""Typed errors raised by the core.

The core never prints or exits: it raises one of these, and the adapters (the CLI, the
MCP server) turn it into a message, a hint and an exit status with one function,
`failure_of`, from one table, `EXIT_STATUS`.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path

INIT_HINT = "Run: mempalace init <dir> && mempalace mine <dir>"


class MemPalaceError(Exception):
    """Base class for every error a user can cause or fix."""

    kind = "error"

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def to_dict(self) -> dict[str, str | None]:
        return {"message": self.message, "hint": self.hint, "kind": self.kind}


class NoPalaceError(MemPalaceError):
    """There is no palace at the selected path yet."""

    kind = "no_palace"

    def __init__(self, palace_path: str, hint: str = INIT_HINT) -> None:
        super().__init__(f"No palace found at {palace_path}.", hint)
        self.palace_path = palace_path


class ConfigError(MemPalaceError):
    """A config file is unreadable or holds a value we can't use."""

    kind = "config"


class InvalidInputError(MemPalaceError):
    """An argument is malformed: a bad date, an empty query, an inverted interval..."""

    kind = "invalid_input"


class NotFoundError(MemPalaceError):
    """Something named by the caller does not exist (a directory, a drawer id...)."""

    kind = "not_found"


class PalaceLockedError(MemPalaceError):
    """Another process held the palace's write lock for longer than we were willing to wait."""

    kind = "locked"


class PalaceCorruptError(MemPalaceError):
    """The palace's files exist but can't be read. Never recreated silently."""

    kind = "corrupt"


class IncompatiblePalaceError(MemPalaceError):
    """The drawer collection was embedded with a model other than ours."""

    kind = "incompatible"


class ModelUnavailableError(MemPalaceError):
    """The offline embedding model files can't be found or loaded."""

    kind = "model"


class StorageError(MemPalaceError):
    """The operating system refused a read or write: disk full, permission denied, a path
    that is not a directory. The palace's files are not damaged; the cause is outside them."""

    kind = "storage"


class DiskFullError(StorageError):
    kind = "disk_full"


class PermissionDeniedError(StorageError):
    kind = "permission_denied"


class NotADirectoryPathError(StorageError):
    kind = "not_a_directory"


def from_os_error(exc: OSError, path: object, doing: str) -> StorageError:
    """Name an OS error for what it is (never as corruption), with what to do next."""
    where = getattr(exc, "filename", None) or path
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return DiskFullError(
            f"The disk is full: could not {doing} ({where}). The palace is not damaged: an "
            "unfinished write is completed or undone from the drawer store by the next command.",
            hint="Free some space on that disk (df -h shows it) and run the command again.",
        )
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        what = (
            "the file system is read-only"
            if exc.errno == errno.EROFS
            else "this user may not write there"
        )
        return PermissionDeniedError(
            f"Permission denied: could not {doing} ({where}); {what}.",
            hint="Check the owner and permissions of the palace folder (ls -ld), or choose "
            "another palace with --palace. Reading (search, status) works on a read-only "
            "palace.",
        )
    if exc.errno in (errno.ENOTDIR, errno.EEXIST, errno.EISDIR):
        kind = "a directory" if exc.errno == errno.EISDIR else "a file"
        return NotADirectoryPathError(
            f"Could not {doing}: {where} (or a folder above it) is {kind}, where a "
            f"{'file' if exc.errno == errno.EISDIR else 'folder'} is needed.",
            hint="Point MEMPALACE_HOME / --palace at a folder (or a path that does not exist "
            "yet), or move the file out of the way.",
        )
    return StorageError(
        f"Could not {doing} ({where}): {exc.strerror or exc}.",
        hint="Check the disk and the palace folder's permissions, then run the command again.",
    )


def from_sqlite_error(exc: Exception, path: object) -> StorageError | None:
    """SQLite's (or Chroma's) messages for a full disk or a read-only file, named as such; None
    otherwise (then the caller reports what it is: usually a damaged file)."""
    text = str(exc).lower()
    if "disk is full" in text or "no space left" in text:
        return from_os_error(OSError(errno.ENOSPC, "No space left on device"), path, "write")
    if any(w in text for w in ("readonly", "read-only", "permission denied", "unable to open")):
        if _writable(path):
            return None
        return from_os_error(OSError(errno.EACCES, "Permission denied"), path, "write")
    if "disk i/o error" in text and disk_full(path):
        return from_os_error(OSError(errno.ENOSPC, "No space left on device"), path, "write")
    return None


def write_failure(exc: Exception, path: object, what: str) -> MemPalaceError:
    """A write that failed with an error we don't recognise (Chroma's own messages rarely say
    why): a full disk or a read-only folder is checked for and named; else the message."""
    named = from_sqlite_error(exc, path)
    if named is not None:
        return named
    if disk_full(path):
        return from_os_error(OSError(errno.ENOSPC, "No space left on device"), path, "write")
    if not _writable(path):
        return from_os_error(OSError(errno.EACCES, "Permission denied"), path, "write")
    return StorageError(
        f"{what} refused the write: {exc}. The palace index notes the write as unfinished "
        "and is repaired from the drawer store by the next command.",
        hint="Check the disk (df -h) and the palace folder, then run the command again.",
    )


def _writable(path: object) -> bool:
    p = Path(str(path))
    target = p if p.exists() else p.parent
    return os.access(target, os.W_OK) and os.access(p.parent, os.W_OK)


PROBE_BYTES = 4 * 1024 * 1024


def disk_full(path: object) -> bool:
    """True when the folder of `path` can't take a few more megabytes: a probe file is
    written (and removed), since free-space counters can't tell what a write needs."""
    folder = Path(str(path))
    folder = folder if folder.is_dir() else folder.parent
    try:
        fd, name = tempfile.mkstemp(prefix=".mempalace-space-", dir=folder)
    except OSError as exc:
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    try:
        os.posix_fallocate(fd, 0, PROBE_BYTES)
        return False
    except OSError as exc:
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    finally:
        os.close(fd)
        os.unlink(name)


class ServerError(MemPalaceError):
    """The Chroma server answered with an error we can't read as anything more specific."""

    kind = "server"


class ServerUnavailableError(ServerError):
    """The Chroma server can't be reached (refused, no such host, TLS handshake failed)."""

    kind = "server_unavailable"


class ServerTimeoutError(ServerError):
    """The Chroma server took longer than chroma_timeout_seconds to answer."""

    kind = "server_timeout"


class ServerAuthError(ServerError):
    """The Chroma server refused our token (401/403), or wants one and we sent none."""

    kind = "server_auth"


class MigrationMismatchError(MemPalaceError):
    """After `migrate`, the target's records do not match the source's."""

    kind = "migration_mismatch"


# -- one table and one function for every adapter (CLI, MCP server, web page) -------------------
EXIT_OK = 0
EXIT_UNEXPECTED = 1
EXIT_STATUS: dict[type[MemPalaceError], int] = {
    InvalidInputError: 2,
    NoPalaceError: 3,
    NotFoundError: 4,
    PalaceLockedError: 5,
    PalaceCorruptError: 6,
    IncompatiblePalaceError: 6,
    ConfigError: 7,
    ModelUnavailableError: 8,
    # The operating system refused: named for what it is, never as a damaged palace.
    DiskFullError: 9,
    PermissionDeniedError: 10,
    NotADirectoryPathError: 11,
    StorageError: 12,
    # A Chroma server (a team palace): down or slow, refusing our token; migrate's check.
    ServerError: 13,
    ServerAuthError: 14,
    MigrationMismatchError: 15,
}
UNEXPECTED_KIND = "unexpected"


def exit_status(exc: MemPalaceError) -> int:
    for cls in type(exc).__mro__:
        if cls in EXIT_STATUS:
            return EXIT_STATUS[cls]
    return EXIT_UNEXPECTED


@dataclass(frozen=True)
class Failure:
    """What any adapter says about a failure: the exit status (the CLI's), the message, the
    hint (what to do next) and the kind (`MemPalaceError.kind`, or "unexpected")."""

    status: int
    message: str
    hint: str | None
    kind: str

    @property
    def expected(self) -> bool:
        """A failure the table names (a user can fix it); False for a bug or an unknown error."""
        return self.kind != UNEXPECTED_KIND

    def text(self) -> str:
        """Message and hint in one line, as an MCP tool error says it."""
        return f"{self.message} Hint: {self.hint}" if self.hint else self.message

    def to_dict(self) -> dict[str, str | None]:
        return {"message": self.message, "hint": self.hint, "kind": self.kind}


def as_palace_error(
    exc: BaseException, path: object = "the palace", doing: str = "finish the command"
) -> MemPalaceError | None:
    """The typed error an exception stands for: itself if it is one; an OS error (disk full,
    permission denied, not a directory) or SQLite's words for them, named as such, for `path`
    (the file or folder written; an OSError's own filename wins) while trying to `doing`; a
    database that stayed busy as a lock. Causes (`raise ... from`) are looked through. None when
    it is none of these: a bug, or an error nobody named yet."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, MemPalaceError):
            return current
        if isinstance(current, OSError):
            return from_os_error(current, current.filename or path, doing)
        if isinstance(current, sqlite3.Error):
            named = from_sqlite_error(current, path)
            if named is not None:
                return named
            if "database is locked" in str(current).lower():
                return PalaceLockedError(
                    f"The palace's database at {path} stayed busy (another process kept it "
                    "locked) and the command gave up waiting. Nothing is damaged.",
                    hint="Run the command again; if it keeps happening, look for a stuck "
                    "mempalace process (a mine or watch in another terminal?).",
                )
        else:
            text = str(current).lower()
            if "disk is full" in text or "no space left" in text:
                return from_sqlite_error(current, path)
        current = current.__cause__
    return None


def failure_of(
    exc: BaseException,
    path: object = "the palace",
    doing: str = "finish the command",
    unexpected_hint: str | None = None,
) -> Failure:
    """The one mapping from any exception to (exit status, message, hint, kind), for every
    adapter: typed errors and the operating system's refusals by `EXIT_STATUS`; anything else
    is unexpected (exit status 1), with `unexpected_hint` saying what to do."""
    named = as_palace_error(exc, path, doing)
    if named is None:
        return Failure(
            EXIT_UNEXPECTED,
            f"Unexpected {type(exc).__name__} inside the palace: {exc}.",
            unexpected_hint
            or "Run the command again; if it happens again, report it with the message above.",
            UNEXPECTED_KIND,
        )
    return Failure(exit_status(named), named.message, named.hint, named.kind)
