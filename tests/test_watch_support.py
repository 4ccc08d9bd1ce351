"""Helpers for the watch, concurrency and crash tests (no tests here): run `mempalace` as a
real subprocess and read watch mode's JSON lines as they come."""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def mempalace_command() -> list[str]:
    exe = shutil.which(
        "mempalace",
        path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    )
    return [exe] if exe else [sys.executable, "-m", "mempalace_cli"]


def cli_env(home: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "MEMPALACE_HOME": str(home), **extra}
    for key in ("MEMPALACE_PALACE", "MEMPALACE_CHROMA_URL", "MEMPALACE_TEST_CRASH_AT"):
        if key not in extra:
            env.pop(key, None)
    return env


def run_cli(home: Path, *args: str, timeout: float = 300, **env: str) -> Any:
    """Run `mempalace ARGS --json` in a subprocess; return its JSON document."""
    proc = subprocess.run(
        [*mempalace_command(), *map(str, args), "--json"],
        env=cli_env(home, **env),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout)


def wait_until(predicate: Callable[[], Any], timeout: float = 30.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.1)


class WatchProcess:
    """`mempalace --palace P mine DIR --watch --json [--poll]` with its JSON lines in a queue."""

    def __init__(self, home: Path, palace: Path, folder: Path, *extra: str) -> None:
        self.stderr_path = home / f"watch-{time.monotonic_ns()}.err"
        self._stderr = self.stderr_path.open("w")
        self.proc = subprocess.Popen(
            [
                *mempalace_command(),
                "--palace",
                str(palace),
                "mine",
                str(folder),
                "--watch",
                "--json",
                *extra,
            ],
            env=cli_env(home),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
        )
        self.lines: queue.Queue[dict[str, Any] | None] = queue.Queue()  # None: stdout ended
        self.events: list[dict[str, Any]] = []
        self.non_json: list[str] = []
        self._ended = False  # the reader queued the end of stdout
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        """Queue each JSON line as it comes, then None when the process closes its stdout."""
        assert self.proc.stdout is not None
        try:
            for line in self.proc.stdout:
                try:
                    self.lines.put(json.loads(line))
                except json.JSONDecodeError:
                    self.non_json.append(line)
        finally:
            self.lines.put(None)

    def _take(self, line: dict[str, Any] | None) -> None:
        if line is None:
            self._ended = True
        else:
            self.events.append(line)

    def drain(self) -> list[dict[str, Any]]:
        while True:
            try:
                self._take(self.lines.get_nowait())
            except queue.Empty:
                return self.events

    def batches(self) -> list[dict[str, Any]]:
        return [e for e in self.drain() if e["event"] == "batch"]

    def errors(self) -> list[dict[str, Any]]:
        return [e for e in self.drain() if e["event"] == "error"]

    def wait_event(self, kind: str, timeout: float = 120.0) -> dict[str, Any]:
        """The first line of this kind (seen before, or the next ones as they come): blocks
        on the reader's queue, so it returns the moment the line is read."""
        deadline = time.monotonic() + timeout
        while True:
            seen = next((e for e in self.drain() if e["event"] == kind), None)
            if seen is not None:
                return seen
            if self._ended:
                raise AssertionError(f"watch ended without a {kind!r} line\n{self.stderr()}")
            try:
                self._take(self.lines.get(timeout=max(deadline - time.monotonic(), 0)))
            except queue.Empty:
                raise AssertionError(
                    f"timed out after {timeout:g} s waiting for a {kind!r} line\n{self.stderr()}"
                ) from None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self._stderr.close()
        # The process has exited, so its stdout ends: the reader queues the last lines and stops.
        self._reader.join(timeout=60)
        assert not self._reader.is_alive(), "the reader of watch's output did not finish"
        self.drain()
        return code

    def stderr(self) -> str:
        self._stderr.flush()
        return self.stderr_path.read_text(errors="replace")[-4000:]


def palace_snapshot(palace: Path) -> dict[str, Any]:
    """Everything that defines a palace's drawers, read in this process from both sides:
    Chroma (ids, documents, metadata without timestamps) and the catalogue (rows and the file
    manifest), to compare a palace with one built by a clean run."""
    from mempalace_cli.common.config import resolve_settings
    from mempalace_cli.service import Palace

    p = Palace(resolve_settings(str(palace)))
    try:
        p.sync()
        store: dict[str, Any] = {}
        for page in p.store.iter_all(("documents", "metadatas")):
            for i, doc, meta in zip(page["ids"], page["documents"], page["metadatas"], strict=True):
                meta = {
                    k: v for k, v in (meta or {}).items() if k not in ("filed_at", "source_mtime")
                }
                store[i] = (doc, json.dumps(meta, sort_keys=True))
        catalog = {r.id: r.text for r in p.catalog.iter_drawers()}
        return {"store": store, "catalog": catalog, "files": _all_files(p)}
    finally:
        p.close()


def _all_files(p: Any) -> dict[str, Any]:
    rows = p.catalog.conn.execute("SELECT source_file, content_hash, drawer_ids FROM files")
    return {src: (h, sorted(json.loads(ids))) for src, h, ids in rows}
