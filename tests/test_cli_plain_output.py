"""Runs that must not surprise or mislead (issue 26), through the real CLI: names and paths
holding rich markup print as typed, output to a pipe is whole lines with the legend on stderr,
global options work in every position, every error has one layout and speaks in CLI words, and
the slow first load of the model says so on a terminal."""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mempalace_cli.cli import app, command_tree
from mempalace_cli.cli.env import MODEL_BUILD_NOTICE
from mempalace_cli.cli.words import cli_words, internal_names_in
from tests.conftest import NOTES
from tests.terminal import run_in_terminal
from tests.test_watch_support import cli_env, mempalace_command

CLI_DIR = Path(__file__).resolve().parent.parent / "mempalace_cli" / "cli"
ANSI = "\x1b["
BOX = ("╭", "╰", "│ ")
# What the service calls things for MCP clients; a person at a shell never types these.
INTERNAL = ("mempalace_status", "list_drawers", "source_file", "max_distance", "valid_from",
            "valid_to", "as_of", "drawer_id")  # fmt: skip


def _run(home: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    """`mempalace ARGS` as a real process whose stdout and stderr are pipes."""
    return subprocess.run(
        [*mempalace_command(), *map(str, args)],
        env={**cli_env(home), **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


# -- 1. markup in what people name ---------------------------------------------------------------
HOSTILE_FILE = "[red]plan[bold] :smile:.md"  # a name holds no "/"; [red] would vanish
ENTITY, OBJECT = "Acme [red]Corp[/]", "[/]Clerk"


def test_names_and_paths_holding_markup_print_as_typed(cli, tmp_path):
    folder = tmp_path / "notes[" / "]"  # a folder that prints as .../notes[/]
    folder.mkdir(parents=True)
    (folder / HOSTILE_FILE).write_text("We keep the [red] runbook in the wiki.\n" * 3)
    (folder / "other.md").write_text("Lunch is at noon.\n")
    palace = ["--palace", str(tmp_path / "palace [/]")]

    def ok(*args: str) -> str:
        result = cli(*palace, *args)
        assert "Traceback" not in result.output and result.exception is None, result.output
        return result.stdout

    dry = ok("mine", folder, "--dry-run")
    assert HOSTILE_FILE in dry
    mined = ok("mine", folder)
    assert f"Mined {folder} into wing" in mined
    assert str(tmp_path / "palace [/]") in ok("status")
    found = ok("search", "[red] runbook [/]", "-n", "1")
    assert "We keep the [red] runbook in the wiki." in found and HOSTILE_FILE in found
    assert "[/]" in ok("search", "zzzz [/]", "--mode", "lexical")  # "No drawers match ..."
    added = ok("kg", "add", ENTITY, "uses", OBJECT, "--from", "2026-01-01")
    assert ENTITY in added and OBJECT in added
    assert ENTITY in ok("kg", "query", ENTITY) and OBJECT in ok("kg", "timeline", ENTITY)
    assert OBJECT in ok("kg", "invalidate", ENTITY, "uses", OBJECT, "--ended", "2026-02-01")
    ok("diary", "write", "claude", "Shipped [bold]it[/] :tada:", "--topic", "[x]")
    read = ok("diary", "read", "claude")
    assert "Shipped [bold]it[/] :tada:" in read and "[x]" in read
    identity = tmp_path / "identity.txt"
    identity.write_text("I am [bold]Atlas[/].\n")
    ok("identity", "--set", str(identity))
    assert "I am [bold]Atlas[/]." in ok("identity")


def _rich_sink(call: ast.Call) -> bool:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in ("print", "add_row", "Tree", "Table") or (
        name == "add" and isinstance(func, ast.Attribute) and "tree" in ast.unparse(func.value)
    )


def _fstrings_into_rich(path: Path) -> list[str]:
    """Lines where an f-string (values not escaped) is handed to rich, which reads it as markup."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and _rich_sink(node):
            if any(
                k.arg == "markup" and isinstance(k.value, ast.Constant) and k.value.value is False
                for k in node.keywords
            ):
                continue  # printed as plain text: nothing in it is read as markup
            args = [*node.args, *(k.value for k in node.keywords)]
            for arg in args:
                if any(
                    isinstance(n, ast.JoinedStr) and any(isinstance(v, ast.FormattedValue)
                                                         for v in n.values)
                    for n in ast.walk(arg)
                ):  # fmt: skip
                    found.append(f"{path.name}:{node.lineno}")
    return found


# Every module of the CLI is held to the rule.
CHECKED = sorted(p.name for p in CLI_DIR.glob("*.py"))


@pytest.mark.parametrize("module", CHECKED)
def test_values_reach_rich_only_through_markup(module):
    assert _fstrings_into_rich(CLI_DIR / module) == []


# -- 2. pipes --------------------------------------------------------------------------------------
LONG = (
    "The quarterly key rotation runbook lives in the ops wiki, and whoever is on call owns it "
    "for the week, including the restore drill, the dependency updates and the alert queue."
)


def test_output_to_a_pipe_is_whole_lines_and_the_legend_goes_to_stderr(tmp_path, embedder):
    home = tmp_path / "home"
    home.mkdir()
    folder = tmp_path / "notes"
    shutil.copytree(NOTES / "people", folder)
    (folder / "runbook.md").write_text(f"# Runbook\n\n{LONG}\n")
    palace = tmp_path / ("a-palace-folder-with-a-long-name-" * 3 + "end")
    assert _run(home, "--palace", palace, "-q", "mine", folder).returncode == 0

    piped = _run(home, "--palace", palace, "search", "who owns the key rotation runbook")
    assert piped.returncode == 0, piped.stderr
    lines = piped.stdout.splitlines()
    assert len(LONG) > 160 and any(line.endswith(f"3 │ {LONG}") for line in lines), lines
    assert ANSI not in piped.stdout + piped.stderr
    assert "score: the rank score" in piped.stderr and "similarity: cosine" in piped.stderr
    assert "score: the rank score" not in piped.stdout
    quiet = _run(home, "--palace", palace, "search", "key rotation runbook", "-q")
    assert quiet.returncode == 0 and LONG in quiet.stdout and quiet.stderr == ""

    status = _run(home, "--palace", palace, "status").stdout.splitlines()
    assert status[0].startswith(f"{palace}  ") and status[0].endswith("model use-multilingual-v3")

    # On a terminal the legend still shows (there stderr is the terminal too).
    tty = run_in_terminal(["--palace", str(palace), "search", "runbook"], cli_env(home))
    assert tty.exit_code == 0 and "score: the rank score" in tty.text


# -- 3. global options -----------------------------------------------------------------------------
def _leaves() -> list[list[str]]:
    paths: list[list[str]] = []

    def walk(cmd: Any, prefix: list[str]) -> None:
        subs = getattr(cmd, "commands", None)
        if subs is None:
            paths.append(prefix)
        for name, sub in (subs or {}).items():
            walk(sub, [*prefix, name])

    walk(command_tree(), [])
    return paths


GLOBAL = (["--json"], ["-q"], ["--quiet"], ["--palace", "/tmp/somewhere"], ["--chroma-url=x"])


@pytest.mark.parametrize("path", _leaves(), ids=" ".join)
def test_every_global_option_is_accepted_in_every_position(path, runner, home):
    for option in GLOBAL:
        for cut in range(len(path) + 1):  # before, between a group and its command, after
            args = [*path[:cut], *option, *path[cut:], "-h"]
            result = runner.invoke(app, args)
            assert result.exit_code == 0, (args, result.output)


def test_global_options_are_honoured_wherever_they_stand(cli, tmp_path):
    palace = str(tmp_path / "p")
    cli("--palace", palace, "kg", "add", "A", "uses", "B")
    assert "models" in json.loads(cli("--json", "models").stdout)
    assert json.loads(cli("kg", "--json", "stats", "--palace", palace).stdout)["triples"] == 1
    assert json.loads(cli("kg", "--palace", palace, "stats", "--json").stdout)["triples"] == 1
    cli("diary", "write", "claude", "hello", "--palace", palace)
    read = json.loads(cli("diary", "--json", "read", "claude", "--palace", palace).stdout)
    assert read["entries"][0]["content"] == "hello"
    for args in (["--json", "bogus"], ["bogus", "--json"], ["kg", "--json", "bogus"]):
        error = json.loads(cli(*args, expect=2).stdout)["error"]
        assert error["kind"] == "usage" and "bogus" in error["message"] and error["hint"]
    bad_option = json.loads(cli("--json", "--bogus", "status", expect=2).stdout)["error"]
    assert "--bogus" in bad_option["message"]


# -- 4. one error style, in CLI words ------------------------------------------------------------
def test_usage_errors_and_palace_errors_look_the_same(cli, home, tmp_path):
    nowhere = str(tmp_path / "nowhere")
    cases = [  # (args, exit status, words of the message)
        (["search"], 2, "Missing argument 'QUERY'"),
        (["bogus"], 2, "No such command 'bogus'"),
        (["search", "x", "--wign", "w"], 2, "No such option: --wign"),
        (["search", "x", "-n", "0"], 2, "Invalid value for '-n'"),
        (["kg", "stats", "--bogus"], 2, "No such option: --bogus"),
        (["--palace", nowhere, "status"], 3, "No palace found"),
        (["--palace", nowhere, "reembed", "--model", "nope"], 2, "Unknown embedding model"),
    ]
    for args, status, words in cases:
        text = cli(*args, expect=status)
        lines = text.stderr.splitlines()
        assert len(lines) == 2, (args, text.stderr)
        assert lines[0].startswith("Error: ") and words in lines[0], (args, lines)
        assert lines[1].startswith("Hint: ") and len(lines[1]) > 10, (args, lines)
        assert not any(box in text.stderr for box in BOX) and text.stdout == ""
        doc = json.loads(cli(*args, "--json", expect=status).stdout)
        assert list(doc) == ["error"] and list(doc["error"]) == ["message", "hint", "kind"]
        assert words in doc["error"]["message"] and doc["error"]["hint"], (args, doc)
    unknown = cli("--palace", nowhere, "reembed", "--model", "x", "--json", expect=2)
    assert json.loads(unknown.stdout)["error"]["kind"] == "invalid_input"


def test_cli_errors_name_commands_and_flags_not_mcp_fields(cli, cli_json, mined_notes):
    palace = ["--palace", str(mined_notes["palace"])]
    cli(*palace, "kg", "add", "Zed", "owns", "billing", "--from", "2026-03-01")
    cases = [
        (["search", "auth", "--wing", "nots"], 4, "`mempalace status`"),
        (["show", "drawer_nope"], 4, "search results"),
        (["forget", "--source", "nope.md", "--yes"], 4, "--source"),
        (["kg", "add", "A", "b", "C", "--from", "2026-02-01", "--to", "2026-01-01"], 2, "--from"),
        (["kg", "query", "Zed", "--as-of", "yesterday"], 2, "--as-of"),
        (["kg", "invalidate", "Zed", "owns", "billing", "--ended", "2026-01-01"], 2, "--from"),
    ]
    for args, status, cli_word in cases:
        said = cli(*palace, *args, expect=status).stderr
        assert cli_word in said, (args, said)
        error = cli_json(*palace, *args, expect=status)["error"]
        for text in (said, error["message"], error["hint"] or ""):
            assert not [n for n in INTERNAL if re.search(rf"\b{n}\b", text)], (args, text)


def test_cli_words_leave_paths_and_longer_names_alone():
    assert cli_words("No drawers come from '/x/source_file.md'.") == (
        "No drawers come from '/x/source_file.md'."
    )
    assert cli_words("my_source_file and valid_from_x") == "my_source_file and valid_from_x"
    assert cli_words("Use `as_of` or max_distance.") == "Use --as-of or --max-distance."
    assert internal_names_in("valid_to is before valid_from") == ["valid_to", "valid_from"]


# -- 5. the first load of the model says so ------------------------------------------------------
def test_the_first_load_of_the_model_says_so_on_a_terminal_only(tmp_path, embedder):
    home = tmp_path / "home"
    home.mkdir()
    write = ["diary", "write", "claude", "hello"]

    def fresh(name: str) -> dict[str, str]:
        return cli_env(home, MEMPALACE_CACHE_DIR=str(tmp_path / name))

    def built(name: str) -> bool:
        return any((tmp_path / name / "models").glob("use*/manifest.json"))

    first = run_in_terminal(["--palace", str(tmp_path / "p1"), *write], fresh("cache-tty"))
    assert first.exit_code == 0, first.text
    assert first.text.count(MODEL_BUILD_NOTICE) == 1 and built("cache-tty")
    again = run_in_terminal(["--palace", str(tmp_path / "p1"), *write], fresh("cache-tty"))
    assert again.exit_code == 0 and MODEL_BUILD_NOTICE not in again.text
    quiet = run_in_terminal(["--palace", str(tmp_path / "p2"), "-q", *write], fresh("cache-q"))
    assert quiet.exit_code == 0 and MODEL_BUILD_NOTICE not in quiet.text and built("cache-q")
    piped = _run(home, "--palace", tmp_path / "p3", *write, env=fresh("cache-pipe"))
    assert piped.returncode == 0 and built("cache-pipe")
    assert MODEL_BUILD_NOTICE not in piped.stderr + piped.stdout


@pytest.mark.parametrize("name", ["%", "***", "!!!", "---"])
def test_mine_refuses_a_wing_with_no_letter_or_digit(tmp_path, name):
    home = tmp_path / "home"
    home.mkdir()
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("A note about the release train.\n")
    for target in (folder, folder / "a.md"):
        done = _run(home, "--palace", tmp_path / "palace", "mine", target, "--wing", name)
        assert done.returncode == 2, done.stderr
        assert f"The wing '{name}' has no letters or digits" in done.stderr
    assert (
        not (tmp_path / "palace").exists()
        or "general" not in _run(home, "--palace", tmp_path / "palace", "status").stdout
    )


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path):
    """`mempalace ... | head -1`: no error, no traceback, the shell's status for SIGPIPE."""
    home = tmp_path / "home"
    home.mkdir()
    folder = tmp_path / "notes"
    folder.mkdir()
    for i in range(40):
        (folder / f"n{i}.md").write_text(f"Note {i} about the release train and its owner.\n")
    palace = tmp_path / "palace"
    assert _run(home, "--palace", palace, "-q", "mine", folder).returncode == 0
    for args in (["drawers", "--limit", "40"], ["search", "release train", "-n", "20"]):
        proc = subprocess.Popen(
            [*mempalace_command(), "--palace", str(palace), *args],
            env=cli_env(home),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        proc.stdout.close()  # the reader is gone before the first line
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=300) == 141, err
        assert err == "", err


@pytest.mark.parametrize("command", [["search"], ["activity"], ["drawers"], ["mine"]])
def test_help_paragraphs_are_wrapped_once_at_the_width(tmp_path, command):
    """A docstring's own line breaks don't survive into --help: at 80 columns a paragraph is
    one run of full lines, never a full line then a one-word line (rich wrapping twice)."""
    done = _run(tmp_path, *command, "--help", env={"COLUMNS": "80"})
    assert done.returncode == 0, done.stderr
    body = done.stdout.split("╭")[0].splitlines()
    for line, after in zip(body, body[1:], strict=False):
        if line.strip() and after.strip():
            assert len(line.rstrip()) > 60, (line, after)


def test_search_takes_the_source_and_distance_filters_its_hints_name(tmp_path):
    """The hint for an empty filtered search names --source and --max-distance: both exist, and
    a folder is given as results show it (relative to the mined folder)."""
    home = tmp_path / "home"
    home.mkdir()
    folder = tmp_path / "notes"
    shutil.copytree(NOTES / "decisions", folder / "decisions")
    shutil.copytree(NOTES / "people", folder / "people")
    palace = tmp_path / "palace"
    assert _run(home, "--palace", palace, "-q", "mine", folder).returncode == 0
    query = "why did we move off Auth0?"
    found = _run(home, "--palace", palace, "--json", "search", query, "--source", "people")
    assert found.returncode == 0, found.stderr
    sources = [r["source_file"] for r in json.loads(found.stdout)["results"]]
    assert sources and all("/people/" in s for s in sources), sources
    near = _run(home, "--palace", palace, "--json", "search", query, "--max-distance", "0.75")
    hits = json.loads(near.stdout)["results"]
    assert hits and all(h["similarity"] >= 0.25 - 1e-9 for h in hits), hits
    none = _run(home, "--palace", palace, "search", query, "--source", "nowhere.md")
    assert none.returncode == 4 and "--source" in none.stderr, none.stderr
    for flag in ("--source", "--max-distance"):
        assert flag in _run(home, "search", "--help").stdout


def test_forgetting_an_unknown_drawer_hints_in_cli_words(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("One note about the release train.\n")
    palace = tmp_path / "palace"
    assert _run(home, "--palace", palace, "-q", "mine", folder).returncode == 0
    done = _run(home, "--palace", palace, "forget", "--drawer", "49f2f2", "--yes")
    assert done.returncode == 4, done.stderr
    assert "`mempalace drawers`" in done.stderr
    assert " tool" not in done.stderr and "drawer_id" not in done.stderr, done.stderr


def test_suggested_commands_keep_the_palace_they_were_given(tmp_path):
    """Following "Next:" (init) or the chat-export note (mine) files into the same palace,
    not the default one."""
    home = tmp_path / "home"
    home.mkdir()
    folder = tmp_path / "convos"
    shutil.copytree(NOTES.parent / "convos", folder)
    palace = tmp_path / "my palace"
    init = _run(home, "--palace", palace, "init", folder)
    assert init.returncode == 0, init.stderr
    assert f"Next: mempalace --palace '{palace}' mine {folder}" in init.stdout, init.stdout
    dry = _run(home, "--palace", palace, "mine", folder, "--dry-run")
    assert f"mempalace --palace '{palace}' mine {folder} --mode convos" in dry.stderr, dry.stderr
