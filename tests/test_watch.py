"""`mempalace mine DIR --watch` with real filesystem events: a real watcher subprocess, real
files written by the test, and searches through the service in this process."""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mempalace_cli.config import resolve_settings
from mempalace_cli.service import Palace
from tests.conftest import NOTES
from tests.test_watch_support import (
    WatchProcess,
    palace_snapshot,
    run_cli,
    wait_until,
)

BURST = 200


def search(palace: Path, query: str, mode: str = "hybrid", n: int = 5) -> list[dict[str, Any]]:
    p = Palace(resolve_settings(str(palace)))
    try:
        return p.search(query, limit=n, mode=mode)["results"]
    finally:
        p.close()


def sources(palace: Path, query: str, mode: str = "lexical") -> set[str]:
    return {r["source_file"] for r in search(palace, query, mode, n=20)}


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[dict]:
    """One watcher for the module: a small notes folder (with a .gitignore), its palace."""
    base = tmp_path_factory.mktemp("watch")
    home, folder, palace = base / "home", base / "notes", base / "palace"
    home.mkdir()
    shutil.copytree(NOTES / "people", folder)
    (folder / ".gitignore").write_text("secret/\n*.log\n")
    watcher = WatchProcess(home, palace, folder)
    first = watcher.wait_event("mine")
    assert first["files"]["mined"] >= 3 and first["observer"] == "inotify"
    yield {"home": home, "folder": folder, "palace": palace, "watcher": watcher}
    code = watcher.stop()
    assert code == 0, watcher.stderr()
    assert not watcher.errors() and not watcher.non_json, watcher.stderr()


def test_create_modify_delete(watched: dict) -> None:
    folder, palace = watched["folder"], watched["palace"]
    note = folder / "okapi.md"
    note.write_text("# Okapi migration\n\nThe okapi cluster moves to the new rack on Friday.\n")
    wait_until(lambda: str(note) in sources(palace, "okapi"), 15, "the new file searchable")
    top = search(palace, "when does the okapi cluster move to the new rack", mode="vector")
    assert top[0]["source_file"] == str(note)

    note.write_text("# Narwhal rollout\n\nThe narwhal service replaces the old queue.\n")
    wait_until(lambda: str(note) in sources(palace, "narwhal"), 15, "the edit searchable")
    assert str(note) not in sources(palace, "okapi")

    note.unlink()
    wait_until(lambda: str(note) not in sources(palace, "narwhal"), 15, "the delete")
    assert sources(palace, "narwhal") == set()


def test_rename_moves_drawers_without_re_embedding(watched: dict) -> None:
    folder, palace, watcher = watched["folder"], watched["palace"], watched["watcher"]
    old = folder / "axolotl.md"
    old.write_text("# Axolotl budget\n\n" + "The axolotl budget review is on Tuesday. " * 40)
    wait_until(lambda: str(old) in sources(palace, "axolotl"), 15, "the new file")
    seen = len(watcher.batches())

    (folder / "archive").mkdir()
    new = folder / "archive" / "axolotl-2024.md"
    os.rename(old, new)
    wait_until(lambda: sources(palace, "axolotl") == {str(new)}, 15, "drawers at the new path")
    moved = [b for b in watcher.batches()[seen:] if b["files"]["moved"]]
    assert moved, watcher.batches()[seen:]
    batch = moved[0]
    assert batch["moved_files"] == [{"from": "axolotl.md", "to": "archive/axolotl-2024.md"}]
    assert batch["drawers"]["embeddings_reused"] == batch["drawers"]["added"] > 0
    assert search(palace, "axolotl budget review", mode="vector")[0]["source_file"] == str(new)


def test_ignored_paths_never_trigger_work(watched: dict) -> None:
    folder, palace, watcher = watched["folder"], watched["palace"], watched["watcher"]
    time.sleep(1.0)
    seen = len(watcher.batches())
    (folder / "secret").mkdir()
    (folder / "secret" / "keys.md").write_text("wombat password hunter2\n")
    (folder / "build.log").write_text("wombat build output\n")
    (folder / ".okapi.md.swp").write_text("wombat swap\n")
    (folder / "draft.md~").write_text("wombat backup\n")
    (folder / "node_modules").mkdir()
    (folder / "node_modules" / "readme.md").write_text("wombat dependency\n")
    time.sleep(2.5)  # well past the debounce
    assert watcher.batches()[seen:] == []
    assert sources(palace, "wombat") == set()


def test_burst_is_coalesced_into_few_batches(watched: dict) -> None:
    folder, palace, watcher = watched["folder"], watched["palace"], watched["watcher"]
    seen = len(watcher.batches())
    burst = folder / "burst"
    burst.mkdir()
    for i in range(BURST):
        (burst / f"note-{i:03}.md").write_text(f"Burst note {i}: the pangolin item {i} is done.\n")

    def all_filed() -> bool:
        p = Palace(resolve_settings(str(palace)))
        try:
            return sum(1 for src in p.catalog.files_under(str(folder)) if "/burst/" in src) == BURST
        finally:
            p.close()

    wait_until(all_filed, 60, "the burst filed")
    batches = watcher.batches()[seen:]
    assert sum(b["files"]["mined"] for b in batches) == BURST
    assert len(batches) <= 6, [b["files"] for b in batches]
    assert len(sources(palace, "pangolin")) == 20  # the search limit: all are there

    shutil.rmtree(burst)
    wait_until(lambda: sources(palace, "pangolin") == set(), 30, "the burst removed")
    assert len(watcher.batches()[seen + len(batches) :]) <= 3


def test_palace_inside_the_folder_is_ignored(tmp_path: Path, embedder: Any) -> None:
    """A palace kept inside the watched folder: its own writes must not feed the watcher."""
    home, folder = tmp_path / "home", tmp_path / "notes"
    home.mkdir()
    shutil.copytree(NOTES / "meetings", folder)
    palace = folder / ".palace-here"
    watcher = WatchProcess(home, palace, folder, "--poll")
    try:
        first = watcher.wait_event("mine")
        assert first["observer"] == "polling" and first["files"]["mined"] > 0
        (folder / "capybara.md").write_text("The capybara offsite is in May.\n")
        wait_until(lambda: watcher.batches(), 15, "a batch")
        time.sleep(3)  # several polls after our own writes to the palace
        assert len(watcher.batches()) == 1, watcher.batches()
        assert sources(palace, "capybara") == {str(folder / "capybara.md")}
    finally:
        assert watcher.stop() == 0, watcher.stderr()


def test_sigterm_finishes_the_batch_in_flight_and_exits_0(tmp_path: Path, embedder: Any) -> None:
    home, folder, palace = tmp_path / "home", tmp_path / "notes", tmp_path / "palace"
    home.mkdir()
    shutil.copytree(NOTES / "people", folder)
    watcher = WatchProcess(home, palace, folder)
    watcher.wait_event("mine")
    for i in range(40):
        (folder / f"late-{i}.md").write_text(f"Late note {i} about the tapir project. " * 30)
    time.sleep(0.8)  # past the debounce: the batch is being embedded now
    code = watcher.stop(signal.SIGTERM)
    assert code == 0, watcher.stderr()
    assert watcher.events[-1] == {"event": "stopped", "batches": len(watcher.batches())}
    # Whatever was filed is whole: a later mine only adds what the watcher hadn't reached.
    before = palace_snapshot(palace)
    for src, (_, ids) in before["files"].items():
        assert set(ids) <= set(before["store"]), src
    report = run_cli(home, "--palace", palace, "mine", folder)
    assert report["files"]["removed"] == 0 and report["drawers"]["removed"] == 0
    assert report["files"]["mined"] + len([s for s in before["files"] if "late-" in s]) == 40


def test_watch_rejects_dry_run_and_poll_alone(cli: Any, tmp_path: Path) -> None:
    result = cli("mine", str(tmp_path), "--poll", expect=2)
    assert "--poll only applies to --watch" in result.stderr
    result = cli("mine", str(tmp_path), "--watch", "--dry-run", expect=2)
    assert "--dry-run" in result.stderr


def test_convos_mode_batches_use_the_conversation_miner(tmp_path: Path, embedder: Any) -> None:
    """In convos mode a batch re-runs the (incremental) conversation mine of the folder."""
    folder = tmp_path / "chats"
    shutil.copytree(NOTES.parent / "convos" / "transcripts", folder)
    p = Palace(resolve_settings(str(tmp_path / "palace")))
    try:
        first = p.mine(folder, mode="convos")
        assert first["drawers"]["added"] > 0
        victim = sorted(f for f in folder.iterdir() if f.is_file())[0]
        victim.unlink()
        batch = p.mine_paths(folder, [victim], mode="convos")
        assert batch["full_rescan"] and batch["files"]["removed"] == 1
        assert batch["drawers"]["removed"] > 0
        assert str(victim) not in p.catalog.files_under(str(folder))
    finally:
        p.close()
