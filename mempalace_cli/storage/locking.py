"""One cross-process write lock per palace.

Several processes writing one embedded Chroma store damage it silently, so every palace write
(drawers, the lexical index, the knowledge graph) runs under this lock, held only for short
write transactions. Waiting is bounded: past the timeout the caller gets a clear error.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from mempalace_cli.common.errors import (
    MemPalaceError,
    NotADirectoryPathError,
    PalaceLockedError,
    from_os_error,
)

LOCK_FILE = ".mempalace-write.lock"


class PalaceLock:
    """A re-entrant cross-process lock. `on_acquire` runs each time the lock is taken from
    another process's hands (the outermost acquisition), before the caller writes: the palace
    uses it to drop Chroma handles that went stale while another process wrote."""

    def __init__(
        self,
        palace_path: Path,
        timeout: float = 60.0,
        on_acquire: Callable[[], None] | None = None,
    ) -> None:
        self.path = palace_path / LOCK_FILE
        self.timeout = timeout
        self.on_acquire = on_acquire
        self._lock: FileLock | None = None
        self._guard = threading.Lock()
        # Threads of one process (the MCP server, watch mode) take turns too; the file lock
        # alone would let them in together, since they share its re-entrancy count.
        self._threads = threading.RLock()

    def _file_lock(self) -> FileLock:
        with self._guard:
            if self._lock is None:
                try:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise from_os_error(exc, self.path.parent, "create the palace folder") from exc
                self._lock = FileLock(str(self.path), thread_local=False)
            return self._lock

    @property
    def held(self) -> bool:
        return self._lock is not None and self._lock.is_locked

    @contextmanager
    def hold(self) -> Iterator[None]:
        lock = self._file_lock()
        if not self._threads.acquire(timeout=self.timeout):
            raise self._locked_error()
        try:
            lock.acquire(timeout=self.timeout)
        except Timeout as exc:
            self._threads.release()
            raise self._locked_error() from exc
        except OSError as exc:
            self._threads.release()
            raise self._lock_path_error(exc) from exc
        try:
            if lock.lock_counter == 1 and self.on_acquire is not None:
                self.on_acquire()
            yield
        finally:
            lock.release()
            self._threads.release()

    def _lock_path_error(self, exc: OSError) -> MemPalaceError:
        if self.path.is_dir():
            return NotADirectoryPathError(
                f"The palace's lock file {self.path} is a directory, so no write can take the "
                "lock. Nothing was written.",
                hint=f"Remove it (rmdir {self.path}, or move it aside if it holds files) and "
                "run the command again.",
            )
        return from_os_error(exc, self.path, "take the palace's write lock")

    def _locked_error(self) -> PalaceLockedError:
        return PalaceLockedError(
            f"Another process has been writing to the palace at {self.path.parent} for over "
            f"{self.timeout:g} s.",
            hint="Wait for it to finish (a mine or watch in another terminal?) and try again, "
            "or raise lock_timeout_seconds in config.toml.",
        )
