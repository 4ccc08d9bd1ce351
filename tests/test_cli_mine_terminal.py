"""`mine` as a person sees it, in a real pseudo-terminal: progress that moves per file and per
few drawers with a rate and an ETA, nothing on a pipe, and Ctrl-C that says what was kept and
how to resume (exit 130), after which the same command carries on."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import NOTES
from tests.terminal import Live, interrupt, mempalace_exe, run_in_terminal

GROUP = 256  # drawers filed per write group (service/mining.py EMBED_GROUP)


def _env(home: Path) -> dict[str, str]:
    env = {**os.environ, "MEMPALACE_HOME": str(home)}
    env.pop("MEMPALACE_PALACE", None)
    return env


def test_progress_moves_per_file_and_drawer_with_rate_and_eta(tmp_path, embedder):
    folder = tmp_path / "notes"
    shutil.copytree(NOTES, folder, ignore=shutil.ignore_patterns("mempalace.toml"))
    run = run_in_terminal(["mine", str(folder)], _env(tmp_path / "home"), columns=160)
    assert run.exit_code == 0, run.text[-2000:]
    frames = re.split(r"[\r\n]", run.text)
    assert any("looking at files" in f for f in frames)  # movement before any embedding
    drawers = [int(m.group(1)) for f in frames if (m := re.search(r"(\d+)/105 drawers", f))]
    files = [int(m.group(1)) for f in frames if (m := re.search(r"file (\d+)/34", f))]
    assert len(set(drawers)) >= 3, sorted(set(drawers))  # 105 drawers in slices, not one jump
    assert drawers == sorted(drawers) and drawers[-1] == 105
    assert len(set(files)) >= 3 and files == sorted(files) and max(files) == 34
    assert any(re.search(r"[\d.,]+ drawers/s", f) for f in frames)
    assert any(re.search(r"ETA \d+:\d\d:\d\d", f) for f in frames)
    # The value column is as wide as its widest cell, "elapsed 3.6 s" or "12.3 s": any spacing.
    assert re.search(r"files mined +34\n", run.text), run.text[-400:]


def test_no_progress_on_a_pipe_or_with_quiet(tmp_path, embedder):
    folder = tmp_path / "people"
    shutil.copytree(NOTES / "people", folder)
    piped = subprocess.run(
        [mempalace_exe(), "mine", str(folder)],
        env=_env(tmp_path / "home"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert piped.returncode == 0, piped.stderr
    assert piped.stderr == "" and "\x1b[" not in piped.stdout
    assert "files mined" in piped.stdout
    (folder / "extra.md").write_text("# Extra\n\nA new person joined the team.\n")
    quiet = run_in_terminal(["mine", str(folder), "--quiet"], _env(tmp_path / "home"))
    assert quiet.exit_code == 0
    assert "drawers/s" not in quiet.text and "looking at files" not in quiet.text
    assert re.search(r"files mined +1\n", quiet.text), quiet.text[-400:]


@pytest.mark.slow
def test_ctrl_c_keeps_what_was_filed_says_how_to_resume_and_exits_130(tmp_path, embedder):
    folder = tmp_path / "many"
    folder.mkdir()
    total = GROUP + 400  # one short drawer per file: the first write group is GROUP files
    for i in range(total):
        (folder / f"note-{i:04d}.md").write_text(f"Note {i}: the build number is {i * 7}.\n")
    env = _env(tmp_path / "home")
    sent: list[int] = []

    def ctrl_c_once_the_first_group_is_filed(live: Live) -> None:
        reached = [int(n) for n in re.findall(rf"file (\d+)/{total}", live.text)]
        if not sent and reached and max(reached) > GROUP:
            sent.append(max(reached))
            interrupt(live.proc)

    run = run_in_terminal(
        ["mine", str(folder)], env, on_output=ctrl_c_once_the_first_group_is_filed
    )
    assert sent, "progress never showed the second write group"
    assert run.exit_code == 130, run.text[-2000:]
    message = re.search(
        rf"Interrupted\. Kept (\d+) of {total} new or changed files \((\d+) drawers\)", run.text
    )
    assert message, run.text[-2000:]
    kept_files, kept_drawers = int(message.group(1)), int(message.group(2))
    assert kept_files == kept_drawers == GROUP
    assert f"Resume with: mempalace mine {folder}" in run.text
    assert "Traceback" not in run.text

    def cli_json(*args: str) -> dict:
        done = subprocess.run(
            [mempalace_exe(), *args, "--json"], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    # What was kept is exactly what the message says: the dry run would add only the rest.
    assert cli_json("status")["total_drawers"] == kept_drawers
    plan = cli_json("mine", str(folder), "--dry-run")["plan"]
    assert {e["action"] for e in plan} == {"add"} and len(plan) == total - kept_files
    resumed = cli_json("mine", str(folder))
    assert resumed["files"] == {
        "mined": total - kept_files,
        "unchanged": kept_files,
        "removed": 0,
        "skipped": 0,
    }
    assert cli_json("status")["total_drawers"] == total
