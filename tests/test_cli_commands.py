"""Everyday commands through the real CLI: `mine --dry-run` file by file, one not-found rule
(message, closest names, exit 4) for every lookup and empty filter, `show`, `forget`, and
`search --since/--before`."""

from __future__ import annotations

import json
import os
import re
import shutil

from tests.conftest import NOTES
from tests.terminal import Live, run_in_terminal

NOT_FOUND = 4


def test_dry_run_lists_each_file_with_its_action_and_reason(cli, cli_json, notes):
    cli_json("mine", notes)
    before = cli_json("status")
    (notes / "project" / "release-checklist.md").open("a").write("- One more check.\n")
    (notes / "decisions" / "0009-new.md").write_text("# ADR-0009\n\nWe keep backups for a year.\n")
    (notes / "inbox.md").unlink()
    (notes / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    plan = {e["file"]: e for e in cli_json("mine", notes, "--dry-run")["plan"]}
    assert plan["project/release-checklist.md"]["action"] == "change"
    assert plan["project/release-checklist.md"]["reason"] == "content changed"
    assert plan["decisions/0009-new.md"]["action"] == "add"
    assert plan["decisions/0009-new.md"]["drawers"] == 1
    assert plan["inbox.md"]["action"] == "remove" and plan["inbox.md"]["drawers"] > 0
    assert plan["logo.png"]["action"] == "skip" and plan["logo.png"]["reason"]
    assert len(plan) == 4  # unchanged files are counted, not listed
    text = cli("mine", notes, "--dry-run").stdout
    assert re.search(
        r"change\s+project/release-checklist\.md\s+\(\d+ drawers?, content changed\)", text
    )
    assert re.search(r"add\s+decisions/0009-new\.md\s+\(1 drawer, new file\)", text)
    assert re.search(r"remove\s+inbox\.md\s+\(\d+ drawers, no longer in the folder\)", text)
    assert re.search(r"skip\s+logo\.png\s+\(", text)
    assert "Dry run: nothing was written." in text
    assert cli_json("status") == before  # nothing was written
    # A file moving to another wing says so.
    moved = {e["file"]: e for e in cli_json("mine", notes, "--wing", "other", "--dry-run")["plan"]}
    assert moved["people/maya-okafor.md"]["reason"] == "moves from wing notes"


def test_one_not_found_rule_everywhere(cli, cli_json, mined_notes):
    palace = str(mined_notes["palace"])
    cases = [
        (["search", "auth", "--wing", "notse"], "No wing named 'notse'", "notes"),
        (["search", "auth", "--room", "decisons"], "No room named 'decisons'", "decisions"),
        (["kg", "query", "Clerc"], "No entity named 'Clerc'", None),
        (["traverse", "decisons"], "No room named 'decisons'", "decisions"),
        (["show", "drawer_nope"], "No drawer with id 'drawer_nope'", None),
        (["forget", "--wing", "notse", "--yes"], "nothing was removed", "notes"),
        (["search", "auth", "--since", "2100-01-01"], "No drawers match 'auth'", None),
    ]
    for args, message, closest in cases:
        text = cli(*args, "--palace", palace, expect=NOT_FOUND)
        assert text.stderr.startswith("Not found: ") and message in text.stderr, (args, text)
        if closest:
            assert closest in text.stderr.split("Hint:")[1], (args, text.stderr)
        doc = cli_json(*args, "--palace", palace, expect=NOT_FOUND)
        assert doc["error"]["kind"] == "not_found" and doc["error"]["message"], args
    # A query that simply matches nothing, with no filter, is not an error.
    lexical = cli("search", "zzzzqqqq", "--mode", "lexical", "--palace", palace)
    assert "No drawers match 'zzzzqqqq'" in lexical.stdout


def test_show_prints_the_whole_drawer_its_metadata_and_neighbours(cli, cli_json, mined_notes):
    palace = str(mined_notes["palace"])
    hit = cli_json("search", "Clerk migration plan cutover", "-n", "1", "--palace", palace)
    drawer_id = hit["results"][0]["drawer_id"]
    shown = cli_json("show", drawer_id, "--palace", palace)
    drawer, around = shown["drawer"], shown["neighbours"]
    assert drawer["drawer_id"] == drawer_id and drawer["text"] == hit["results"][0]["text"]
    assert around["total"] >= 2 and 1 <= around["position"] <= around["total"]
    neighbour_ids = [n["drawer_id"] for n in around["before"] + around["after"]]
    # The neighbours are the other drawers of the same file, by id.
    same_file = [
        r["drawer_id"]
        for r in cli_json("search", "ADR-0006 Auth0 Clerk", "-n", "20", "--palace", palace)[
            "results"
        ]
        if r["source_file"] == drawer["source_file"] and r["drawer_id"] != drawer_id
    ]
    assert set(neighbour_ids) == set(same_file) and neighbour_ids
    text = cli("show", drawer_id, "--palace", palace).stdout
    start = drawer["metadata"]["line_start"]
    for offset, line in enumerate(drawer["text"].splitlines()):
        if line.strip() and len(line) < 60:
            assert f"{start + offset} │ {line}" in text
    assert "decisions/0006-auth0-to-clerk.md:" in text
    assert f"drawer {around['position']} of {around['total']} in its file" in text
    assert "added_by: mempalace-cli" in text and "In the same file:" in text
    for neighbour in neighbour_ids:
        assert neighbour in text


def test_forget_lists_then_needs_yes_off_a_terminal(cli, cli_json, notes):
    cli_json("mine", notes)
    total = cli_json("status")["total_drawers"]
    inbox = str(notes / "inbox.md")
    refused = cli("forget", "--source", inbox, expect=2)
    assert "Will remove" in refused.stdout and "inbox.md" in refused.stdout
    assert "--yes" in refused.stderr
    assert cli_json("status")["total_drawers"] == total  # nothing removed
    listed = cli_json("forget", "--source", inbox, "--dry-run")
    ids = [d["id"] for d in listed["drawers"]]
    assert ids and listed["dry_run"] is True
    report = cli_json("forget", "--source", inbox, "--yes")
    assert report["removed"] == len(ids) and [d["id"] for d in report["drawers"]] == ids
    assert report["files_forgotten"] == [inbox]
    assert cli_json("status")["total_drawers"] == total - len(ids)
    for drawer_id in ids:
        assert cli_json("show", drawer_id, expect=4)["error"]["kind"] == "not_found"
    # A room of a wing, then one drawer by id.
    people = cli_json("forget", "--wing", "notes", "--room", "people", "--yes")
    assert people["removed"] > 0 and {d["room"] for d in people["drawers"]} == {"people"}
    assert "people" not in cli_json("status")["taxonomy"]["notes"]
    one = cli_json("search", "release checklist", "-n", "1")["results"][0]["drawer_id"]
    assert cli_json("forget", "--drawer", one, "--yes")["removed"] == 1
    # Mining again files the forgotten file again (it left the mining record).
    again = cli_json("mine", notes)
    assert "inbox.md" in again["mined_files"]
    assert cli("forget", "--room", "people", expect=2).stderr  # a room needs its wing


def test_forget_asks_on_a_terminal(notes, home, embedder, cli_json):
    cli_json("mine", notes)
    env = {**os.environ, "MEMPALACE_HOME": str(home)}
    env.pop("MEMPALACE_PALACE", None)

    def answer(reply: str):
        def on_output(live: Live) -> None:
            if "Remove these" in live.text and not answered:
                answered.append(reply)
                live.type(reply + "\r")

        answered: list[str] = []
        return on_output

    source = str(notes / "inbox.md")
    declined = run_in_terminal(["forget", "--source", source], env, on_output=answer("n"))
    assert declined.exit_code == 0 and "Nothing was removed." in declined.text
    assert cli_json("forget", "--source", source, "--dry-run")["matched"] > 0
    accepted = run_in_terminal(["forget", "--source", source], env, on_output=answer("y"))
    assert accepted.exit_code == 0, accepted.text
    assert re.search(r"Removed \d+ drawers\.", accepted.text)
    assert cli_json("forget", "--source", source, "--dry-run", expect=4)["error"]


def test_search_since_and_before_filter_by_date(cli_json, tmp_path):
    folder = tmp_path / "dated"
    shutil.copytree(NOTES / "people", folder)
    old, new = folder / "maya-okafor.md", folder / "tomas-reyes.md"
    os.utime(old, (1_600_000_000, 1_600_000_000))  # 2020-09-13
    os.utime(new, (1_800_000_000, 1_800_000_000))  # 2027-01-15
    cli_json("mine", folder)
    everyone = "who is on the team"
    since = cli_json("search", everyone, "-n", "20", "--since", "2027-01-01")["results"]
    assert since and {r["source_file"] for r in since} == {str(new)}
    before = cli_json("search", everyone, "-n", "20", "--before", "2021-01-01")["results"]
    assert before and {r["source_file"] for r in before} == {str(old)}
    assert cli_json("search", everyone, "--since", "2030-01-01", expect=4)["results"] == []
    bad = cli_json("search", everyone, "--since", "the other day", expect=2)
    assert bad["error"]["kind"] == "invalid_input"


def test_forget_all_needs_one_kind_of_target(cli, home, embedder):
    text = cli("forget", expect=2)
    assert "Say what to forget" in text.stderr
    both = cli("forget", "--drawer", "x", "--wing", "y", expect=2)
    assert "one of them" in both.stderr
    assert json.loads(cli("forget", "--json", expect=2).stdout)["error"]["kind"] == "invalid_input"
