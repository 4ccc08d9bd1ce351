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
            f"The disk is full: could not {doing} ({where}). Nothing is damaged; the write "
            "that failed was not recorded.",
            hint="Free some space on that disk (df -h shows it) and run the command again.",
        )
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        what = "is read-only" if exc.errno == errno.EROFS else "is not permitted"
        return PermissionDeniedError(
            f"Permission denied: could not {doing} ({where}); the file system {what} for "
            "this user.",
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
    """SQLite's messages for a full disk or a read-only file, named as such; None otherwise
    (then the caller reports what it is: usually a damaged file)."""
    import errno

    text = str(exc).lower()
    if "database or disk is full" in text or "disk i/o error" in text and _disk_full(path):
        return from_os_error(OSError(errno.ENOSPC, "No space left on device"), path, "write")
    if "readonly" in text or "read-only" in text or "unable to open database file" in text:
        if _writable(path):
            return None
        return from_os_error(OSError(errno.EACCES, "Permission denied"), path, "write")
    return None


def _writable(path: object) -> bool:
    import os
    from pathlib import Path

    p = Path(str(path))
    target = p if p.exists() else p.parent
    return os.access(target, os.W_OK) and os.access(p.parent, os.W_OK)


def _disk_full(path: object) -> bool:
    import os
    from pathlib import Path

    try:
        st = os.statvfs(Path(str(path)).parent)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < 1_000_000
