"""Watch mode: keep the palace in step with a folder until interrupted.

Filesystem events (watchdog; inotify on Linux, or polling with `--poll` or when inotify can't
be used) are filtered with the same rules as `mine`, debounced per path, and handed to the
palace's watch part (`Watch.mine_paths`, service/watching.py) in batches: a burst such as a
`git checkout` of 500 files becomes a few batches, not 500 runs. SIGINT and SIGTERM let the
batch in flight finish, then `run` returns.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mempalace_cli.common.config import PROJECT_FILE
from mempalace_cli.common.errors import MemPalaceError
from mempalace_cli.common.lazy import lazy
from mempalace_cli.miners.paths import storable
from mempalace_cli.service.watching import PathRules

if TYPE_CHECKING:
    from mempalace_cli.service import Palace

watchdog_observers = lazy("watchdog.observers")
watchdog_polling = lazy("watchdog.observers.polling")

DEBOUNCE_SECONDS = 0.5  # a path must be quiet this long before it is mined
MAX_WAIT_SECONDS = 2.0  # ...unless events keep coming: then a batch goes anyway
POLL_INTERVAL = 1.0  # seconds between two scans of the polling observer
RETRY_SECONDS = 2.0  # a batch that failed (say, the palace was locked) is retried after this
MAX_ATTEMPTS = 3  # a batch failing for a reason other than the palace's is tried this often


class BatchFailed(MemPalaceError):
    """A watch batch failed for a reason that is not a palace error (logged, never fatal)."""

    kind = "batch_failed"


# While idle, the palace index is checked against the drawer store this often, so a write by
# another program is mirrored (and reported) within this bound (consistency.py).
CHECK_SECONDS = 2.0

BatchFn = Callable[[dict[str, Any]], None]


class FolderWatcher:
    """Collects relevant filesystem events under one folder and mines them in batches."""

    def __init__(
        self,
        palace: Palace,
        directory: str | Path,
        wing: str | None = None,
        agent: str | None = None,
        mode: str = "projects",
        poll: bool = False,
        debounce: float = DEBOUNCE_SECONDS,
        max_wait: float = MAX_WAIT_SECONDS,
        on_batch: BatchFn | None = None,
        on_error: Callable[[MemPalaceError], None] | None = None,
        on_start: BatchFn | None = None,
        on_repair: BatchFn | None = None,
        keep_secrets: bool = False,  # the CLI's --keep-secrets (see miners/secrets.py)
    ) -> None:
        self.palace = palace
        self.keep_secrets = keep_secrets
        self.root = Path(directory).resolve()
        self.wing, self.agent, self.mode = wing, agent, mode
        self.poll = poll
        self.debounce, self.max_wait = debounce, max_wait
        self.on_batch = on_batch or (lambda report: None)
        self.on_error = on_error or (lambda exc: None)
        self.on_start = on_start or (lambda info: None)  # a batch was handed to the palace
        self.on_repair = on_repair or (lambda repair: None)
        self._repairs_seen = len(palace.consistency.repairs)
        self._next_check = time.monotonic() + CHECK_SECONDS
        self.observer_kind = ""
        self.batches = 0
        self._rules: PathRules = palace.watching.path_rules(self.root)
        self._pending: dict[str, float] = {}  # path -> time of its last event
        self._first_pending = 0.0
        self._last_event = 0.0
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._observer: Any = None
        self._attempts: dict[str, int] = {}  # path -> failed batches in a row (not palace errors)

    # -- events (watchdog's thread) ---------------------------------------------------------
    def _note(self, path: str | bytes, is_dir: bool) -> None:
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        p = Path(path)
        try:
            if self._rule_file(p):
                pass  # the rules themselves changed: the batch re-checks the folder
            elif not self._rules.relevant(p, is_dir=is_dir):
                return
        except Exception:  # noqa: BLE001 - never kill watchdog's thread; the batch decides
            pass
        now = time.monotonic()
        with self._cond:
            if not self._pending:
                self._first_pending = now
            self._pending[str(p)] = now
            self._last_event = now
            self._cond.notify()

    def _rule_file(self, p: Path) -> bool:
        if p.name == PROJECT_FILE:
            return p.parent == self.root
        if p.name == ".gitignore":
            return p.parent == self.root or self._rules.relevant(p.parent, is_dir=True)
        return False

    def dispatch(self, event: Any) -> None:
        """watchdog's handler entry point (duck-typed, so watchdog loads only in `start`)."""
        kind = event.event_type
        if kind in ("opened", "closed_no_write"):
            return
        if event.is_directory and kind == "modified":
            return  # a folder's own mtime; the files in it report themselves
        self._note(event.src_path, event.is_directory)
        dest = getattr(event, "dest_path", "")
        if dest:
            self._note(dest, event.is_directory)

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> str:
        """Start observing; returns the observer used: "inotify" (native) or "polling"."""
        if not self.poll:
            try:
                observer = watchdog_observers.Observer()
                observer.schedule(self, str(self.root), recursive=True)
                observer.start()
                self._observer, self.observer_kind = observer, _native_name(observer)
                return self.observer_kind
            except OSError:  # inotify limits, or a filesystem that doesn't report events
                with suppress(Exception):
                    observer.stop()
        observer = watchdog_polling.PollingObserver(timeout=POLL_INTERVAL)
        observer.schedule(self, str(self.root), recursive=True)
        observer.start()
        self._observer, self.observer_kind = observer, "polling"
        return self.observer_kind

    def stop(self) -> None:
        """Ask `run` to return once the batch in flight (if any) is filed."""
        self._stop.set()
        with self._cond:
            self._cond.notify()

    def close(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None

    def run(self) -> int:
        """Mine batches until `stop()`; returns how many batches were filed."""
        try:
            while not self._stop.is_set():
                batch = self._next_batch()
                if batch:
                    self._mine(batch)
                elif time.monotonic() >= self._next_check:
                    self._check_store()
                self._report_repairs()
        finally:
            self.close()
        return self.batches

    def _next_batch(self) -> list[str]:
        with self._cond:
            self._cond.wait(timeout=0.1)
            if not self._pending or self._stop.is_set():
                return []
            now = time.monotonic()
            quiet = now - self._last_event >= self.debounce
            overdue = now - self._first_pending >= self.max_wait
            ready = [p for p, t in self._pending.items() if now - t >= self.debounce]
            if not ready or not (quiet or overdue):
                return []
            for p in ready:
                del self._pending[p]
            self._first_pending = min(self._pending.values(), default=now)
            return ready

    def _check_store(self) -> None:
        """Idle: bring the palace index in step with the drawer store if another program
        wrote to it (a cheap check; a repair is reported through `on_repair`)."""
        self._next_check = time.monotonic() + CHECK_SECONDS
        try:
            self.palace.sync()
        except MemPalaceError as exc:
            self.on_error(exc)
        except Exception as exc:  # noqa: BLE001 - never end the watch; say what went wrong
            what = f"{type(exc).__name__}: {storable(str(exc))[:300]}"
            self.on_error(
                BatchFailed(
                    f"Checking the palace index against the drawer store failed ({what}).",
                    hint="The watcher keeps running and checks again shortly.",
                )
            )

    def _report_repairs(self) -> None:
        repairs = self.palace.consistency.repairs
        for repair in repairs[self._repairs_seen :]:
            self.on_repair(repair.to_dict())
        self._repairs_seen = len(repairs)

    def _mine(self, paths: list[str]) -> None:
        """Mine one batch. No error ends the watch: a palace error (locked, say) is retried
        until it clears; anything else (a bug, an OS error) is logged and the batch retried
        up to MAX_ATTEMPTS times, then its paths are dropped (and logged) until they change."""
        self.on_start({"batch": self.batches + 1, "paths": len(paths)})
        try:
            report = self.palace.watching.mine_paths(
                self.root,
                paths,
                wing=self.wing,
                agent=self.agent,
                mode=self.mode,
                keep_secrets=self.keep_secrets,
            )
            if report["full_rescan"]:  # rules may have changed
                self._rules = self.palace.watching.path_rules(self.root)
        except MemPalaceError as exc:
            self.on_error(exc)
            self._retry(paths)
            return
        except Exception as exc:  # noqa: BLE001 - the watcher must outlive any one batch
            self._failed(paths, exc)
            return
        for p in paths:
            self._attempts.pop(p, None)
        self.batches += 1
        report["batch"] = self.batches
        report["paths"] = len(paths)
        self.on_batch(report)

    def _retry(self, paths: list[str]) -> None:
        retry_at = time.monotonic() + RETRY_SECONDS - self.debounce
        with self._cond:
            for p in paths:
                self._pending.setdefault(p, retry_at)
            self._first_pending = min(self._pending.values(), default=retry_at)

    def _failed(self, paths: list[str], exc: Exception) -> None:
        again = []
        for p in paths:
            self._attempts[p] = self._attempts.get(p, 0) + 1
            if self._attempts[p] < MAX_ATTEMPTS:
                again.append(p)
            else:
                del self._attempts[p]
        dropped = len(paths) - len(again)
        what = f"{type(exc).__name__}: {storable(str(exc))[:300]}"
        self.on_error(
            BatchFailed(
                f"A batch of {len(paths)} changed paths failed ({what}).",
                hint=(
                    f"{dropped} paths failed {MAX_ATTEMPTS} times and are left until they change "
                    "again; `mempalace mine DIR` re-checks every file and names each skip."
                    if dropped
                    else "The watcher keeps running and tries the batch again."
                ),
            )
        )
        if again:
            self._retry(again)


def _native_name(observer: Any) -> str:
    name = type(observer).__name__.lower()
    for kind in ("inotify", "fsevents", "kqueue", "windowsapi"):
        if kind in name:
            return kind
    return name.removesuffix("observer") or "native"


@contextmanager
def stop_on_signals(watcher: FolderWatcher) -> Iterator[None]:
    """SIGINT and SIGTERM ask the watcher to stop after the batch in flight (main thread)."""
    previous = {}

    def handler(signum: int, frame: Any) -> None:
        watcher.stop()

    for sig in (signal.SIGINT, signal.SIGTERM):
        previous[sig] = signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
