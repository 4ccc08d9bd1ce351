"""Every drawer is dated by what it records: a chat turn's own time, a note's front matter, its
`Date:` line, a dated title, file name or log section, the file's time only when nothing else
is known. `--since/--before` (and `show`, search hits, `--json`) use that date; a drawer with
no date is left out of a date filter and counted; a palace mined by an older version gets its
content dates on the next mine."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from mempalace_cli.common.config import COLLECTION_NAME
from mempalace_cli.service import open_palace
from tests.conftest import NOTES
from tests.test_mcp_support import mempalace_command
from tests.test_watch_support import cli_env

CONVOS = Path(__file__).resolve().parent.parent / "examples" / "convos"
OLD_TIME = 1_600_000_000  # 2020-09-13T12:26:40 UTC

NOTES_BY_SOURCE = {
    "front-matter.md": (
        "---\ntitle: Vendor review\ndate: 2025-02-03\nupdated: 2025-09-01\n---\n\n"
        "# Vendor review\n\nWe reviewed the courier vendors and kept Parcelly for another year.\n"
    ),
    "adr.md": (
        "# ADR-0042: Queue on Redis streams\n\n- **Status:** Accepted\n- **Date:** 2025-03-04\n\n"
        "We move the job queue from cron polling to Redis streams consumer groups.\n"
    ),
    "meetings/2025-04-05-sync.md": (
        "# Weekly sync\n\nAttendees: Ana, Ben.\n\nThe kiln temperature sensor was recalibrated.\n"
    ),
    "zh.md": ("# 季度回顾\n\n日期：2025年7月8日\n\n我们决定把仓库搬到里斯本，租约签三年。\n"),
    "log.md": (
        "# Greenhouse log\n\nNewest first.\n\n## 2025-06-01 — Tomatoes\n\n"
        "The tomato seedlings went into the raised beds after the last frost.\n\n"
        + "Watering twice a day in the heat. " * 40
        + "\n\n## 2025-05-01 — Basil\n\nThe basil was sown indoors under the grow lamp.\n\n"
        + "Misting the basil every morning. " * 40
        + "\n"
    ),
    "undated.md": "# Bicycle\n\nThe bicycle chain was replaced and the gears were indexed.\n",
}


def _by_source(palace_path: Path) -> dict[str, list[dict[str, Any]]]:
    palace = open_palace(str(palace_path))
    try:
        out: dict[str, list[dict[str, Any]]] = {}
        for row in palace.catalog.iter_drawers(order="source_file, chunk_index"):
            out.setdefault(Path(row.source_file).name, []).append(row.metadata)
        return out
    finally:
        palace.close()


def test_each_source_dates_its_drawers(cli_json: Any, cli: Any, tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    for rel, text in NOTES_BY_SOURCE.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text, encoding="utf-8")
    os.utime(folder / "undated.md", (OLD_TIME, OLD_TIME))
    palace = tmp_path / "palace"
    cli_json("--palace", palace, "mine", folder)

    drawers = _by_source(palace)
    dated = {
        name: [(m["date"], m["date_source"]) for m in metas] for name, metas in drawers.items()
    }
    assert dated["front-matter.md"] == [("2025-02-03", "front_matter")]
    assert dated["adr.md"] == [("2025-03-04", "date_line")]
    assert dated["2025-04-05-sync.md"] == [("2025-04-05", "file_name")]
    assert dated["zh.md"] == [("2025-07-08", "date_line")]
    assert dated["undated.md"] == [("2020-09-13T12:26:40", "file_time")]
    # A running log: each entry's drawers carry the entry's date.
    log = dated["log.md"]
    assert log[0] == ("2025-06-01", "section") and log[-1] == ("2025-05-01", "section")
    assert set(log) == {("2025-06-01", "section"), ("2025-05-01", "section")}

    def sources(*window: str) -> set[str]:
        found = cli_json("--palace", palace, "search", "what happened", "-n", "30", *window)
        return {Path(r["source_file"]).name for r in found["results"]}

    assert sources("--since", "2025-04-01", "--before", "2025-05-01") == {"2025-04-05-sync.md"}
    assert sources("--since", "2025-02-01", "--before", "2025-03-05") == {
        "front-matter.md",
        "adr.md",
    }
    assert sources("--before", "2021-01-01") == {"undated.md"}
    assert sources("--since", "2025-07-08") == {"zh.md"}
    # `show` says the date and where it came from.
    one = cli_json("--palace", palace, "search", "Redis streams queue", "-n", "1")["results"][0]
    assert one["date"] == "2025-03-04"
    shown = cli("--palace", palace, "show", one["drawer_id"])
    assert "dated    2025-03-04 (from a date line in the note)" in shown.stdout


def test_a_fresh_clone_finds_the_release_meeting_by_its_date(
    cli_json: Any, cli: Any, mined_notes: dict
) -> None:
    """The issue's case: every file of a fresh clone has today's time, and the go/no-go
    meeting of 2026-05-05 must still be in May 2026."""
    palace = ("--palace", mined_notes["palace"])
    window = ("--since", "2026-04-01", "--before", "2026-06-01")
    found = cli_json("search", "release go/no-go decision", *palace, "-n", "3", *window)
    top = found["results"][0]
    assert top["source_file"].endswith("meetings/2026-05-05-release-go-no-go.md")
    assert top["date"] == "2026-05-05" and top["metadata"]["date_source"] == "title"
    assert all("2026-04-01" <= r["date"] < "2026-06-01" for r in found["results"])
    early = cli_json(
        "search", "release go/no-go decision", *palace, "-n", "10", "--before", "2026-04-01"
    )
    assert not any("2026-05-05" in r["source_file"] for r in early["results"])
    # The hit's date shows in the text output too.
    text = cli("search", "release go/no-go decision", *palace, "-n", "1", *window)
    assert "2026-05-05" in text.stdout.splitlines()[0]


@pytest.fixture
def exports(tmp_path: Path) -> Path:
    dest = tmp_path / "my-chats"
    shutil.copytree(CONVOS, dest)
    return dest


def test_chat_drawers_are_dated_by_their_own_time(
    cli_json: Any, exports: Path, tmp_path: Path
) -> None:
    """A June 2025 chat is not found with --since 2026-01-01 (the file is new, the chat is
    not), and is found in June 2025."""
    palace = ("--palace", tmp_path / "palace")
    cli_json(*palace, "mine", exports, "--mode", "convos")
    query = "why does test_charge_retries_on_timeout fail on CI"

    def claude_code(*window: str) -> list[dict[str, Any]]:
        found = cli_json("search", query, *palace, "-n", "20", *window, expect=None)
        return [r for r in found.get("results", []) if "claude-code" in r["source_file"]]

    assert claude_code("--since", "2026-01-01") == []
    june = claude_code("--since", "2025-06-01", "--before", "2025-07-01")
    assert june and june[0]["date"].startswith("2025-06-03T09:14")
    assert june[0]["metadata"]["date_source"] == "chat"
    # A transcript with no times of its own is dated by its file (name, else time).
    drawers = _by_source(tmp_path / "palace")
    assert {m["date_source"] for m in drawers["greenhouse-interview.txt"]} == {"file_time"}
    # Codex: the current layout has times (chat); the older one has none, its dated name does.
    codex = {name: ms for name, ms in drawers.items() if name.startswith("rollout-")}
    assert len(codex) == 2
    for name, metas in codex.items():
        assert {m["date"][:10] for m in metas} == {name[len("rollout-") :][:10]}
    assert {m["date_source"] for ms in codex.values() for m in ms} == {"chat", "file_name"}


def test_hand_filed_drawers_are_dated_when_filed_unless_given_a_date(tmp_path: Path) -> None:
    from mempalace_cli.common.config import resolve_settings
    from mempalace_cli.common.errors import InvalidInputError
    from mempalace_cli.service import Palace

    palace = Palace(resolve_settings(tmp_path / "palace", home=tmp_path))
    try:
        added = palace.add_drawer("ops", "infra", "The staging cluster is rebuilt on Sundays.")
        drawer = palace.get_drawer(added["drawer_id"])
        meta = drawer["metadata"]
        assert meta["date_source"] == "filed"
        assert drawer["filed_at"].startswith(meta["date"])
        given = palace.add_drawers(
            [
                {
                    "wing": "ops",
                    "room": "infra",
                    "content": "The old VPN was retired.",
                    "metadata": {"date": "2019-11-02"},
                }
            ]
        )
        old = palace.get_drawer(given["drawer_ids"][0])["metadata"]
        assert (old["date"], old["date_source"]) == ("2019-11-02", "given")
        assert palace.search("VPN retired", before="2020-01-01")["results"]
        with pytest.raises(InvalidInputError, match="Drawer 0: The drawer's date 'soon'"):
            palace.add_drawers(
                [{"wing": "ops", "room": "x", "content": "y", "metadata": {"date": "soon"}}]
            )
    finally:
        palace.close()


# -- palaces written by others ------------------------------------------------------------------
REWRITE = textwrap.dedent(
    """
    import json, sys, chromadb
    spec = json.loads(sys.argv[1])
    col = chromadb.PersistentClient(path=spec["palace"]).get_collection(spec["collection"])
    if spec["mode"] == "older_version":  # what the miner wrote before content dates
        got = col.get(include=["embeddings", "documents", "metadatas"])
        metas = []
        for meta in got["metadatas"]:
            meta = dict(meta)
            meta.pop("date_source", None)
            meta["date"] = spec["file_time"]
            metas.append(meta)
        col.delete(ids=got["ids"])  # an upsert would keep date_source (metadata merges)
        col.add(ids=got["ids"], embeddings=got["embeddings"], documents=got["documents"],
                metadatas=metas)
    else:  # drawers as MemPalace 3.11 files them: filed_at, a chat's timestamp
        col.add(ids=spec["ids"], embeddings=spec["vectors"], documents=spec["texts"],
                metadatas=spec["metas"])
    print(json.dumps({"count": col.count()}))
    """
)


def _rewrite(palace: Path, spec: dict[str, Any]) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", REWRITE, json.dumps({"palace": str(palace), **spec})],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr


def _run(home: Path, palace: Path, *args: Any, expect: int = 0) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [*mempalace_command(), "--palace", str(palace), *map(str, args)],
        env=cli_env(home),
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == expect, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


def _json(home: Path, palace: Path, *args: Any) -> Any:
    return json.loads(_run(home, palace, *args, "--json").stdout)


def test_a_palace_mined_by_an_older_version_is_dated_on_the_next_mine(
    tmp_path: Path, embedder: Any
) -> None:
    home, palace, folder = tmp_path / "home", tmp_path / "palace", tmp_path / "notes"
    home.mkdir()
    shutil.copytree(NOTES / "meetings", folder / "meetings")
    shutil.copytree(NOTES / "people", folder / "people")
    _json(home, palace, "mine", folder)
    _rewrite(
        palace,
        {
            "collection": COLLECTION_NAME,
            "mode": "older_version",
            "file_time": "2026-12-01T06:24:54+00:00",
        },
    )
    # The older version dated every note by its file's time: the May meeting is not in May,
    # and the search says why and what to do.
    may = ("--since", "2026-05-01", "--before", "2026-06-01")
    missed = _run(home, palace, "search", "release go/no-go", "-n", "5", *may, "--json", expect=4)
    before = json.loads(missed.stdout)
    assert before["results"] == []
    assert (
        "mined by an older version are dated by the file's time at first mining" in (before["hint"])
    )
    assert "Mine their folder again (`mempalace mine DIR`)" in before["hint"]
    plan = _json(home, palace, "mine", folder, "--dry-run")
    reasons = {e["file"]: e["reason"] for e in plan["plan"]}
    assert reasons["meetings/2026-05-05-release-go-no-go.md"] == (
        "gets its content date (mined by an older version)"
    )
    assert reasons["people/maya-okafor.md"] == "gets its content date (mined by an older version)"
    _json(home, palace, "mine", folder)
    after = _json(home, palace, "search", "release go/no-go", "-n", "5", *may)
    assert after["results"][0]["source_file"].endswith("2026-05-05-release-go-no-go.md")
    assert after["results"][0]["date"] == "2026-05-05" and "hint" not in after
    again = _json(home, palace, "mine", folder, "--dry-run")
    assert again["plan"] == []  # every file unchanged and dated


def test_drawers_without_a_date_are_left_out_and_counted(tmp_path: Path, embedder: Any) -> None:
    home, palace, folder = tmp_path / "home", tmp_path / "palace", tmp_path / "notes"
    home.mkdir()
    folder.mkdir()
    (folder / "2025-06-10-kiln.md").write_text(
        "# Kiln\n\nThe kiln was fired to cone six for the glaze test.\n", encoding="utf-8"
    )
    _json(home, palace, "mine", folder)
    texts = [
        "The kiln shelf cracked during the glaze firing and was replaced.",
        "Asked about kiln glaze firing schedules: cone six, slow cool.",
    ]
    _rewrite(
        palace,
        {
            "collection": COLLECTION_NAME,
            "mode": "foreign",
            "ids": ["drawer_pottery_general_0", "drawer_pottery_chats_1"],
            "texts": texts,
            "vectors": [[float(x) for x in v] for v in embedder.embed(texts)],
            "metas": [
                {
                    "wing": "pottery",
                    "room": "general",
                    "source_file": "/old/kiln.md",
                    "chunk_index": 0,
                    "filed_at": "2026-01-05T10:00:00",
                },
                {
                    "wing": "pottery",
                    "room": "chats",
                    "source_file": "/old/chat.json",
                    "chunk_index": 0,
                    "filed_at": "2026-01-05T10:00:00",
                    "timestamp": "2025-06-20T08:00:00+00:00",
                },
            ],
        },
    )
    june = _run(
        home,
        palace,
        "search",
        "kiln glaze firing",
        "-n",
        "10",
        "--since",
        "2025-06-01",
        "--before",
        "2025-07-01",
        "--json",
    )
    found = json.loads(june.stdout)
    # The mined note (dated by its file name) and MemPalace's chat (its timestamp) are in June;
    # the drawer with only a filing time has no date: left out, and counted.
    assert {Path(r["source_file"]).name for r in found["results"]} == {
        "2025-06-10-kiln.md",
        "chat.json",
    }
    assert found["undated_left_out"] == 1
    assert "1 drawer with no date of its own" in found["hint"]
    assert "was left out by the date filter" in found["hint"]
    text = _run(home, palace, "search", "kiln glaze firing", "--since", "2025-06-01")
    assert "1 drawer with no date of its own" in text.stderr
    # Without a date filter nothing is left out, and the undated drawer is found.
    plain = _json(home, palace, "search", "kiln shelf cracked", "-n", "3")
    assert plain["results"][0]["drawer_id"] == "drawer_pottery_general_0"
    assert plain["results"][0]["date"] is None and "hint" not in plain
    shown = _run(home, palace, "show", "drawer_pottery_general_0")
    assert "no date of its own: --since/--before leave it out" in shown.stdout
