"""`mine` stopped with Ctrl-C, and its progress line, as a person meets them in a terminal:
the printed resume command is the exact command to paste (global options included, shell-
quoted) and files into the same palace; a Ctrl-C that lands while SQLite is writing (inside
its call of the keyword index's Python function) still stops the run; the progress line fits
an 80- and a 100-column terminal."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rich.cells import cell_len

from tests.conftest import NOTES
from tests.terminal import Live, interrupt, mempalace_exe, run_in_terminal

GROUP = 256  # drawers filed per write group (service/mine_common.py EMBED_GROUP)


def _env(home: Path, user_home: Path) -> dict[str, str]:
    """MEMPALACE_HOME and HOME in the test's folder (the default palace is home/palace), and
    `mempalace` on PATH for a shell."""
    env = {**os.environ, "MEMPALACE_HOME": str(home), "HOME": str(user_home)}
    env.pop("MEMPALACE_PALACE", None)
    env["PATH"] = f"{Path(mempalace_exe()).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def _notes(folder: Path, count: int) -> None:
    folder.mkdir(parents=True)
    for i in range(count):  # one short drawer per file
        (folder / f"note-{i:04d}.md").write_text(f"Note {i}: the build number is {i * 7}.\n")


def _status(env: dict[str, str], *palace: str) -> dict:
    done = subprocess.run(
        [mempalace_exe(), *palace, "status", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.slow
def test_the_resume_command_printed_after_ctrl_c_files_into_the_same_palace(tmp_path, embedder):
    folder, palace = tmp_path / "my notes", tmp_path / "the palace"  # spaces: quoting matters
    total = GROUP + 64
    _notes(folder, total)
    home, user_home = tmp_path / "home", tmp_path / "user-home"
    user_home.mkdir()
    env = _env(home, user_home)
    sent: list[int] = []

    def ctrl_c_once_filing_started(live: Live) -> None:
        reached = [int(n) for n in re.findall(rf"file (\d+)/{total}", live.text)]
        if not sent and reached and max(reached) > GROUP:  # the first group is filed
            sent.append(max(reached))
            interrupt(live.proc)

    run = run_in_terminal(
        ["--palace", str(palace), "mine", str(folder)], env, on_output=ctrl_c_once_filing_started
    )
    assert sent, "progress never showed the second write group"
    assert run.exit_code == 130, run.text[-2000:]
    found = re.search(r"Resume with: (.+?)  \(files already filed are skipped\)", run.text)
    assert found, run.text[-2000:]
    resume = found.group(1)
    assert resume.startswith("mempalace --palace ") and "'" in resume  # quoted paths
    kept = _status(env, "--palace", str(palace))["total_drawers"]
    assert 0 < kept < total

    # The printed command, verbatim, through a shell, from another folder.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    resumed = subprocess.run(
        resume, shell=True, env=env, cwd=elsewhere, capture_output=True, text=True, timeout=900
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert re.search(rf"files unchanged +{kept}\n", resumed.stdout), resumed.stdout
    assert _status(env, "--palace", str(palace))["total_drawers"] == total
    assert not (home / "palace").exists()  # nothing went to the default palace


# A child that runs `mempalace` with the keyword index's SQLite function raising SIGINT on
# its first call: the signal arrives while SQLite is inside the Python function, where a
# KeyboardInterrupt is swallowed (the statement fails instead), as a Ctrl-C under load did.
CTRL_C_IN_SQLITE = """
import os, signal, sys
import mempalace_cli.storage.catalog as catalog

index_text, calls = catalog._index_text, []

def ctrl_c_on_first_call(text):
    calls.append(1)
    if len(calls) == 1:
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(100_000):  # Python runs the handler here, inside SQLite's call
            pass
    return index_text(text)

catalog._index_text = ctrl_c_on_first_call
from mempalace_cli.cli import main
sys.argv = ["mempalace", *sys.argv[1:]]
main()
"""


def test_ctrl_c_while_sqlite_writes_still_stops_the_run(tmp_path, embedder):
    folder = tmp_path / "many"
    total = GROUP + 40  # two write groups: Ctrl-C lands in the first one's catalogue write
    _notes(folder, total)
    env = _env(tmp_path / "home", tmp_path)
    run = subprocess.run(
        [sys.executable, "-c", CTRL_C_IN_SQLITE, "mine", str(folder), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 130, (run.returncode, run.stderr[-3000:])
    doc = json.loads(run.stdout)
    assert doc["error"]["kind"] == "interrupted"
    # The write in progress finished (a step is never cut in half); the next one never began.
    assert doc["kept"] == {"files": GROUP, "drawers": GROUP}
    assert f"Kept {GROUP} of {total} new or changed files" in doc["error"]["message"]
    assert "Traceback" not in run.stderr
    assert _status(env)["total_drawers"] == GROUP
    again = subprocess.run(
        [mempalace_exe(), "mine", str(folder), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert again.returncode == 0, again.stderr[-2000:]
    assert json.loads(again.stdout)["files"]["unchanged"] == GROUP
    assert _status(env)["total_drawers"] == total


@pytest.mark.parametrize("columns", [80, 100])
def test_the_progress_line_fits_the_terminal(tmp_path, embedder, columns):
    folder = tmp_path / "notes"
    shutil.copytree(NOTES, folder, ignore=shutil.ignore_patterns("mempalace.toml"))
    run = run_in_terminal(["mine", str(folder)], _env(tmp_path / "home", tmp_path), columns=columns)
    assert run.exit_code == 0, run.text[-2000:]
    frames = [f for f in re.split(r"[\r\n]", run.text) if f.strip()]
    too_wide = [f for f in frames if cell_len(f) > columns]
    assert not too_wide, too_wide[:3]
    filing = [f for f in frames if re.search(r"\b(embedding|filing|loading the model)\b", f)]
    assert len(filing) >= 3, frames[:20]
    # Each frame is one whole line: counts, files and the ETA are never cut or wrapped.
    whole = r"(embedding|filing|loading the model) +━+ +\d+/105 drawers +file \d+/34 +ETA \S"
    for frame in filing:
        assert re.search(whole, frame), frame
        assert re.search(r"ETA (\d+:\d\d:\d\d|-:--:--)", frame), frame
    assert not [f for f in frames if re.fullmatch(r"\s*\S{1,4}…?\s*", f)], "stray fragments"
    assert any(re.search(r"[\d.,]+ drawers/s", f) for f in filing)
