"""Search output for people, through the real CLI: the passage around the best-matching lines
(not the drawer's first characters), the source path relative to the mined folder with its
line range, the rank score and the similarity labelled, --full, the rank score in --json, query
terms highlighted on a terminal and no colour on a pipe, and clean narrow terminals."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mempalace_cli.cli import app
from tests.conftest import NOTES
from tests.terminal import mempalace_exe, run_in_terminal

ADDED = "- Tomás now owns the quarterly key rotation runbook."
QUERY = "who owns the key rotation runbook"
NOTE = "decisions/0006-auth0-to-clerk.md"


@pytest.fixture(scope="module")
def palace(tmp_path_factory, embedder) -> dict:
    """The decisions notes with one line appended to an ADR, as in the issue, mined once."""
    base = tmp_path_factory.mktemp("searchout")
    folder = base / "decisions"
    shutil.copytree(NOTES / "decisions", folder / "decisions")
    note = folder / NOTE
    note.write_text(note.read_text(encoding="utf-8") + ADDED + "\n", encoding="utf-8")
    line = note.read_text(encoding="utf-8").splitlines().index(ADDED) + 1
    palace = base / "palace"
    mined = CliRunner().invoke(app, ["mine", str(folder), "--palace", str(palace), "--json"])
    assert mined.exit_code == 0, mined.output
    return {"palace": palace, "folder": folder, "line": line, "home": base}


def _run(palace: dict, *args: str):
    result = CliRunner().invoke(app, ["search", *args, "--palace", str(palace["palace"])])
    assert result.exit_code == 0, result.output
    return result


def _search(palace: dict, *args: str) -> str:
    return _run(palace, *args).stdout


def _json(palace: dict, *args: str) -> dict:
    return json.loads(_search(palace, *args, "--json"))


def test_the_hit_shows_the_matching_line_not_the_drawer_start(palace):
    hits = _json(palace, QUERY, "-n", "3")["results"]
    top = hits[0]
    # The situation of the issue: the line is in the hit, but far from its start.
    assert ADDED in top["text"] and top["text"].index(ADDED) > 200
    run = _run(palace, QUERY, "-n", "3")
    text = run.stdout
    assert f"{palace['line']} │ {ADDED}" in text
    # Its source: relative to the mined folder, with the drawer's line range.
    where = f"{NOTE}:{top['line_start']}-{top['line_end']}"
    assert where in text and str(palace["folder"]) not in text
    assert top["line_start"] <= palace["line"] <= top["line_end"]
    # Both numbers, labelled, and what they mean.
    header = text.splitlines()[0]
    assert f"score {top['rank_score']:.5f}" in header
    assert f"similarity {top['similarity']:.3f}" in header
    # The id (for `mempalace show`) follows on the same line: output to a pipe never wraps.
    assert top["drawer_id"] in header
    # What the numbers mean goes to stderr: stdout is the results only.
    assert "score: the rank score that sets the order" in run.stderr
    assert "similarity: cosine similarity of query and drawer" in run.stderr
    assert "score: the rank" not in text and "similarity: cosine" not in text


def test_json_carries_the_rank_score_that_sets_the_order(palace):
    result = _json(palace, "authentication vendor renewal cost", "-n", "5")
    scores = [hit["rank_score"] for hit in result["results"]]
    assert len(scores) == 5 and all(isinstance(s, float) and s > 0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    for mode in ("vector", "lexical"):
        one_side = _json(palace, "Clerk", "--mode", mode, "-n", "3")["results"]
        assert [h["rank_score"] for h in one_side] == sorted(
            (h["rank_score"] for h in one_side), reverse=True
        )


def test_full_prints_the_whole_drawer(palace):
    top = _json(palace, QUERY, "-n", "1")["results"][0]
    text = _search(palace, QUERY, "-n", "1", "--full")
    lines = top["text"].splitlines()
    for offset, line in enumerate(lines):
        if line.strip() and len(line) < 60:  # short lines never wrap at 80 columns
            assert f"{top['line_start'] + offset} │ {line}" in text
    assert "⋮" not in text


def _env(palace: dict) -> dict[str, str]:
    env = {**os.environ, "MEMPALACE_HOME": str(palace["home"] / "home")}
    env.pop("MEMPALACE_PALACE", None)
    return env


def test_query_terms_are_highlighted_on_a_terminal_and_plain_on_a_pipe(palace):
    args = ["search", QUERY, "-n", "1", "--palace", str(palace["palace"])]
    tty = run_in_terminal(args, _env(palace), columns=120)
    assert tty.exit_code == 0, tty.text
    # "runbook" and "rotation" are query words: each is wrapped in a style on the terminal.
    assert re.search(r"\x1b\[[0-9;]*m(runbook|rotation)\x1b\[0m", tty.raw), tty.raw[:2000]
    assert ADDED in tty.text
    piped = subprocess.run(
        [mempalace_exe(), *args], env=_env(palace), capture_output=True, text=True, timeout=300
    )
    assert piped.returncode == 0, piped.stderr
    assert "\x1b[" not in piped.stdout and ADDED in piped.stdout


def test_a_narrow_terminal_never_breaks_a_path_or_overflows(palace):
    args = ["search", QUERY, "-n", "2", "--palace", str(palace["palace"])]
    narrow = run_in_terminal(args, _env(palace), columns=40)
    assert narrow.exit_code == 0, narrow.text
    lines = narrow.text.splitlines()
    assert all(len(line) <= 40 for line in lines), [x for x in lines if len(x) > 40]
    # The path keeps its file name and line range whole on one line; leading folders give way.
    paths = [line.strip() for line in lines if re.search(r"\.md:\d+-\d+$", line)]
    assert len(paths) == 2
    assert any(p.endswith(Path(NOTE).name + p[p.rindex(":") :]) for p in paths)
    # Words of the passage wrap between words, not inside them.
    assert "runbook." in narrow.text.replace("\n", " ").split() or "runbook" in narrow.text
