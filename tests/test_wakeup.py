"""`mempalace wake-up`: identity, essential story and protocol within a token budget."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mempalace_cli.embedders.base import get_token_counter
from mempalace_cli.memory.layers import (
    DEFAULT_BUDGET,
    L0_NAME,
    L1_NAME,
    PROTOCOL_NAME,
    PROTOCOL_POINTER,
)
from mempalace_cli.memory.protocol import PROTOCOL
from mempalace_cli.service import open_palace

DECISION_NOTE = """# ADR-0012: Queue on Postgres

- Status: Accepted
- Date: 2026-05-02

## Decision

We decided to drop Redis and run the job queue on Postgres (SKIP LOCKED), because one
database is less to operate. Rationale: peak load is 300 jobs a second, far below the limit.
"""

CODE_FILE = """import os
import sys


def main() -> int:
    path = os.environ.get("QUEUE_PATH", "/tmp/queue")
    for line in open(path):
        sys.stdout.write(line)
    return 0
"""


def count(text: str) -> int:
    return get_token_counter().count(text)


def l1(result: dict) -> dict:
    return next(layer for layer in result["layers"] if layer["name"] == L1_NAME)


@pytest.fixture
def notes_palace(home: Path, mined_notes: dict):
    palace = open_palace(str(mined_notes["palace"]))
    yield palace
    palace.close()


@pytest.mark.parametrize("budget", [200, DEFAULT_BUDGET, 2000])
def test_budget_is_never_exceeded(notes_palace, budget: int) -> None:
    result = notes_palace.wake_up(budget=budget)
    assert result["budget"] == budget
    assert result["total_tokens"] == count(result["text"]) <= budget
    assert [layer["name"] for layer in result["layers"]] == [L0_NAME, L1_NAME, PROTOCOL_NAME]
    for layer in result["layers"]:
        assert layer["tokens"] == count(layer["text"])
    assert sum(layer["tokens"] for layer in result["layers"]) == result["total_tokens"]
    assert l1(result)["drawers"], "some story fits every budget tested"
    if budget >= DEFAULT_BUDGET:
        assert PROTOCOL.strip() in result["text"]
        sources = {row.source_file for row in notes_palace.catalog.iter_drawers()}
        # L1 fills the budget, or holds every source file (one entry each).
        assert budget - result["total_tokens"] < 150 or len(l1(result)["drawers"]) == len(sources)
    else:
        assert PROTOCOL_POINTER in result["text"]


def test_more_budget_more_story(notes_palace) -> None:
    small, large = notes_palace.wake_up(budget=DEFAULT_BUDGET), notes_palace.wake_up(budget=2400)
    assert len(l1(large)["drawers"]) > len(l1(small)["drawers"])


def test_output_is_deterministic(notes_palace, mined_notes, cli) -> None:
    first = notes_palace.wake_up()
    again = open_palace(str(mined_notes["palace"])).wake_up()
    assert first == again
    args = ("--palace", str(mined_notes["palace"]), "wake-up")
    assert cli(*args).stdout == cli(*args).stdout == first["text"] + "\n"


def test_l1_entries_are_grouped_by_room_with_their_source(notes_palace) -> None:
    result = notes_palace.wake_up(budget=2000)
    text = l1(result)["text"]
    headers = [ln for ln in text.splitlines() if ln.startswith("[")]
    assert len(headers) == len(set(headers)), "each room appears once"
    for drawer in l1(result)["drawers"]:
        assert f"[{drawer['wing']}/{drawer['room']}]" in headers
        assert Path(drawer["source_file"]).name in drawer["summary"]


def test_missing_identity_gives_a_hint(notes_palace, home: Path) -> None:
    result = notes_palace.wake_up()
    l0 = result["layers"][0]["text"]
    assert str(home / "identity.txt") in l0 and "Create" in l0
    assert result["identity_path"] == str(home / "identity.txt")
    (home / "identity.txt").write_text("I am Atlas, the Driftwood team's assistant.\n")
    l0 = notes_palace.wake_up()["layers"][0]["text"]
    assert "I am Atlas" in l0 and "Create" not in l0


def test_long_identity_is_cut_to_fit(notes_palace, home: Path) -> None:
    (home / "identity.txt").write_text("I keep notes for the team. " * 300)
    result = notes_palace.wake_up(budget=200)
    assert result["total_tokens"] <= 200
    assert result["layers"][0]["text"].endswith("…")


def test_decision_beats_code_in_a_mixed_palace(home: Path, tmp_path: Path, embedder) -> None:
    project = tmp_path / "proj"
    (project / "docs").mkdir(parents=True)
    (project / "src").mkdir()
    (project / "docs" / "adr-0012-queue.md").write_text(DECISION_NOTE)
    code = project / "src" / "queue_reader.py"
    code.write_text(CODE_FILE)
    later = time.time() + 86400 * 30  # the code is newer: type still wins
    os.utime(code, (later, later))
    palace = open_palace(str(tmp_path / "palace"))
    palace.mine(project)
    result = palace.wake_up(budget=DEFAULT_BUDGET)
    drawers = l1(result)["drawers"]
    assert [Path(d["source_file"]).name for d in drawers][0] == "adr-0012-queue.md"
    assert drawers[0]["importance"] > drawers[-1]["importance"]
    assert "We decided to drop Redis" in result["text"]
    # With room for one entry only, the decision is the one kept.
    tight = palace.wake_up(budget=120)
    names = [Path(d["source_file"]).name for d in l1(tight)["drawers"]]
    assert names == ["adr-0012-queue.md"]


def test_importance_metadata_comes_first(home: Path, tmp_path: Path, embedder) -> None:
    palace = open_palace(str(tmp_path / "palace"))
    palace.add_drawer("atlas", "notes", DECISION_NOTE, source_file="adr.md")
    palace.add_drawer(
        "atlas",
        "notes",
        "Remember: the staging database password rotates every Monday morning.",
        metadata={"importance": 5},
    )
    drawers = l1(palace.wake_up())["drawers"]
    assert drawers[0]["importance"] == 5 and "staging database" in drawers[0]["summary"]


def test_wing_filter(notes_palace) -> None:
    result = notes_palace.wake_up(wing="notes")
    assert {d["wing"] for d in l1(result)["drawers"]} == {"notes"}
    missing = notes_palace.wake_up(wing="nope")
    assert "No drawers in wing 'nope'" in missing["text"] and "notes" in l1(missing)["text"]
    assert PROTOCOL.strip() in missing["text"]


def test_no_palace_still_gives_identity_and_protocol(home: Path) -> None:
    palace = open_palace()
    result = palace.wake_up()
    assert "No palace at" in result["text"] and "mempalace init" in result["text"]
    assert PROTOCOL.strip() in result["text"]
    assert result["total_tokens"] <= DEFAULT_BUDGET
    assert not palace.path.exists(), "wake-up never creates a palace"


@pytest.mark.parametrize("budget", ["10", "1000000"])
def test_bad_budget_is_a_usage_error(cli_json, budget: str) -> None:
    doc = cli_json("wake-up", "--budget", budget, expect=2)
    assert doc["error"]["kind"] == "invalid_input" and "budget" in doc["error"]["message"]


def test_cli_json_gives_each_layer_with_its_tokens(cli_json, mined_notes) -> None:
    doc = cli_json("--palace", str(mined_notes["palace"]), "wake-up", "--budget", "600")
    assert doc["total_tokens"] <= 600
    assert [(layer["name"], layer["tokens"] > 0) for layer in doc["layers"]] == [
        (L0_NAME, True),
        (L1_NAME, True),
        (PROTOCOL_NAME, True),
    ]


def test_wake_up_loads_neither_chromadb_nor_onnxruntime(mined_notes, tmp_path: Path) -> None:
    code = (
        "import sys, json\n"
        "from typer.testing import CliRunner\n"
        "from mempalace_cli.cli import app\n"
        f"r = CliRunner().invoke(app, ['--palace', {str(mined_notes['palace'])!r}, 'wake-up', "
        "'--json'])\n"
        "assert r.exit_code == 0, r.output\n"
        "print(json.dumps({'heavy': sorted(m for m in ('chromadb', 'onnxruntime') "
        "if m in sys.modules), 'tokens': json.loads(r.stdout)['total_tokens']}))\n"
    )
    env = {**os.environ, "MEMPALACE_HOME": str(tmp_path / "home")}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    doc = json.loads(out.stdout)
    assert doc["heavy"] == [] and 0 < doc["tokens"] <= DEFAULT_BUDGET
