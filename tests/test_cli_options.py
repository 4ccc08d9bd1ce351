"""Options where people type them: global options after the sub-command, -h everywhere, an
example in every command's help (this test fails when a command lacks one), metavars that read
as words, and AAAK explained where it is offered."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from mempalace_cli.cli import COMMANDS as LISTED
from mempalace_cli.cli import app, command_tree
from mempalace_cli.cli.global_options import hoist_global_options


def _command_paths() -> list[list[str]]:
    """Every command and group of the real CLI, as the words that reach it."""
    paths: list[list[str]] = [[]]

    def walk(cmd, prefix: list[str]) -> None:
        for name, sub in getattr(cmd, "commands", {}).items():
            paths.append([*prefix, name])
            walk(sub, [*prefix, name])

    walk(command_tree(), [])
    return paths


COMMANDS = _command_paths()


def test_the_walk_finds_every_command():
    names = {" ".join(p) for p in COMMANDS}
    for expected in ("search", "show", "forget", "mcp-config", "mine", "kg query", "diary read"):
        assert expected in names


def test_the_help_lists_each_command_with_the_first_line_of_its_own_help():
    """`mempalace --help` lists commands from cli.COMMANDS without importing them; each line
    there must be the command's own (and every command declared must be listed)."""
    root = command_tree()
    assert list(root.commands) == list(LISTED), "cli.COMMANDS and the commands declared differ"
    for name, (_module, summary) in LISTED.items():
        own = " ".join(root.commands[name].get_short_help_str(limit=1000).split())
        assert summary == own, f"cli.COMMANDS[{name!r}] says {summary!r}; the command: {own!r}"
    listed = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "250"}).stdout
    for name, (_module, summary) in LISTED.items():
        assert summary[:60] in " ".join(listed.split()), name


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "mempalace")
def test_every_command_has_dash_h_an_example_and_word_metavars(path, home):
    runner = CliRunner()
    long = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    short = runner.invoke(app, [*path, "-h"], env={"COLUMNS": "200"})
    assert long.exit_code == 0 and short.exit_code == 0, short.output
    assert short.stdout == long.stdout
    text = long.stdout
    # One example per command, spelled as the command it documents.
    example = re.search(r"Example: (mempalace .*)", text)
    assert example, f"`mempalace {' '.join(path)} --help` has no example"
    if path:
        assert example.group(1).startswith("mempalace " + " ".join(path)), example.group(1)
    # No type placeholders such as <bool>, <str>, <path>, <int range>.
    assert not re.search(r"<(bool|str|int|float|path|int range|float range)>", text), text


def test_aaak_is_explained_where_it_is_offered(home):
    runner = CliRunner()
    search_help = runner.invoke(app, ["search", "-h"], env={"COLUMNS": "200"}).stdout
    assert "AAAK" in search_help and "lossy" in search_help and "agents" in search_help
    wake = runner.invoke(app, ["wake-up", "-h"], env={"COLUMNS": "200"}).stdout
    assert "--aaak-spec" in wake and "summary" in wake


def test_global_options_work_after_the_sub_command(cli, mined_notes):
    palace = str(mined_notes["palace"])
    before = cli("--palace", palace, "status", "--json")
    after = cli("status", "--palace", palace, "--json")
    equals = cli("status", f"--palace={palace}", "--json")
    assert json.loads(before.stdout) == json.loads(after.stdout) == json.loads(equals.stdout)
    assert json.loads(after.stdout)["palace_path"] == palace
    # --json before the command counts too, and errors follow it.
    early = cli("--json", "kg", "stats", "--palace", palace)
    assert "triples" in json.loads(early.stdout)
    missing = cli("--json", "status", "--palace", str(mined_notes["home"] / "nope"), expect=3)
    assert json.loads(missing.stdout)["error"]["kind"] == "no_palace"
    # --quiet anywhere: accepted, results still printed.
    quiet = cli("status", "-q", "--palace", palace)
    assert "drawers" in quiet.stdout


def test_hoisting_leaves_arguments_after_double_dash_alone():
    assert hoist_global_options(["search", "x", "--palace", "/p", "-q"]) == [
        "--palace",
        "/p",
        "-q",
        "search",
        "x",
    ]
    assert hoist_global_options(["diary", "write", "a", "--", "--palace"]) == [
        "diary",
        "write",
        "a",
        "--",
        "--palace",
    ]
