"""`mempalace drawers` lists drawers (a table on a terminal, tab-separated lines on a pipe, one
JSON document with --json), filtered by wing, room or source and paged; `show` and `forget`
take any unique start of a drawer id."""

from __future__ import annotations

import os
import re
from typing import Any

from tests.terminal import run_in_terminal

NOT_FOUND, INVALID = 4, 2


def test_drawers_lists_pages_and_filters(cli, cli_json, mined_notes):
    palace = str(mined_notes["palace"])
    status = cli_json("status", "--palace", palace)
    first = cli_json("drawers", "--palace", palace)
    assert first["total"] == status["total_drawers"] and len(first["drawers"]) == 20
    assert first["has_more"] is True
    keys = {"drawer_id", "wing", "room", "source_file", "filed_at", "preview", "chars"}
    assert keys <= set(first["drawers"][0])
    # Pages follow on without a gap or a repeat, past the service's page of 100 too.
    everything = cli_json("drawers", "--palace", palace, "--limit", "1000")["drawers"]
    assert len(everything) == status["total_drawers"] > 100
    assert len({d["drawer_id"] for d in everything}) == len(everything)
    second = cli_json("drawers", "--palace", palace, "--offset", "20", "-n", "5")["drawers"]
    assert [d["drawer_id"] for d in second] == [d["drawer_id"] for d in everything[20:25]]

    people = cli_json("drawers", "--palace", palace, "--wing", "notes", "--room", "people")
    assert people["total"] == status["rooms"]["people"]
    assert {(d["wing"], d["room"]) for d in people["drawers"]} == {("notes", "people")}
    note = mined_notes["notes"] / "people" / "maya-okafor.md"
    from_file = cli_json("drawers", "--palace", palace, "--source", str(note))
    assert from_file["total"] > 0
    assert {d["source_file"] for d in from_file["drawers"]} == {str(note)}
    folder = cli_json("drawers", "--palace", palace, "--source", str(note.parent), "-n", "500")
    under = [d for d in everything if d["source_file"].startswith(f"{note.parent}/")]
    assert folder["total"] == len(under) > from_file["total"]

    # On a pipe: one tab-separated line per drawer (id first), nothing else on stdout.
    plain = cli("drawers", "--palace", palace, "--wing", "notes", "-n", "3")
    lines = plain.stdout.splitlines()
    assert len(lines) == 3 and all(len(line.split("\t")) == 6 for line in lines)
    assert lines[0].split("\t")[0] == first["drawers"][0]["drawer_id"]
    assert "--offset 3" in plain.stderr  # how to see the next page

    # A filter that matches nothing: the one not-found rule, with the closest names.
    missed = cli("drawers", "--palace", palace, "--wing", "notse", expect=NOT_FOUND)
    assert missed.stderr.startswith("Not found:") and "notes" in missed.stderr.split("Hint:")[1]
    doc = cli_json("drawers", "--palace", palace, "--wing", "notse", expect=NOT_FOUND)
    assert doc["drawers"] == [] and doc["error"]["kind"] == "not_found"


def test_drawers_prints_a_table_on_a_terminal(mined_notes, tmp_path):
    env = {**os.environ, "MEMPALACE_HOME": str(tmp_path / "home")}
    env.pop("MEMPALACE_PALACE", None)
    args = ["--palace", str(mined_notes["palace"]), "drawers", "--room", "decisions", "-n", "4"]
    run = run_in_terminal(args, env, columns=120)
    assert run.exit_code == 0, run.text
    lines = run.text.splitlines()
    header = next(line for line in lines if line.lstrip().startswith("id"))
    assert all(word in header for word in ("wing / room", "source", "filed", "text"))
    rows = [line for line in lines if re.match(r"drawer_notes_decisions_[0-9a-f]{16} ", line)]
    assert len(rows) == 4 and all(len(line) <= 120 for line in lines)
    assert all("notes / decisions" in row for row in rows)
    assert "Drawers 1-4 of" in run.text and "Next page: --offset 4." in run.text


def _ids(cli_json: Any, palace: str) -> list[str]:
    return [
        d["drawer_id"] for d in cli_json("drawers", "--palace", palace, "-n", "1000")["drawers"]
    ]


def test_show_and_forget_take_a_unique_prefix(cli, cli_json, notes):
    cli_json("mine", notes)
    palace = cli_json("status")["palace_path"]
    ids = sorted(_ids(cli_json, palace))
    target = ids[0]
    # The shortest start of the id that no other id shares, and the start of its digest.
    length = next(
        n for n in range(6, len(target)) if sum(i.startswith(target[:n]) for i in ids) == 1
    )
    digest = target.rsplit("_", 1)[1]
    for short in (target[:length], digest[:8]):
        shown = cli_json("show", short)
        assert shown["drawer"]["drawer_id"] == target, short
    assert target in cli("show", digest[:8]).stdout

    # Ambiguous: an error listing the matches; nothing shown or removed.
    ambiguous = cli("show", "drawer_notes_people", expect=INVALID)
    people = [i for i in ids if i.startswith("drawer_notes_people")]
    assert f"is the start of {len(people)} drawer ids" in ambiguous.stderr
    assert people[0] in ambiguous.stderr and "Hint:" in ambiguous.stderr
    # Too short to stand for an id: refused, even when it would be unique.
    short = cli("show", digest[:5], expect=INVALID)
    assert "at least 6 characters" in short.stderr
    assert cli_json("show", "0" * 16 + "zz", expect=NOT_FOUND)["error"]["kind"] == "not_found"

    total = cli_json("status")["total_drawers"]
    refused = cli("forget", "--drawer", "drawer_notes_", "--yes", expect=INVALID)
    assert "is the start of" in refused.stderr and cli_json("status")["total_drawers"] == total
    gone = cli_json("forget", "--drawer", digest[:8], "--drawer", "drawer_nothing_like_it", "--yes")
    assert [d["id"] for d in gone["drawers"]] == [target] and gone["removed"] == 1
    assert gone["missing"] == ["drawer_nothing_like_it"]
    assert cli_json("status")["total_drawers"] == total - 1
    assert cli_json("show", target, expect=NOT_FOUND)["error"]["kind"] == "not_found"
