"""Typed errors raised by the core.

The core never prints or exits: it raises one of these, and the adapters (the CLI, the
MCP server) turn it into a message, a hint and an exit status in one place each.
"""

from __future__ import annotations

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
    import errno

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
    import errno

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
    import errno

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
    import os
    from pathlib import Path

    p = Path(str(path))
    target = p if p.exists() else p.parent
    return os.access(target, os.W_OK) and os.access(p.parent, os.W_OK)


PROBE_BYTES = 4 * 1024 * 1024


def disk_full(path: object) -> bool:
    """True when the folder of `path` can't take a few more megabytes: a probe file is
    written (and removed), since free-space counters can't tell what a write needs."""
    import errno
    import os
    import tempfile
    from pathlib import Path

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
