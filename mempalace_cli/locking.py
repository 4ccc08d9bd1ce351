"""One cross-process write lock per palace.

Several processes writing one embedded Chroma store damage it silently, so every palace write
(drawers, the lexical index, the knowledge graph) runs under this lock, held only for short
write transactions. Waiting is bounded: past the timeout the caller gets a clear error.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from mempalace_cli.errors import PalaceLockedError

LOCK_FILE = ".mempalace-write.lock"


class PalaceLock:
    def __init__(self, palace_path: Path, timeout: float = 60.0) -> None:
        self.path = palace_path / LOCK_FILE
        self.timeout = timeout
        self._lock: FileLock | None = None

    def _file_lock(self) -> FileLock:
        if self._lock is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # thread_local=False: threads of one process (the MCP server, watch mode) share the
            # lock's re-entrancy count; another process still waits.
            self._lock = FileLock(str(self.path), thread_local=False)
        return self._lock

    @contextmanager
    def hold(self) -> Iterator[None]:
        lock = self._file_lock()
        try:
            lock.acquire(timeout=self.timeout)
        except Timeout as exc:
            raise PalaceLockedError(
                f"Another process has been writing to the palace at {self.path.parent} for over "
                f"{self.timeout:g} s.",
                hint="Wait for it to finish (a mine or watch in another terminal?) and try again, "
                "or raise lock_timeout_seconds in config.toml.",
            ) from exc
        try:
            yield
        finally:
            lock.release()
