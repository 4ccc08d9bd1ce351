"""Many processes, one palace: a watcher mining a folder that keeps changing, an MCP client
filing drawers through `serve-mcp`, and CLI searches, all at once (about a minute)."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mempalace_cli.common.config import resolve_settings
from mempalace_cli.service import Palace
from tests.conftest import NOTES
from tests.test_mcp_support import stdio_session
from tests.test_watch_support import (
    WatchProcess,
    cli_env,
    mempalace_command,
    palace_snapshot,
    run_cli,
    wait_until,
)

ACTIVITY_SECONDS = 30
# The activity lasts at least this long and until the client has added this many drawers and
# the editor made this many changes: a slow machine stretches the run instead of failing it.
MIN_ADDS, MIN_EDITS = 25, 60
WORDS = [
    "ledger",
    "harbor",
    "copper",
    "violet",
    "meadow",
    "glacier",
    "lantern",
    "orchard",
    "summit",
    "canyon",
    "ember",
    "falcon",
    "prairie",
    "quartz",
    "saffron",
    "tundra",
    "willow",
    "zephyr",
    "basalt",
    "cobalt",
    "delta",
    "fjord",
    "garnet",
    "heron",
]


def _sentence(rng: random.Random, token: str) -> str:
    return f"{token}: " + " ".join(rng.choice(WORDS) for _ in range(25)) + ".\n"


class Editor(threading.Thread):
    """Creates, edits, renames and deletes notes in the folder at a steady pace."""

    def __init__(self, folder: Path, seed: int) -> None:
        super().__init__(daemon=True)
        self.folder, self.rng = folder, random.Random(seed)
        self.stop_flag = threading.Event()
        self.ops = 0
        self.error: BaseException | None = None
        (folder / "stress").mkdir()

    def files(self) -> list[Path]:
        return sorted((self.folder / "stress").rglob("*.md"))

    def run(self) -> None:
        try:
            while not self.stop_flag.is_set():
                self.step()
                self.ops += 1
                time.sleep(self.rng.uniform(0.05, 0.3))
        except BaseException as exc:  # reported by the test
            self.error = exc

    def step(self) -> None:
        rng, files = self.rng, self.files()
        op = rng.choice(["create", "create", "edit", "edit", "rename", "delete"])
        token = f"item{self.ops:04d}"
        if op == "create" or not files:
            sub = self.folder / "stress" / rng.choice(["", "a", "b"])
            sub.mkdir(exist_ok=True)
            (sub / f"{token}.md").write_text(_sentence(rng, token) * rng.randint(1, 8))
        elif op == "edit":
            target = rng.choice(files)
            with target.open("a") as fh:
                fh.write(_sentence(rng, token))
        elif op == "rename":
            target = rng.choice(files)
            target.rename(target.with_name(f"{token}-{target.name}"))
        else:
            rng.choice(files).unlink()


def _folder_in_step(palace: Path, folder: Path) -> bool:
    """The palace's manifest holds exactly the folder's notes, each at its current hash."""
    from mempalace_cli.miners.files import sha256_file

    p = Palace(resolve_settings(str(palace)))
    try:
        known = p.catalog.files_under(str(folder))
    finally:
        p.close()
    on_disk = {str(f): f for f in folder.rglob("*") if f.is_file() and f.suffix == ".md"}
    if set(known) != set(on_disk):
        return False
    return all(known[src].content_hash == sha256_file(path) for src, path in on_disk.items())


@pytest.mark.slow
def test_watcher_mcp_client_and_cli_searches_share_one_palace(tmp_path: Path, embedder: Any):
    home, folder, palace = tmp_path / "home", tmp_path / "notes", tmp_path / "palace"
    home.mkdir()
    shutil.copytree(NOTES / "decisions", folder)
    run_cli(home, "--palace", palace, "init", folder)

    watcher = WatchProcess(home, palace, folder)
    watcher.wait_event("mine")
    editor = Editor(folder, seed=7)
    added: list[str] = []
    mcp_failures: list[str] = []
    cli_codes: list[tuple[int, str]] = []
    stop = threading.Event()

    def cli_searches() -> None:
        rng = random.Random(3)
        while not stop.is_set():
            proc = subprocess.run(
                [
                    *mempalace_command(),
                    "--palace",
                    str(palace),
                    "search",
                    f"{rng.choice(WORDS)} {rng.choice(WORDS)}",
                    "--json",
                ],
                env=cli_env(home),
                capture_output=True,
                text=True,
                timeout=120,
                stdin=subprocess.DEVNULL,
            )
            ok = proc.returncode == 0 and "results" in json.loads(proc.stdout or "{}")
            cli_codes.append((0 if ok else proc.returncode or 1, proc.stderr[-500:]))

    searcher = threading.Thread(target=cli_searches, daemon=True)
    with stdio_session(palace, home, tmp_path / "mcp.log") as mcp:
        editor.start()
        searcher.start()
        deadline = time.monotonic() + ACTIVITY_SECONDS
        rng = random.Random(11)
        i = 0
        while i < 400 and (
            time.monotonic() < deadline or len(added) < MIN_ADDS or editor.ops < MIN_EDITS
        ):
            content = (
                f"Decision {i} by the stress client: "
                + " ".join(rng.choice(WORDS) for _ in range(12))
                + f" (ref mcp{i:04d})"
            )
            result = mcp.call(
                "mempalace_add_drawer", {"wing": "agents", "room": "stress", "content": content}
            )
            text = "".join(getattr(c, "text", "") for c in result.content)
            if result.is_error:
                mcp_failures.append(text)
            else:
                data = result.structured_content or json.loads(text)
                if data.get("success"):
                    added.append(data["drawer_id"])
                elif data.get("reason") != "duplicate":
                    mcp_failures.append(text)
            if i % 3 == 0:
                hits = mcp.call("mempalace_search", {"query": rng.choice(WORDS), "limit": 3})
                if hits.is_error:
                    mcp_failures.append("search failed")
            i += 1
            time.sleep(0.2)
        editor.stop_flag.set()
        editor.join()
        stop.set()
        # The server finds what the watcher filed last.
        last = max(editor.files(), key=lambda f: f.stat().st_mtime_ns)
        wait_until(lambda: _folder_in_step(palace, folder), 60, "the watcher to catch up")
        token = last.read_text().split(":")[0].strip()
        found = mcp.call("mempalace_search", {"query": token, "limit": 10})
        assert not found.is_error
        assert str(last) in "".join(getattr(c, "text", "") for c in found.content)
    searcher.join(timeout=180)

    assert editor.error is None, editor.error
    assert editor.ops >= MIN_EDITS
    assert watcher.stop() == 0, watcher.stderr()
    assert not watcher.errors() and not watcher.non_json, watcher.stderr()
    assert not mcp_failures, mcp_failures[:3]
    assert cli_codes and all(code == 0 for code, _ in cli_codes), cli_codes
    assert len(added) >= MIN_ADDS

    # Every drawer the client added is there, by id, and a later CLI search finds it.
    p = Palace(resolve_settings(str(palace)))
    try:
        for drawer_id in added:
            assert p.get_drawer(drawer_id)["wing"] == "agents"
        assert set(added) <= set(p.store.get(added, ["documents"])["ids"])
    finally:
        p.close()
    hits = run_cli(
        home, "--palace", palace, "search", "stress client decision mcp0003", "--wing", "agents"
    )
    assert hits["results"]

    # The folder's drawers are exactly those of a clean mine of its final state.
    clean = tmp_path / "clean-palace"
    fresh = Palace(resolve_settings(str(clean)))
    try:
        fresh.mine(folder)
    finally:
        fresh.close()
    got, want = palace_snapshot(palace), palace_snapshot(clean)
    ours = {i: v for i, v in got["store"].items() if i not in set(added)}
    assert ours == want["store"]
    assert {i: t for i, t in got["catalog"].items() if i not in set(added)} == want["catalog"]
    assert got["files"] == want["files"]
