"""Crash safety: `kill -9` of `mine` at several points, then `mine` again, converges to exactly
what a clean run gives; a damaged palace is reported with a way out, never recreated empty."""

from __future__ import annotations

import shutil
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mempalace_cli.common.config import resolve_settings
from mempalace_cli.service import Palace
from mempalace_cli.storage.sqlite_db import connect_read_only
from tests.conftest import NOTES
from tests.test_watch_support import cli_env, mempalace_command, palace_snapshot, run_cli

NEW_NOTES = 260  # one-chunk notes: the mine files two groups (EMBED_GROUP is 256)


def _mine_in_process(palace: Path, folder: Path) -> None:
    p = Palace(resolve_settings(str(palace)))
    try:
        p.mine(folder)
    finally:
        p.close()


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[dict]:
    """A palace of the folder's first version (plus one hand-filed drawer), the folder's second
    version (edits, deletions, many new notes), and a palace made cleanly from the second."""
    base = tmp_path_factory.mktemp("crash")
    home, folder = base / "home", base / "notes"
    home.mkdir()
    shutil.copytree(NOTES / "people", folder / "people")
    before = base / "palace-v1"
    _mine_in_process(before, folder)
    p = Palace(resolve_settings(str(before)))
    try:
        kept = p.add_drawer("agents", "notes", "Hand-filed: the vendor contract renews in March.")
    finally:
        p.close()

    people = sorted((folder / "people").glob("*.md"))
    for path in people[:2]:
        path.unlink()
    for path in people[2:4]:
        path.write_text(path.read_text() + "\nAmended after review: see the new plan.\n")
    (folder / "inbox").mkdir()
    for i in range(NEW_NOTES):
        (folder / "inbox" / f"n{i:03}.md").write_text(f"Inbox item {i}: call back supplier {i}.\n")

    clean = base / "palace-clean"
    _mine_in_process(clean, folder)
    yield {
        "home": home,
        "folder": folder,
        "before": before,
        "kept": kept["drawer_id"],
        "want": palace_snapshot(clean),
    }


def _mine_until_killed(home: Path, palace: Path, folder: Path, crash_at: str) -> int:
    env = {"MEMPALACE_TEST_CRASH_AT": crash_at}
    proc = subprocess.Popen(
        [*mempalace_command(), "--palace", str(palace), "mine", str(folder), "--json"],
        env=cli_env(home, **env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return proc.wait(timeout=300)


def _assert_converged(scenario: dict, palace: Path) -> None:
    got, want = palace_snapshot(palace), scenario["want"]
    kept = scenario["kept"]
    assert kept in got["store"] and kept in got["catalog"], "a drawer stored before was lost"
    assert {i: v for i, v in got["store"].items() if i != kept} == want["store"]
    assert {i: t for i, t in got["catalog"].items() if i != kept} == want["catalog"]
    assert got["files"] == want["files"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "crash_at",
    [
        "after_store_write",  # Chroma has the group, the catalogue and manifest don't
        "after_catalog_write",  # the first group committed, the rest not
        "after_store_write:2",  # the second group half-written
        "after_store_delete",  # deleted files' drawers gone from Chroma only
    ],
)
def test_kill_at_a_write_point_then_mine_converges(
    scenario: dict, tmp_path: Path, crash_at: str
) -> None:
    palace = tmp_path / "palace"
    shutil.copytree(scenario["before"], palace)
    code = _mine_until_killed(scenario["home"], palace, scenario["folder"], crash_at)
    assert code == -signal.SIGKILL
    report = run_cli(scenario["home"], "--palace", palace, "mine", scenario["folder"])
    assert report["files"]["mined"] > 0 or report["files"]["removed"] > 0
    _assert_converged(scenario, palace)
    if crash_at == "after_store_write":  # and stays converged
        again = run_cli(scenario["home"], "--palace", palace, "mine", scenario["folder"])
        assert again["files"]["mined"] == again["files"]["removed"] == 0


def _generation(palace: Path) -> int:
    conn = connect_read_only(palace / "mempalace_index.sqlite3")
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return int(row[0]) if row else 0
    except sqlite3.Error:
        return -1
    finally:
        conn.close()


@pytest.mark.slow
def test_kill_while_writing_twice_then_mine_converges(scenario: dict, tmp_path: Path) -> None:
    """Killed the moment the palace starts changing, then again a little into the next run."""
    palace = tmp_path / "palace"
    shutil.copytree(scenario["before"], palace)
    for extra_delay in (0.0, 0.3):
        start = _generation(palace)
        proc = subprocess.Popen(
            [*mempalace_command(), "--palace", str(palace), "mine", str(scenario["folder"])],
            env=cli_env(scenario["home"]),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 120
        while _generation(palace) == start and proc.poll() is None:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        time.sleep(extra_delay)
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=60) == -signal.SIGKILL, "mine finished before the kill"
    run_cli(scenario["home"], "--palace", palace, "mine", scenario["folder"])
    _assert_converged(scenario, palace)


def _mined_palace(tmp_path: Path, cli: Any) -> Path:
    folder = tmp_path / "people"
    shutil.copytree(NOTES / "people", folder)
    palace = tmp_path / "palace"
    cli("--palace", palace, "mine", folder)
    return palace


def test_unreadable_drawer_store_is_reported_not_recreated(tmp_path: Path, cli: Any) -> None:
    palace = _mined_palace(tmp_path, cli)
    damaged = b"this is not a database" * 100
    (palace / "chroma.sqlite3").write_bytes(damaged)
    result = cli("--palace", palace, "status", expect=6)
    assert "can't be opened" in result.stderr and "Hint:" in result.stderr
    assert "backup" in result.stderr
    result = cli("--palace", palace, "search", "who owns the roadmap", expect=6)
    assert (palace / "chroma.sqlite3").read_bytes() == damaged


def test_missing_drawer_store_is_reported_not_recreated(tmp_path: Path, cli: Any) -> None:
    palace = _mined_palace(tmp_path, cli)
    (palace / "chroma.sqlite3").unlink()
    result = cli("--palace", palace, "status", expect=6)
    assert "chroma.sqlite3 is missing" in result.stderr and "mv " in result.stderr
    assert not (palace / "chroma.sqlite3").exists()
    cli("--palace", palace, "mine", tmp_path / "people", expect=6)
    assert not (palace / "chroma.sqlite3").exists()


def test_unreadable_index_is_reported_and_rebuilt_once_moved_aside(tmp_path: Path, cli_json):
    palace = _mined_palace(tmp_path, lambda *a, **k: cli_json(*a, **k))
    total = cli_json("--palace", palace, "status")["total_drawers"]
    index = palace / "mempalace_index.sqlite3"
    for extra in ("-wal", "-shm"):
        Path(str(index) + extra).unlink(missing_ok=True)
    index.write_bytes(b"garbage" * 1000)
    error = cli_json("--palace", palace, "status", expect=6)["error"]
    assert "can't be read" in error["message"] and f"mv {index}" in error["hint"]
    index.rename(palace / "index.bad")
    assert cli_json("--palace", palace, "status")["total_drawers"] == total
