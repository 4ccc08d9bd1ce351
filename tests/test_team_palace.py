"""A team palace: two machines (two homes, separate processes) on one real `chroma run`.

Each test works in its own database on the server (MEMPALACE_CHROMA_DATABASE), so tests never
see each other's palaces."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import NOTES
from tests.team_support import Machine, server_drawer_ids, shared_server, unique_database
from tests.test_mcp_support import mempalace_command

VISIBLE_WITHIN = 5.0  # seconds: the bound a long-lived reader promises

BACKUP_NOTE = (
    "# Backups\n\nThe off-site backup vault is rotated every quarter under the codename "
    "Quokkafjord; the restore drill runs on the first Tuesday after each rotation.\n"
)
PAGER_NOTE = (
    "# On-call\n\nThe pager rotation for the ingestion team hands over on Mondays at 09:00; "
    "escalations go to the platform lead after thirty minutes.\n"
)
LATE_NOTE = (
    "# Late addition\n\nThe staging cluster named Wombatheim is rebuilt from scratch every "
    "Sunday night at 02:00 UTC by the infrastructure cron job.\n"
)


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with shared_server(tmp_path_factory.mktemp("team-chroma")) as url:
        yield url


@pytest.fixture
def team(tmp_path: Path, server_url: str) -> tuple[Machine, Machine]:
    database = unique_database()
    return Machine(tmp_path / "a", server_url, database), Machine(
        tmp_path / "b", server_url, database
    )


def _ids(hits: dict[str, Any]) -> list[str]:
    return [h["drawer_id"] for h in hits["results"]]


def _texts(hits: dict[str, Any]) -> str:
    return "\n".join(h["text"] for h in hits["results"])


def test_a_second_machine_sees_drawers_facts_and_diary(
    team: tuple[Machine, Machine], tmp_path: Path
) -> None:
    a, b = team
    folder = tmp_path / "ops-notes"
    folder.mkdir()
    (folder / "backups.md").write_text(BACKUP_NOTE)
    (folder / "oncall.md").write_text(PAGER_NOTE)
    mined = a.json("mine", folder)
    assert mined["drawers"]["added"] >= 2
    a.json("kg", "add", "Quokkafjord", "stored_in", "Frankfurt DC", "--from", "2026-01-01")
    a.json("diary", "write", "ops-agent", "Checked the vault rotation; the drill is booked.")

    # B: a fresh process on another home, nothing local yet.
    assert not b.palace.exists()
    by_word = b.json("search", "Quokkafjord", "--mode", "lexical")
    assert "Quokkafjord" in _texts(by_word)
    by_meaning = b.json("search", "which codename does the backup vault rotation use")
    assert "Quokkafjord" in by_meaning["results"][0]["text"]
    facts = b.json("kg", "query", "quokkafjord", "--as-of", "2026-06-01")
    assert [(f["subject"], f["predicate"], f["object"]) for f in facts["facts"]] == [
        ("Quokkafjord", "stored_in", "Frankfurt DC")
    ]
    # Dates that leave nothing are "not found" (exit 4), with the empty result in the JSON.
    before = b.json("kg", "query", "quokkafjord", "--as-of", "2025-12-31", expect=4)
    assert before["facts"] == []
    diary = b.json("diary", "read", "ops-agent")
    assert [e["content"] for e in diary["entries"]] == [
        "Checked the vault rotation; the drill is booked."
    ]

    # A removes the file and re-mines: B's next search no longer returns it.
    (folder / "backups.md").unlink()
    a.json("mine", folder)
    assert "Quokkafjord" not in _texts(b.json("search", "Quokkafjord", "--mode", "lexical"))
    meaning = b.json("search", "which codename does the backup vault rotation use")
    assert "Quokkafjord" not in _texts(meaning)
    assert "pager rotation" in _texts(b.json("search", "pager rotation", "--mode", "lexical"))


def test_a_running_mcp_server_sees_another_machines_drawer_within_5s(
    team: tuple[Machine, Machine], tmp_path: Path
) -> None:
    a, b = team
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "oncall.md").write_text(PAGER_NOTE)
    a.json("mine", folder)
    with b.mcp(tmp_path / "b-mcp.log") as session:
        first = session.ok("mempalace_search", {"query": "Wombatheim staging cluster"})
        assert "Wombatheim" not in _texts(first)
        (folder / "staging.md").write_text(LATE_NOTE)
        a.json("mine", folder)  # returns once the server acknowledged the drawers
        written = time.monotonic()
        while True:
            hits = session.ok("mempalace_search", {"query": "Wombatheim staging cluster"})
            seen = time.monotonic() - written
            if "Wombatheim" in _texts(hits):
                break
            assert seen < VISIBLE_WITHIN, f"B's MCP server did not see A's drawer in {seen:.1f}s"
            time.sleep(0.1)
        assert seen < VISIBLE_WITHIN


def test_mining_on_a_while_b_adds_over_mcp_keeps_every_drawer_once(
    team: tuple[Machine, Machine], tmp_path: Path
) -> None:
    a, b = team
    folder = tmp_path / "people"
    shutil.copytree(NOTES / "people", folder)
    contents = [
        f"Team decision {n}: the {word} service keeps its logs for {n + 3} weeks."
        for n, word in enumerate(["billing", "search", "upload", "thumbnail", "mail", "audit"])
    ]
    added: list[str] = []
    with b.mcp(tmp_path / "b-mcp.log") as session:
        miner = subprocess.Popen(
            [*mempalace_command(), "mine", str(folder), "--json"],
            env=a.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for text in contents:
            result = session.ok(
                "mempalace_add_drawer", {"wing": "decisions", "room": "retention", "content": text}
            )
            assert result["success"], result
            added.append(result["drawer_id"])
        out, err = miner.communicate(timeout=300)
        assert miner.returncode == 0, err
    on_server = server_drawer_ids(a.url, a.database)
    assert len(on_server) == len(set(on_server))  # exactly once each
    assert set(added) <= set(on_server)
    # Both machines' catalogues list exactly the server's drawers.
    for machine in (a, b):
        status = machine.json("status")
        assert status["total_drawers"] == len(on_server)
    listed = a.json("search", "how long does the audit service keep logs", "-n", "3")
    assert any("audit service" in h["text"] for h in listed["results"])


def test_facts_recorded_on_two_machines_converge(team: tuple[Machine, Machine]) -> None:
    a, b = team
    results: list[dict[str, Any]] = []

    def add(machine: Machine) -> None:
        results.append(
            machine.json("kg", "add", "Harbor", "hosted_on", "Hetzner", "--from", "2026-02-01")
        )

    threads = [threading.Thread(target=add, args=(m,)) for m in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({r["triple_id"] for r in results}) == 1
    timeline = b.json("kg", "timeline", "Harbor")
    assert timeline["count"] == 1
    a.json("kg", "invalidate", "Harbor", "hosted_on", "Hetzner", "--ended", "2026-09-01")
    assert b.json("kg", "query", "Harbor", "--as-of", "2026-08-31")["count"] == 1
    assert b.json("kg", "query", "Harbor", "--as-of", "2026-09-02", expect=4)["count"] == 0
    assert b.json("kg", "stats")["expired_facts"] == 1
