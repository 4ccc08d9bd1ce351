"""The agent diary: entries kept as drawers in wing_<agent> / diary, read newest first from the
catalogue without loading Chroma or the model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mempalace_cli.common.errors import InvalidInputError
from mempalace_cli.service import open_palace


def test_write_then_read_newest_first(cli, cli_json):
    first = cli_json("diary", "write", "claude", "Reviewed the auth migration.", "--topic", "auth")
    assert first["success"] is True and first["wing"] == "wing_claude" and first["topic"] == "auth"
    time.sleep(1.05)  # timestamps have one-second resolution; order must not rely on ties
    cli_json("diary", "write", "Claude", "Paired with Ana on billing.")
    cli_json("diary", "write", "claude", "Paired with Ana on billing.")  # same text, kept twice
    diary = cli_json("diary", "read", "claude")
    assert diary["agent"] == "claude" and diary["total"] == 3
    assert [e["content"] for e in diary["entries"]] == [
        "Paired with Ana on billing.",
        "Paired with Ana on billing.",
        "Reviewed the auth migration.",
    ]
    assert [e["topic"] for e in diary["entries"]] == ["general", "general", "auth"]
    stamps = [e["timestamp"] for e in diary["entries"]]
    assert stamps == sorted(stamps, reverse=True) and stamps[-1] == first["timestamp"]
    assert len({e["drawer_id"] for e in diary["entries"]}) == 3
    assert set(diary["entries"][0]) >= {"timestamp", "topic", "content"}

    last = cli_json("diary", "read", "claude", "--last", "1")
    assert len(last["entries"]) == 1 and last["total"] == 3

    text = cli("diary", "read", "claude", "--last", "2").stdout
    assert "claude's diary: 2 of 3 entries, newest first" in text
    assert "Reviewed the auth migration." not in text


def test_diaries_are_separate_and_searchable(cli_json):
    cli_json("diary", "write", "Claude Code", "The flaky upload test is a race in the retry loop.")
    cli_json("diary", "write", "gemini", "Nothing to report.")
    assert cli_json("diary", "read", "claude code")["total"] == 1
    assert cli_json("diary", "read", "claude")["total"] == 0
    found = cli_json("search", "flaky upload race", "--wing", "wing_claude_code")["results"]
    assert found and found[0]["room"] == "diary" and "retry loop" in found[0]["text"]


def test_text_from_stdin(cli_json):
    cli_json("diary", "write", "claude", "-", input="Line one.\nLine two.\n")
    entry = cli_json("diary", "read", "claude")["entries"][0]
    assert entry["content"] == "Line one.\nLine two."


def test_no_palace_empty_palace_and_bad_input(cli, cli_json, runner, home):
    err = cli_json("diary", "read", "claude", expect=3)["error"]
    assert err["kind"] == "no_palace"
    cli_json("kg", "add", "a", "b", "c")  # creates an empty palace
    assert cli_json("diary", "read", "claude") == {
        "agent": "claude",
        "wing": "wing_claude",
        "entries": [],
        "total": 0,
    }
    assert "diary is empty" in cli("diary", "read", "claude").stdout
    assert cli_json("diary", "write", "claude", "   ", expect=2)["error"]["kind"] == "invalid_input"
    assert cli_json("diary", "write", " ", "text", expect=2)["error"]["kind"] == "invalid_input"


def test_service_contract(home, embedder):
    palace = open_palace()
    written = palace.diary_write("claude", "Started the palace.", topic="setup")
    assert set(written) >= {"success", "drawer_id", "agent", "wing", "timestamp", "topic"}
    read = palace.diary_read("claude", last=5)
    assert read["entries"][0]["drawer_id"] == written["drawer_id"]
    assert palace.get_drawer(written["drawer_id"])["metadata"]["type"] == "diary_entry"
    with pytest.raises(InvalidInputError):
        palace.diary_read("claude", last=0)
    palace.close()


def test_read_never_imports_chromadb_or_onnxruntime(cli_json, home: Path):
    cli_json("diary", "write", "claude", "An entry to read back.")
    script = (
        "import sys, json\n"
        "from typer.testing import CliRunner\n"
        "from mempalace_cli.cli import app\n"
        "r = CliRunner().invoke(app, ['diary', 'read', 'claude', '--json'])\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('chromadb', 'onnxruntime'))\n"
        "print(json.dumps({'code': r.exit_code, 'total': json.loads(r.stdout)['total'],\n"
        "                  'heavy': heavy}))\n"
    )
    env = {**os.environ, "MEMPALACE_HOME": str(home)}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"code": 0, "total": 1, "heavy": []}
