"""`mempalace mine DIR --watch` with real filesystem events: a real watcher subprocess, real
files written by the test, and searches through the service in this process."""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mempalace_cli.common.config import resolve_settings
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
    wait_until(lambda: str(note) in sources(palace, "okapi"), 60, "the new file searchable")
    top = search(palace, "when does the okapi cluster move to the new rack", mode="vector")
    assert top[0]["source_file"] == str(note)

    note.write_text("# Narwhal rollout\n\nThe narwhal service replaces the old queue.\n")
    wait_until(lambda: str(note) in sources(palace, "narwhal"), 60, "the edit searchable")
    assert str(note) not in sources(palace, "okapi")

    note.unlink()
    wait_until(lambda: str(note) not in sources(palace, "narwhal"), 60, "the delete")
    assert sources(palace, "narwhal") == set()


def test_rename_moves_drawers_without_re_embedding(watched: dict) -> None:
    folder, palace, watcher = watched["folder"], watched["palace"], watched["watcher"]
    old = folder / "axolotl.md"
    old.write_text("# Axolotl budget\n\n" + "The axolotl budget review is on Tuesday. " * 40)
    wait_until(lambda: str(old) in sources(palace, "axolotl"), 60, "the new file")
    seen = len(watcher.batches())

    (folder / "archive").mkdir()
    new = folder / "archive" / "axolotl-2024.md"
    os.rename(old, new)
    wait_until(lambda: sources(palace, "axolotl") == {str(new)}, 60, "drawers at the new path")
    # The watcher prints its batch line after the write it reports: wait for that line.
    moved = wait_until(
        lambda: [b for b in watcher.batches()[seen:] if b["files"]["moved"]],
        60,
        "the batch that moved the file (a rename read as a delete and an add never comes)",
    )
    batch = moved[0]
    assert batch["moved_files"] == [{"from": "axolotl.md", "to": "archive/axolotl-2024.md"}]
    assert batch["drawers"]["embeddings_reused"] == batch["drawers"]["added"] > 0
    assert search(palace, "axolotl budget review", mode="vector")[0]["source_file"] == str(new)


def test_ignored_paths_never_trigger_work(watched: dict) -> None:
    """Ignored paths are written first, then one relevant file: inotify reports events in
    order, so the batch that files the relevant file has seen every earlier event. It must
    hold that one path only, and no batch before it may exist (a positive signal, no sleep)."""
    folder, palace, watcher = watched["folder"], watched["palace"], watched["watcher"]
    seen = len(watcher.batches())
    (folder / "secret").mkdir()
    (folder / "secret" / "keys.md").write_text("wombat password hunter2\n")
    (folder / "build.log").write_text("wombat build output\n")
    (folder / ".okapi.md.swp").write_text("wombat swap\n")
    (folder / "draft.md~").write_text("wombat backup\n")
    (folder / "node_modules").mkdir()
    (folder / "node_modules" / "readme.md").write_text("wombat dependency\n")
    sentinel = folder / "sentinel-ignored.md"
    sentinel.write_text("The quokka sentinel marks the end of the ignored writes.\n")

    def sentinel_batch() -> list[dict[str, Any]]:
        return [b for b in watcher.batches()[seen:] if "sentinel-ignored.md" in b["mined_files"]]

    wait_until(sentinel_batch, 60, "the batch that files the sentinel")
    batches = watcher.batches()[seen:]
    assert len(batches) == 1, batches  # nothing before it: no ignored path made a batch
    assert batches[0]["paths"] == 1 and batches[0]["mined_files"] == ["sentinel-ignored.md"]
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

    # The batch's line is printed after its write commits: wait for the lines, not the palace.
    wait_until(
        lambda: sum(b["files"]["mined"] for b in watcher.batches()[seen:]) >= BURST,
        90,
        "the burst's batches",
    )
    assert all_filed()
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
        wait_until(lambda: watcher.batches(), 60, "a batch")
        # The first batch wrote to the palace inside the folder. A second file written after
        # it is a positive signal: the polls that see it have seen every palace write too, so
        # if those fed the watcher, they would show up in this batch or one before it.
        (folder / "tapir.md").write_text("The tapir review is in June.\n")
        wait_until(lambda: len(watcher.batches()) >= 2, 60, "the second file's batch")
        first, second = watcher.batches()[:2]
        assert len(watcher.batches()) == 2, watcher.batches()
        assert first["paths"] == 1 and first["mined_files"] == ["capybara.md"]
        assert second["paths"] == 1 and second["mined_files"] == ["tapir.md"]
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
    started = watcher.wait_event("batch_start", timeout=30)  # a batch is being embedded now
    in_flight = started["batch"] not in [b["batch"] for b in watcher.batches()]
    code = watcher.stop(signal.SIGTERM, timeout=180)  # a loaded machine embeds slowly
    assert code == 0, watcher.stderr()
    assert in_flight, "the batch finished before SIGTERM: nothing was in flight"
    done = [b["batch"] for b in watcher.batches()]
    assert started["batch"] in done  # the batch in flight was finished, not dropped
    assert watcher.events[-1] == {"event": "stopped", "batches": len(done)}
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
