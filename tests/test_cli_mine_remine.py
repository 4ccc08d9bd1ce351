"""Re-mining, through the real CLI: a run that would move drawers out of another wing or mode
says so and asks (on a pipe it refuses without --yes); the counts add up (added - removed is
the change in `status`); a project mine of chat exports says to use --mode convos; and one
file is mined on its own, into its folder's wing, touching only its own drawers."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

from tests.conftest import NOTES
from tests.terminal import Live, run_in_terminal

CONVOS = Path(__file__).resolve().parent.parent / "examples" / "convos"


def _total(cli_json: Any) -> int:
    return cli_json("status")["total_drawers"]


def _adds_up(report: dict[str, Any], before: int, after: int) -> None:
    drawers = report["drawers"]
    assert set(drawers) == {"added", "replaced", "removed", "unchanged"}
    assert drawers["added"] - drawers["removed"] == after - before, (drawers, before, after)


def test_re_mining_into_another_wing_refuses_on_a_pipe_then_moves_with_yes(cli, cli_json, notes):
    first = cli_json("mine", notes)
    total = _total(cli_json)
    assert first["drawers"]["added"] == total and first["displaced"] == []

    refused = cli("mine", notes, "--wing", "other", expect=2)
    said = refused.stderr
    assert f"{total} drawers" in said and "from wing notes to wing other" in said, said
    assert "Nothing was mined" in said and "--yes" in said and "--wing notes" in said, said
    as_json = cli_json("mine", notes, "--wing", "other", expect=2)
    assert as_json["error"]["kind"] == "invalid_input" and "--yes" in as_json["error"]["hint"]
    assert cli_json("status")["wings"] == {"notes": total}  # nothing moved

    # The dry run says what would move, and asks nothing.
    dry = cli("mine", notes, "--wing", "other", "--dry-run").stdout
    assert f"Would move {total} drawers" in dry and "from wing notes to wing other" in dry

    moved = cli("mine", notes, "--wing", "other", "--yes").stdout
    assert re.search(rf"drawers added +{total}\n", moved), moved
    assert re.search(rf"drawers removed +{total}\n", moved), moved
    assert f"Moved {total} drawers" in moved and "from wing notes to wing other" in moved
    assert cli_json("status")["wings"] == {"other": total}

    # The other mode is guarded the same way.
    convos = cli("mine", notes, "--wing", "other", "--mode", "convos", expect=2).stderr
    assert "(mined as projects)" in convos and "(mined as convos)" in convos, convos
    assert "--mode projects" in convos and cli_json("status")["wings"] == {"other": total}


def test_re_mining_into_another_wing_asks_on_a_terminal(notes, home, embedder, cli_json):
    cli_json("mine", notes)
    total = _total(cli_json)
    env = {**os.environ, "MEMPALACE_HOME": str(home)}
    env.pop("MEMPALACE_PALACE", None)

    def answer(reply: str):
        def on_output(live: Live) -> None:
            if "Move them?" in live.text and not answered:
                answered.append(reply)
                live.type(reply + "\r")

        answered: list[str] = []
        return on_output

    args = ["mine", str(notes), "--wing", "elsewhere"]
    declined = run_in_terminal(args, env, on_output=answer("n"))
    assert declined.exit_code == 0, declined.text
    assert "from wing notes to wing elsewhere" in declined.text
    assert "Nothing was mined" in declined.text
    assert cli_json("status")["wings"] == {"notes": total}
    accepted = run_in_terminal(args, env, on_output=answer("y"))
    assert accepted.exit_code == 0, accepted.text
    assert cli_json("status")["wings"] == {"elsewhere": total}


def test_the_counts_add_up_to_the_change_in_status(cli_json, notes):
    first = cli_json("mine", notes)
    after = _total(cli_json)
    _adds_up(first, 0, after)
    assert first["drawers"] == {"added": after, "replaced": 0, "removed": 0, "unchanged": 0}

    again = cli_json("mine", notes)
    assert again["drawers"] == {"added": 0, "replaced": 0, "removed": 0, "unchanged": after}

    # A file edited in place keeps its drawer ids: replaced, not added and removed.
    inbox = notes / "inbox.md"
    drawers_of_inbox = len(cli_json("drawers", "--source", inbox, "-n", "500")["drawers"])
    inbox.write_text(inbox.read_text().replace("e", "E", 1))
    # A new file, and a file gone.
    (notes / "fresh.md").write_text("# Fresh\n\nA brand new note about the ferry timetable.\n")
    gone = notes / "people" / "maya-okafor.md"
    gone_drawers = len(cli_json("drawers", "--source", gone, "-n", "500")["drawers"])
    gone.unlink()
    changed = cli_json("mine", notes)
    final = _total(cli_json)
    _adds_up(changed, after, final)
    drawers = changed["drawers"]
    assert drawers["replaced"] == drawers_of_inbox > 0
    assert drawers["added"] == 1 and drawers["removed"] == gone_drawers > 0
    assert drawers["unchanged"] == after - drawers_of_inbox - gone_drawers
    assert drawers["unchanged"] + drawers["replaced"] + drawers["added"] == final


def test_a_project_mine_of_chat_exports_says_to_use_mode_convos(cli, tmp_path):
    folder = tmp_path / "convos"
    shutil.copytree(CONVOS, folder)
    mined = cli("mine", folder)
    note = "These look like chat exports; mine them with --mode convos"
    assert note in mined.stderr, mined.stderr
    assert f"mempalace mine {folder} --mode convos" in mined.stderr
    # Followed, it asks before replacing what the project mine filed (--yes here).
    convos = cli("mine", folder, "--mode", "convos", "--yes")
    assert "(mined as projects) to wing convos (mined as convos)" in convos.stdout
    assert note not in convos.stderr
    # Ordinary notes get no such note.
    notes = tmp_path / "notes"
    shutil.copytree(NOTES, notes, ignore=shutil.ignore_patterns("mempalace.toml"))
    assert "chat exports" not in cli("mine", notes).stderr
    quoting = tmp_path / "quotes"  # notes that quote with ">" are notes, not transcripts
    quoting.mkdir()
    for i in range(3):
        (quoting / f"q{i}.md").write_text(f"# Quote {i}\n\n> Measure twice.\n\nSaid by Ana.\n")
    assert "chat exports" not in cli("mine", quoting).stderr


def test_mine_one_file_into_its_folders_wing_touching_only_its_drawers(cli, cli_json, tmp_path):
    project = tmp_path / "harbour"
    shutil.copytree(NOTES, project, ignore=shutil.ignore_patterns("mempalace.toml"))
    cli_json("init", project, "--wing", "team")  # mempalace.toml: wing team
    cli_json("mine", project)
    total = _total(cli_json)
    note = project / "people" / "maya-okafor.md"
    ids = {d["drawer_id"] for d in cli_json("drawers", "--source", note, "-n", "500")["drawers"]}

    # Unchanged: nothing to do, and the other files' drawers stay.
    same = cli_json("mine", note)
    assert same["wing"] == "team" and same["files"]["unchanged"] == 1
    assert same["removed_files"] == [] and _total(cli_json) == total
    # Edited: only its drawers are refiled, in the wing and room mining the folder gives them.
    note.write_text(note.read_text() + "\nMaya now also leads the billing guild.\n")
    edited = cli_json("mine", note)
    assert edited["mined_files"] == ["people/maya-okafor.md"] and edited["files"]["removed"] == 0
    assert edited["drawers"]["removed"] == 0 and edited["drawers"]["unchanged"] == 0
    now = {d["drawer_id"]: d for d in cli_json("drawers", "--source", note, "-n", "500")["drawers"]}
    assert ids <= set(now) and {(d["wing"], d["room"]) for d in now.values()} == {
        ("team", "people")
    }
    _adds_up(edited, total, _total(cli_json))
    # Mining the folder afterwards finds it filed already.
    folder = cli_json("mine", project)
    assert folder["files"]["mined"] == 0 and folder["drawers"]["removed"] == 0

    # A file in a folder with no mempalace.toml goes to the wing named after its folder.
    loose = tmp_path / "Loose Ends"
    loose.mkdir()
    (loose / "ferry.md").write_text("The ferry leaves at 7:40 from pier 3.\n")
    (loose / "other.md").write_text("Not mined: only the named file is.\n")
    one = cli_json("mine", loose / "ferry.md")
    assert one["wing"] == "loose_ends" and one["mined_files"] == ["ferry.md"]
    assert cli_json("status")["wings"]["loose_ends"] == 1
    text = cli("mine", loose / "ferry.md").stdout
    assert f"Mined {loose / 'ferry.md'} into wing loose_ends" in text
    # Chat exports are mined by folder; --watch watches a folder.
    assert cli_json("mine", loose / "ferry.md", "--mode", "convos", expect=2)["error"]["hint"]
    assert cli_json("mine", loose / "ferry.md", "--watch", expect=2)["error"]["message"]


def test_mining_a_subfolder_keeps_its_parents_wing_and_rooms(cli, cli_json, notes):
    cli_json("mine", notes)
    total = _total(cli_json)
    people = notes / "people"
    note = people / "maya-okafor.md"

    # Unchanged: the dry run and the run find its files filed already, in wing notes.
    dry = cli("mine", people, "--dry-run").stdout
    assert "into wing notes" in dry and "new file" not in dry and "Would move" not in dry, dry
    same = cli_json("mine", people)
    assert same["wing"] == "notes" and same["displaced"] == [] and same["files"]["mined"] == 0
    assert same["drawers"]["added"] == 0 and same["drawers"]["removed"] == 0
    assert cli_json("status")["wings"] == {"notes": total}
    # Edited: refiled in the wing and room mining the parent folder gives it.
    note.write_text(note.read_text() + "\nMaya now also leads the billing guild.\n")
    edited = cli_json("mine", people)
    assert edited["mined_files"] == ["people/maya-okafor.md"], edited
    assert edited["files"]["removed"] == 0 and edited["displaced"] == []
    drawers = cli_json("drawers", "--source", note, "-n", "500")["drawers"]
    assert {(d["wing"], d["room"]) for d in drawers} == {("notes", "people")}
    _adds_up(edited, total, _total(cli_json))
    total = _total(cli_json)
    assert cli_json("status")["wings"] == {"notes": total}
    assert cli_json("mine", notes)["files"]["mined"] == 0  # the parent finds it filed

    # Another --wing moves them: the dry run says so, a pipe refuses without --yes.
    moving = cli("mine", people, "--wing", "other", "--dry-run").stdout
    assert "moves from wing notes" in moving and "new file" not in moving, moving
    refused = cli("mine", people, "--wing", "other", expect=2).stderr
    assert "from wing notes to wing other" in refused and "--yes" in refused, refused
    assert cli_json("status")["wings"] == {"notes": total}
    moved = cli_json("mine", people, "--wing", "other", "--yes")
    [group] = moved["displaced"]
    n = group["drawers"]
    assert group == {"wing": "notes", "mode": "projects", "files": 7, "drawers": n}
    assert n >= 7 and moved["drawers"]["added"] == n and moved["drawers"]["removed"] == n
    assert cli_json("status")["wings"] == {"notes": total - n, "other": n}
