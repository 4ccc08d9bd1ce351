"""update_drawer against a write from another process: a move or an edit that lands between this
process's first read and its write is kept, never overwritten with the copy read before it.

The interleaving is forced, not timed: the other process holds the palace's write lock; this
process starts its update on a thread and the test waits until that thread is blocked on the
lock inside update_drawer (everything it reads before the lock is read by then); only then does
the other process make its change, under the lock it holds, and let go."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mempalace_cli.embedders.base import Embedder
from mempalace_cli.service import open_palace

ORIGINAL = "The staging database is restored from the nightly snapshot every Monday."
EDITED = "The staging database is restored from the hourly snapshot, every day at noon."

HOLDER = """
import json, sys
from mempalace_cli.service import open_palace
palace = open_palace(sys.argv[1])
change = json.loads(sys.argv[3])
with palace.lock.hold():
    print("holding", flush=True)
    sys.stdin.readline()  # the other process is now waiting for this lock
    print(json.dumps(palace.update_drawer(sys.argv[2], **change)), flush=True)
palace.close()
"""


def _blocked_on_the_lock_in_update(thread: threading.Thread) -> bool:
    """Whether `thread` is inside PalaceLock.hold called by update_drawer (waiting for it)."""
    frame = sys._current_frames().get(thread.ident or -1)
    while frame is not None:
        if frame.f_code.co_name == "hold" and frame.f_code.co_filename.endswith("locking.py"):
            caller = frame.f_back.f_back if frame.f_back is not None else None  # __enter__
            return caller is not None and caller.f_code.co_name == "update_drawer"
        frame = frame.f_back
    return False


def _update_while_another_process_writes(
    palace_path: Path, home: Path, drawer_id: str, mine: dict[str, Any], theirs: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """This process updates the drawer with `mine` while the other applies `theirs`, the other
    one's write landing after this one's first read and before its write."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(palace_path), drawer_id, json.dumps(theirs)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "MEMPALACE_HOME": str(home)},
    )
    palace = open_palace(str(palace_path))
    outcome: dict[str, Any] = {}
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == "holding", holder.stderr.read()

        def update() -> None:
            try:
                outcome["result"] = palace.update_drawer(drawer_id, **mine)
            except BaseException as exc:  # handed to the test below
                outcome["error"] = exc

        worker = threading.Thread(target=update)
        worker.start()
        deadline = time.monotonic() + 120
        while not _blocked_on_the_lock_in_update(worker):
            assert worker.is_alive(), outcome
            assert time.monotonic() < deadline, "update_drawer never reached the write lock"
            time.sleep(0.01)
        holder.stdin.write("go\n")
        holder.stdin.flush()
        theirs_result = json.loads(holder.stdout.readline())
        assert holder.wait(timeout=120) == 0, holder.stderr.read()
        worker.join(timeout=120)
        assert not worker.is_alive()
        if "error" in outcome:
            raise outcome["error"]
        return outcome["result"], theirs_result
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        palace.close()


def _stored(palace_path: Path, drawer_id: str) -> dict[str, Any]:
    """The drawer as a fresh process sees it: catalogue and drawer store both."""
    palace = open_palace(str(palace_path))
    try:
        drawer = palace.get_drawer(drawer_id)
        got = palace.store.get([drawer_id], include=["documents", "metadatas"])
        drawer["store"] = (got["documents"][0], got["metadatas"][0]["wing"])
        return drawer
    finally:
        palace.close()


@pytest.fixture
def filed(tmp_path: Path, home: Path, embedder: Embedder) -> tuple[Path, str]:
    path = tmp_path / "palace"
    palace = open_palace(str(path))
    drawer_id = palace.add_drawer("ops", "databases", ORIGINAL)["drawer_id"]
    palace.close()
    return path, drawer_id


def test_a_move_elsewhere_survives_this_edit(filed: tuple[Path, str], home: Path) -> None:
    path, drawer_id = filed
    mine, theirs = _update_while_another_process_writes(
        path, home, drawer_id, {"content": EDITED}, {"wing": "archive"}
    )
    assert theirs["moved"] is True
    assert mine["content_changed"] is True and mine["wing"] == "archive"
    drawer = _stored(path, drawer_id)
    # Both changes: their move and this text, in the catalogue and in the store.
    assert (drawer["wing"], drawer["room"], drawer["text"]) == ("archive", "databases", EDITED)
    assert drawer["store"] == (EDITED, "archive")


def test_an_edit_elsewhere_survives_this_move(filed: tuple[Path, str], home: Path) -> None:
    path, drawer_id = filed
    mine, theirs = _update_while_another_process_writes(
        path, home, drawer_id, {"room": "backups"}, {"content": EDITED}
    )
    assert theirs["content_changed"] is True
    assert mine["moved"] is True and mine["content_changed"] is False
    drawer = _stored(path, drawer_id)
    assert (drawer["wing"], drawer["room"], drawer["text"]) == ("ops", "backups", EDITED)
    assert drawer["store"] == (EDITED, "ops")
    # The edited text is what search finds, in its new room.
    palace = open_palace(str(path))
    try:
        hits = palace.search("hourly snapshot at noon", mode="lexical", limit=1)["results"]
        assert [(h["drawer_id"], h["room"], h["text"]) for h in hits] == [
            (drawer_id, "backups", EDITED)
        ]
    finally:
        palace.close()
