"""Hostile inputs to `mine` and watch mode, each with the real input: the run finishes, the
other files are mined, and the odd file is mined or reported as a skip with its reason.

Bytes in file names, lone surrogates, symlink loops, FIFOs, 1,500-deep folders, JSON nested
200,000 deep, files that vanish mid-run, a 30 MB line, a file saved while it is mined."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mempalace_cli.common.config import resolve_settings
from mempalace_cli.miners.chunking import CHUNK_CHARS, chunk_text
from mempalace_cli.miners.convos.jsonstream import TOO_DEEP
from mempalace_cli.service import Palace
from mempalace_cli.service.watching import PathRules
from tests.test_watch_support import WatchProcess, cli_env, mempalace_command, wait_until

BAD_NAME = os.fsdecode(b"bad\xffname.md")  # not valid UTF-8 on disk
BAD_SHOWN = "bad\\xffname.md"  # how the palace stores and shows it


def run_raw(home: Path, *args: Any) -> subprocess.CompletedProcess[bytes]:
    """`mempalace ARGS` in a subprocess, stdout and stderr as raw bytes."""
    return subprocess.run(
        [*mempalace_command(), *map(str, args)],
        env=cli_env(home),
        capture_output=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )


def run_json(home: Path, *args: Any) -> dict[str, Any]:
    proc = run_raw(home, *args, "--json")
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    return json.loads(proc.stdout.decode("utf-8"))  # strict: the output must be valid UTF-8


def skipped(report: dict[str, Any]) -> dict[str, str]:
    return {s["file"]: s["reason"] for s in report["skipped"]}


@pytest.fixture
def palace(tmp_path: Path, embedder: Any) -> Any:
    p = Palace(resolve_settings(str(tmp_path / "palace")))
    yield p
    p.close()


# -- file names that are not UTF-8 --------------------------------------------------------------
def test_a_non_utf8_file_name_is_mined_and_every_output_stays_valid_utf8(
    tmp_path: Path, home: Path, embedder: Any
) -> None:
    folder, palace = tmp_path / "d", tmp_path / "palace"
    folder.mkdir()
    (folder / "good.md").write_text("A note about apples and pears.\n")
    (folder / BAD_NAME).write_text("The bandicoot budget is due in March.\n")

    dry = run_json(home, "--palace", palace, "mine", folder, "--dry-run")
    assert sorted(dry["mined_files"]) == [BAD_SHOWN, "good.md"] and dry["skipped"] == []
    report = run_json(home, "--palace", palace, "mine", folder)
    assert sorted(report["mined_files"]) == [BAD_SHOWN, "good.md"]
    assert report["drawers"]["added"] == 2
    plain = run_raw(home, "--palace", palace, "mine", folder)  # tables for people, too
    assert plain.returncode == 0, plain.stderr
    assert re.search(r"files unchanged +2\n", plain.stdout.decode("utf-8"))

    hits = run_json(home, "--palace", palace, "search", "when is the bandicoot budget due")
    top = hits["results"][0]
    assert top["source_file"] == f"{folder}/{BAD_SHOWN}"
    assert top["text"] == "The bandicoot budget is due in March.\n"

    (folder / BAD_NAME).unlink()
    gone = run_json(home, "--palace", palace, "mine", folder)
    assert gone["removed_files"] == [BAD_SHOWN] and gone["drawers"]["removed"] == 1


def test_a_non_utf8_name_whose_readable_form_is_taken_is_skipped_with_the_reason(
    tmp_path: Path, palace: Any
) -> None:
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / BAD_NAME).write_text("bytes in the name\n")
    (folder / BAD_SHOWN).write_text("a backslash, an x and ff in the name\n")
    report = palace.mine(folder)
    assert report["mined_files"] == [BAD_SHOWN]
    reason = skipped(report)[BAD_SHOWN]
    assert "not valid UTF-8" in reason and "rename" in reason
    assert palace.search("backslash", mode="lexical")["results"][0]["text"].startswith("a back")


def test_watch_mode_mines_a_non_utf8_name_a_symlink_loop_and_files_that_vanish(
    tmp_path: Path, embedder: Any
) -> None:
    """The watcher outlives hostile paths: each change after them is still filed."""
    home, folder, palace = tmp_path / "home", tmp_path / "notes", tmp_path / "palace"
    home.mkdir()
    folder.mkdir()
    (folder / "start.md").write_text("The first note.\n")
    watcher = WatchProcess(home, palace, folder)
    try:
        watcher.wait_event("mine")
        (folder / BAD_NAME).write_text("The wallaby audit closes in April.\n")
        wait_until(
            lambda: any(BAD_SHOWN in b["mined_files"] for b in watcher.batches()),
            30,
            "the non-UTF-8 name filed",
        )
        os.symlink("loop-b", folder / "loop-a")
        os.symlink("loop-a", folder / "loop-b")
        # Files created and deleted as fast as we can: some vanish between the event and
        # the batch, some between the batch's listing and its read.
        for i in range(150):
            flicker = folder / f"flicker-{i % 5}.md"
            flicker.write_text(f"flicker {i}\n" * 50)
            flicker.unlink()
        (folder / "after.md").write_text("The quoll survey follows the hostile paths.\n")
        wait_until(
            lambda: any("after.md" in b["mined_files"] for b in watcher.batches()),
            60,
            "the file written after the hostile paths",
        )
        assert watcher.proc.poll() is None, watcher.stderr()
        assert not watcher.non_json, watcher.non_json
    finally:
        code = watcher.stop()
    assert code == 0, watcher.stderr()
    assert watcher.events[-1]["event"] == "stopped"
    p = Palace(resolve_settings(str(palace)))
    try:
        files = set(p.catalog.files_under(str(folder)))
        assert files == {str(folder / n) for n in ("start.md", BAD_SHOWN, "after.md")}
    finally:
        p.close()


# -- lone surrogates ------------------------------------------------------------------------------
def _claude_export(path: Path, user: str, reply: str) -> None:
    conv = [
        {
            "uuid": path.stem,
            "name": "garden",
            "chat_messages": [
                {"sender": "human", "text": user},
                {"sender": "assistant", "text": reply},
            ],
        }
    ]
    path.write_text(json.dumps(conv))  # json.dumps writes "\ud83d" as the escape itself


def test_a_chat_export_with_a_lone_surrogate_is_mined(tmp_path: Path, palace: Any) -> None:
    folder = tmp_path / "chats"
    folder.mkdir()
    _claude_export(
        folder / "cut.json", "How are the roses \ud83d doing?", "They bloom \ud83d in June."
    )
    _claude_export(folder / "fine.json", "When do tulips flower?", "Tulips flower in April.")
    assert '\\ud83d"' not in (folder / "cut.json").read_text()  # a lone one, not a pair
    report = palace.mine(folder, mode="convos")
    assert sorted(report["mined_files"]) == ["cut.json", "fine.json"], report["skipped"]
    top = palace.search("when do the roses bloom", limit=1)["results"][0]
    assert "\ufffd" in top["text"] and "They bloom \ufffd in June." in top["text"]
    # Chroma and the catalogue hold the same cleaned text.
    stored = palace.store.get([top["drawer_id"]], ["documents"])["documents"][0]
    assert stored == palace.catalog.get([top["drawer_id"]])[top["drawer_id"]].text == top["text"]
    again = palace.mine(folder, mode="convos")
    assert again["drawers"]["added"] == 0 and again["files"]["unchanged"] == 2


def test_the_embedder_and_add_drawer_take_lone_surrogates(palace: Any, embedder: Any) -> None:
    cut, replaced = embedder.embed(["half an emoji \ud83d here", "half an emoji \ufffd here"])
    assert cut.tolist() == replaced.tolist()
    added = palace.add_drawer("notes", "misc", "A lone \udc00 surrogate and a \ud83d too.")
    assert added["success"]
    assert (
        palace.get_drawer(added["drawer_id"])["text"] == "A lone \ufffd surrogate and a \ufffd too."
    )


# -- symlink loops, FIFOs -------------------------------------------------------------------------
def test_a_symlink_loop_and_a_fifo_are_skipped_and_the_rest_is_mined(
    tmp_path: Path, home: Path, embedder: Any
) -> None:
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "good.md").write_text("The numbat census is in May.\n")
    os.symlink("b", folder / "a")
    os.symlink("a", folder / "b")
    os.symlink(folder / "nowhere.md", folder / "dangling.md")
    os.mkfifo(folder / "pipe.md")  # opening it would wait for a writer forever
    report = run_json(home, "--palace", tmp_path / "palace", "mine", folder)
    assert report["mined_files"] == ["good.md"]
    reasons = skipped(report)
    assert set(reasons) == {"a", "b", "dangling.md", "pipe.md"}
    assert reasons["a"].startswith("symlink loop") and reasons["b"].startswith("symlink loop")
    assert reasons["dangling.md"].startswith("broken symlink")
    assert reasons["pipe.md"].startswith("not a regular file")
    # --yes: the files mined as projects just above are mined again as chat exports.
    convos = run_json(
        home, "--palace", tmp_path / "palace", "mine", folder, "--mode", "convos", "--yes"
    )
    assert {"a", "b", "pipe.md"} <= set(skipped(convos))


# -- depth ----------------------------------------------------------------------------------------
DEPTH = 1500


def _remove_deep(top: Path) -> None:
    """Delete a tree of any depth bottom-up: shutil.rmtree (and so pytest's own clean-up of
    old temp dirs) recurses once per level and fails on this one."""
    stack = [top]
    while stack:
        here = stack[-1]
        entries = list(os.scandir(here))
        folders = [Path(e.path) for e in entries if e.is_dir(follow_symlinks=False)]
        for e in entries:
            if not e.is_dir(follow_symlinks=False):
                os.unlink(e.path)
        if folders:
            stack.extend(folders)
        else:
            os.rmdir(here)
            stack.pop()


@pytest.fixture
def deep_folder(tmp_path: Path) -> Any:
    """A folder with a DEPTH-deep chain of sub-folders "d"; yields (folder, bottom)."""
    folder = tmp_path / "t"
    folder.mkdir()
    here = folder
    for _ in range(DEPTH):
        here = here / "d"
        here.mkdir()  # os.makedirs recurses: build it one level at a time
    yield folder, here
    _remove_deep(folder)


def test_a_1500_deep_tree_is_walked_mined_and_watched(deep_folder: Any, palace: Any) -> None:
    folder, bottom = deep_folder
    (bottom / "bottom.md").write_text("The echidna lives at the very bottom.\n")
    (bottom / "skip.tmp2").write_text("echidna noise\n")
    (bottom.parent / ".gitignore").write_text("*.tmp2\n")  # a .gitignore 1,499 levels down
    (folder / "top.md").write_text("The top of the tree.\n")

    rooms = palace.init_project(folder)  # detect_rooms walks the tree too
    assert [r["name"] for r in rooms["rooms"]] == ["d"]
    (folder / "mempalace.toml").unlink()  # and mine without one detects them again
    report = palace.mine(folder)
    deep_rel = "d/" * DEPTH + "bottom.md"
    assert sorted(report["mined_files"]) == sorted(
        ["top.md", deep_rel, "d/" * (DEPTH - 1) + ".gitignore"]
    )
    hit = palace.search("where does the echidna live", limit=1)["results"][0]
    assert hit["source_file"] == str(bottom / "bottom.md")
    rules = PathRules(folder, [])
    assert rules.relevant(bottom / "bottom.md") and not rules.relevant(bottom / "x.tmp2")


def test_json_nested_200000_deep_is_a_reported_skip(tmp_path: Path, palace: Any) -> None:
    folder = tmp_path / "chats"
    folder.mkdir()
    n = 200_000
    (folder / "deep.json").write_text("[" * n + "]" * n)
    (folder / "deep.jsonl").write_text('{"type": ' + "[" * n + "]" * n + "}\n")
    _claude_export(folder / "fine.json", "When do tulips flower?", "Tulips flower in April.")
    report = palace.mine(folder, mode="convos")
    assert report["mined_files"] == ["fine.json"]
    reasons = skipped(report)
    assert set(reasons) == {"deep.json", "deep.jsonl"}
    assert all(TOO_DEEP in r for r in reasons.values()), reasons


# -- files that vanish, files saved while mined ---------------------------------------------------
def test_an_export_that_vanishes_mid_run_is_a_reported_skip(tmp_path: Path, palace: Any) -> None:
    """The progress callback runs between one file's hash and its parse: it deletes that file
    and the next one (already listed by the walk). Both become skips; the run goes on."""
    folder = tmp_path / "chats"
    folder.mkdir()
    for name in ("a.json", "b.json", "c.json", "d.json"):
        _claude_export(folder / name, f"Question {name} about ferns?", f"Answer {name}: ferns.")

    def vanish(event: str, data: dict[str, Any]) -> None:
        if event == "scan" and data["path"] == "b.json":
            (folder / "b.json").unlink()
            (folder / "c.json").unlink()

    report = palace.mine(folder, mode="convos", progress=vanish)
    assert sorted(report["mined_files"]) == ["a.json", "d.json"]
    reasons = skipped(report)
    assert set(reasons) == {"b.json", "c.json"}
    assert "vanished" in reasons["b.json"] and "vanished" in reasons["c.json"]


SWAPPER = """
import os, sys
folder = sys.argv[1]
versions = [open(path).read() for path in sys.argv[2:]]
i = 0
while True:
    tmp = os.path.join(folder, f".swap-{i % 2}.tmp")  # temp files are never mined
    with open(tmp, "w") as fh:
        fh.write(versions[i % 2])
    os.replace(tmp, os.path.join(folder, "note.md"))
    i += 1
"""


def test_a_file_saved_while_it_is_mined_never_pairs_a_hash_with_other_text(
    tmp_path: Path, palace: Any
) -> None:
    """Another process swaps the file between two versions as fast as it can while `mine`
    runs again and again: the hash recorded for the file is always the hash of the version
    whose text was filed. (A megabyte of trailing spaces makes each read take a while and
    files no extra drawers: whitespace-only chunks are dropped.)"""
    folder = tmp_path / "d"
    folder.mkdir()
    target = folder / "note.md"
    versions = {
        "kiwi": "Version one: the kiwi count.\n" + " " * 1_000_000 + "\n",
        "kakapo": "Version two, longer: the kakapo count.\n" + " " * 1_300_000 + "\n",
    }
    target.write_text(versions["kiwi"])
    sources = []
    for name, text in versions.items():
        sources.append(tmp_path / f"{name}.version")
        sources[-1].write_text(text)
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(folder), *map(str, sources)],
        stdin=subprocess.DEVNULL,
    )
    try:
        checked = 0
        for _ in range(25):
            palace.mine(folder)
            rec = palace.catalog.get_file(str(target))
            assert rec is not None
            text = "".join(palace.catalog.get(rec.drawer_ids)[i].text for i in rec.drawer_ids)
            filed = [name for name in versions if name in text]
            assert len(filed) == 1, text[:100]
            assert rec.content_hash == hashlib.sha256(versions[filed[0]].encode()).hexdigest()
            checked += 1
    finally:
        swapper.kill()
        swapper.wait()
    assert checked == 25


# -- size -----------------------------------------------------------------------------------------
def test_a_30_mb_single_line_chunks_into_verbatim_slices(tmp_path: Path, palace: Any) -> None:
    line = ("lorem ipsum dolor sit amet " * 1_200_000)[:30_000_000]
    chunks = chunk_text(line)
    assert all(len(c.text) <= CHUNK_CHARS for c in chunks)
    assert "".join(c.text for c in chunks) == line  # a single line: pieces without overlap
    assert all(c.line_start == c.line_end == 1 for c in chunks)

    folder = tmp_path / "big"
    folder.mkdir()
    (folder / "blob.txt").write_text(line)
    (folder / "small.md").write_text("The small note about the platypus.\n")
    report = palace.mine(folder)
    assert report["mined_files"] == ["small.md"]
    assert "larger than the 5 MB limit" in skipped(report)["blob.txt"]
