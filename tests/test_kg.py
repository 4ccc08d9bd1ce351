"""The temporal knowledge graph, through the CLI a user types and the service the MCP server
calls: the Clerk/Auth0 history, invalidation, idempotency, date handling, and start-up cost."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mempalace_cli.cli import app
from mempalace_cli.common.errors import InvalidInputError, NoPalaceError, NotFoundError
from mempalace_cli.memory.kg import KG_FILE, FactInput, parse_date
from mempalace_cli.service import open_palace

BEFORE, SWITCH, AFTER = "2026-03-01", "2026-03-12", "2026-04-01"


@pytest.fixture
def kg(runner: CliRunner, home: Path):
    """`mempalace kg ARGS... --json` -> (exit code, parsed JSON). No model needed."""

    def run(*args: str, expect: int | None = 0) -> Any:
        result = runner.invoke(app, ["kg", *args, "--json"])
        if expect is not None:
            assert result.exit_code == expect, result.stdout + result.stderr
        return json.loads(result.stdout)

    return run


@pytest.fixture
def clerk(kg) -> dict[str, str]:
    """MyProject used Auth0 until Clerk replaced it on 2026-03-12."""
    return {
        "auth0": kg(
            "add", "MyProject", "uses", "Auth0", "--valid-from", "2025-06-01", "--valid-to", SWITCH
        )["triple_id"],
        "clerk": kg("add", "MyProject", "uses", "Clerk", "--valid-from", SWITCH)["triple_id"],
        "replaces": kg("add", "Clerk", "replaces", "Auth0", "--valid-from", SWITCH)["triple_id"],
    }


def _today() -> str:
    """The user's local date (the knowledge graph's "today" for a date-only end)."""
    return date.today().isoformat()


def _triples(result: dict) -> set[tuple[str, str, str, str]]:
    return {(f["direction"], f["subject"], f["predicate"], f["object"]) for f in result["facts"]}


def test_clerk_replaces_auth0_before_and_after(kg, clerk):
    before = kg("query", "MyProject", "--as-of", BEFORE)
    assert before["entity"] == "MyProject" and before["as_of"] == BEFORE
    assert _triples(before) == {("outgoing", "MyProject", "uses", "Auth0")}
    assert before["count"] == 1
    after = kg("query", "myproject", "--as-of", AFTER)
    assert _triples(after) == {("outgoing", "MyProject", "uses", "Clerk")}
    # On the switch-over day both hold: valid_from <= as_of <= valid_to, both days inclusive.
    assert _triples(kg("query", "MyProject", "--as-of", SWITCH)) == _triples(before) | _triples(
        after
    )
    # Without a date: the whole history, each fact saying whether it is current.
    everything = {f["object"]: f["current"] for f in kg("query", "MyProject")["facts"]}
    assert everything == {"Auth0": False, "Clerk": True}


def test_each_direction(kg, clerk):
    def ask(entity: str, when: str, direction: str) -> set:
        # Nothing found is "not found" (exit 4), with the same document and an error object.
        result = kg("query", entity, "--as-of", when, "--direction", direction, expect=None)
        assert ("error" in result) == (not result["facts"])
        return _triples(result)

    assert ask("Clerk", AFTER, "incoming") == {("incoming", "MyProject", "uses", "Clerk")}
    assert ask("Clerk", AFTER, "outgoing") == {("outgoing", "Clerk", "replaces", "Auth0")}
    assert ask("Clerk", AFTER, "both") == {
        ("incoming", "MyProject", "uses", "Clerk"),
        ("outgoing", "Clerk", "replaces", "Auth0"),
    }
    assert ask("Clerk", BEFORE, "both") == set()
    assert ask("Auth0", BEFORE, "incoming") == {("incoming", "MyProject", "uses", "Auth0")}
    assert ask("Auth0", AFTER, "incoming") == {("incoming", "Clerk", "replaces", "Auth0")}
    assert ask("Auth0", AFTER, "outgoing") == set()
    fact = kg("query", "Clerk", "--direction", "outgoing")["facts"][0]
    assert set(fact) >= {
        "direction",
        "subject",
        "predicate",
        "object",
        "valid_from",
        "valid_to",
        "confidence",
        "source",
        "current",
        "triple_id",
    }


def test_invalidate_keeps_history(kg, clerk):
    ended = kg("invalidate", "myproject", "USES", "clerk", "--ended", "2026-09-01")
    assert ended["invalidated"] == 1 and ended["ended"] == "2026-09-01"
    history = kg("query", "MyProject", "--direction", "outgoing")
    clerk_fact = next(f for f in history["facts"] if f["object"] == "Clerk")
    assert clerk_fact["valid_to"] == "2026-09-01" and clerk_fact["triple_id"] == clerk["clerk"]
    assert history["count"] == 2  # nothing was deleted
    assert _triples(kg("query", "MyProject", "--as-of", "2026-08-31"))
    assert _triples(kg("query", "MyProject", "--as-of", "2026-09-01"))  # its last day
    assert not _triples(kg("query", "MyProject", "--as-of", "2026-09-02", expect=4))
    stats = kg("stats")
    assert (stats["triples"], stats["expired_facts"]) == (3, 2)
    # Ending it again: nothing is open any more.
    err = kg("invalidate", "MyProject", "uses", "Clerk", expect=4)["error"]
    assert "already ended" in err["hint"]


def test_invalidate_unknown_fact_is_not_found(kg, clerk):
    err = kg("invalidate", "MyProject", "uses", "Okta", expect=4)["error"]
    assert "No fact 'MyProject uses Okta'" in err["message"]
    assert "kg query" in err["hint"]


def test_invalidate_defaults_to_today_and_rejects_end_before_start(kg, monkeypatch):
    kg("add", "Ana", "owns", "billing")
    before = _today()
    result = kg("invalidate", "Ana", "owns", "billing")
    # Today, the local date (read before and after, in case the test straddles midnight).
    assert result["ended"] in {before, _today()}, (result["ended"], before)
    assert result["ended"] == parse_date(result["ended"])  # a plain date
    assert result["facts"][0]["valid_to"] == result["ended"]
    # Today is its last day (valid_to is inclusive, as as_of reads it): current until today is
    # over; from tomorrow a query without a date shows it, no longer current.
    facts = kg("query", "Ana")["facts"]
    assert [(f["object"], f["current"]) for f in facts] == [("billing", True)]
    tomorrow = date.fromisoformat(result["ended"]) + timedelta(days=1)
    monkeypatch.setenv("MEMPALACE_NOW", tomorrow.isoformat())
    facts = kg("query", "Ana")["facts"]
    assert [(f["object"], f["current"]) for f in facts] == [("billing", False)]
    monkeypatch.delenv("MEMPALACE_NOW")
    kg("add", "Ana", "owns", "auth", "--valid-from", "2026-05-01")
    err = kg("invalidate", "Ana", "owns", "auth", "--ended", "2026-04-01", expect=2)["error"]
    assert "2026-04-01" in err["message"] and "2026-05-01" in err["message"]


def test_identical_adds_are_idempotent(kg, clerk):
    again = kg("add", "myproject", "Uses", "CLERK", "--valid-from", SWITCH)
    assert again == {**again, "triple_id": clerk["clerk"], "created": False}
    # Restating an open fact without dates is the same fact, too.
    assert kg("add", "MyProject", "uses", "Clerk")["triple_id"] == clerk["clerk"]
    # Display names are the first spelling seen; predicates are normalised.
    added = kg("add", "MyProject", "Owned By", "Ana Lima")
    assert (added["created"], added["predicate"], added["subject"]) == (
        True,
        "owned_by",
        "MyProject",
    )
    assert kg("stats")["predicates"] == {"uses": 2, "owned_by": 1, "replaces": 1}
    assert kg("stats")["entities"] == 4


@pytest.mark.parametrize("bad", ["2026-13-01", "March 12", "yesterday", "2026/03/12", "2026-3-1"])
def test_bad_dates_are_rejected_naming_the_value(kg, bad):
    err = kg("add", "A", "b", "C", "--valid-from", bad, expect=2)["error"]
    assert repr(bad) in err["message"] and err["kind"] == "invalid_input"
    assert "YYYY-MM-DD" in err["hint"]
    kg("add", "A", "b", "C")
    assert repr(bad) in kg("query", "A", "--as-of", bad, expect=2)["error"]["message"]


def test_inverted_interval_is_rejected(kg, runner):
    err = kg(
        "add", "A", "b", "C", "--valid-from", "2026-05-01", "--valid-to", "2026-04-01", expect=2
    )["error"]
    assert "--to 2026-04-01 is before --from 2026-05-01" in err["message"]  # the CLI's words
    text = runner.invoke(
        app, ["kg", "add", "A", "b", "C", "--from", "2026-05-02", "--to", "2026-05-01"]
    )
    assert text.exit_code == 2 and "is before" in text.stderr and "Traceback" not in text.output
    # A fact that held for one day only: valid_to is inclusive.
    one_day = kg("add", "A", "b", "D", "--valid-from", "2026-05-01", "--valid-to", "2026-05-01")
    assert kg("query", "A", "--as-of", "2026-05-01")["count"] == 1
    assert one_day["valid_to"] == "2026-05-01"


def test_iso_datetimes_are_accepted_and_normalised(kg):
    added = kg("add", "deploy", "frozen_by", "Ana", "--valid-from", "2026-03-12T09:30:00+02:00")
    assert added["valid_from"] == "2026-03-12T07:30:00"  # UTC
    # A date-only --as-of covers the whole day, so a fact starting that morning shows.
    assert kg("query", "deploy", "--as-of", "2026-03-12")["count"] == 1
    assert kg("query", "deploy", "--as-of", "2026-03-12T07:00:00Z", expect=4)["count"] == 0
    assert kg("query", "deploy", "--as-of", "2026-03-11", expect=4)["count"] == 0


def test_timeline_is_chronological(kg, clerk):
    kg("add", "Ana", "joined", "MyProject", "--valid-from", "2024-01-15")
    timeline = kg("timeline")
    starts = [f["valid_from"] for f in timeline["facts"]]
    assert starts == ["2024-01-15", "2025-06-01", SWITCH, SWITCH]
    about = kg("timeline", "auth0")
    assert about["entity"] == "Auth0" and about["count"] == 2


def test_unknown_entity_gets_close_names(kg, clerk, runner):
    result = kg("query", "Clerc", expect=4)  # the one not-found rule: exit 4, closest names
    assert result["count"] == 0 and result["suggestions"] == ["Clerk"]
    assert result["error"]["kind"] == "not_found"
    text = runner.invoke(app, ["kg", "query", "Clerc"])
    assert text.exit_code == 4 and "Did you mean: Clerk?" in text.stderr
    assert "Not found: No entity named 'Clerc'" in text.stderr
    # timeline follows the same rule for an unknown entity
    timeline = kg("timeline", "Clerc", expect=4)
    assert timeline["facts"] == [] and timeline["error"]["kind"] == "not_found"
    text = runner.invoke(app, ["kg", "timeline", "Clerc"])
    assert text.exit_code == 4 and "Did you mean: Clerk?" in text.stderr


def test_bad_direction_and_confidence(kg):
    kg("add", "A", "b", "C")
    assert "outgoing" in kg("query", "A", "--direction", "sideways", expect=2)["error"]["hint"]
    kg("add", "A", "b", "D", "--confidence", "1.5", expect=2)
    assert kg("query", " ", expect=2)["error"]["message"] == "Name the entity to look up."
    kg("timeline", "--limit", "0", expect=2)


def test_no_palace_and_empty_palace(kg, home, runner):
    err = kg("query", "Clerk", expect=3)["error"]
    assert err["kind"] == "no_palace" and "kg add" in err["hint"]
    kg("stats", expect=3)
    # kg add creates the palace folder; the palace then exists (no drawers) for every command.
    kg("add", "Clerk", "is_a", "auth provider")
    palace = home / "palace"
    assert (palace / KG_FILE).exists()
    stats = kg("stats")
    assert stats["entities"] == 2 and stats["current_facts"] == 1
    status = runner.invoke(app, ["status", "--json"])
    assert status.exit_code == 0 and json.loads(status.stdout)["total_drawers"] == 0


def test_text_output(runner, home, clerk):
    out = runner.invoke(app, ["kg", "query", "MyProject", "--as-of", AFTER]).stdout
    assert "MyProject as of 2026-04-01: 1 fact(s)" in out and "Clerk" in out
    assert "Auth0" not in out
    stats = runner.invoke(app, ["kg", "stats"]).stdout
    assert "3 entities, 3 facts (2 current, 1 expired)" in stats


def test_storage_is_wal_with_indexes(kg, home, clerk):
    conn = sqlite3.connect(home / "palace" / KG_FILE)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    assert {"triples_subject", "triples_object", "triples_predicate", "triples_validity"} <= indexes
    row = conn.execute("SELECT recorded_at, confidence FROM triples LIMIT 1").fetchone()
    assert row[0] and row[1] == 1.0


def test_service_contract(tmp_path, home):
    """The shapes the MCP server codes against."""
    palace = open_palace(str(tmp_path / "palace"))
    with pytest.raises(NoPalaceError):
        palace.kg_query("x")
    fact = FactInput(
        "Ana", "leads", "Auth", valid_from="2026-01-01", source_file="a.md", subject_type="person"
    )
    added = palace.kg_add(fact)
    assert set(added) >= {
        "triple_id",
        "created",
        "subject",
        "predicate",
        "object",
        "valid_from",
        "valid_to",
    }
    fact = palace.kg_query("ana")["facts"][0]
    assert fact["source"] == "a.md" and fact["current"] is True
    assert set(palace.kg_stats()) >= {
        "entities",
        "triples",
        "current_facts",
        "expired_facts",
        "predicates",
    }
    assert palace.kg_timeline()["count"] == 1
    with pytest.raises(NotFoundError):
        palace.kg_invalidate("Ana", "leads", "Billing")
    with pytest.raises(InvalidInputError, match="'soon'"):
        palace.kg_invalidate("Ana", "leads", "Auth", ended="soon")
    assert palace.kg_invalidate("Ana", "leads", "Auth", ended="2026-02-01")["invalidated"] == 1
    palace.close()


def test_kg_never_imports_chromadb_or_onnxruntime(tmp_path, home):
    script = (
        "import sys, json\n"
        "from typer.testing import CliRunner\n"
        "from mempalace_cli.cli import app\n"
        f"p = {str(tmp_path / 'palace')!r}\n"
        "r = CliRunner()\n"
        "codes = [r.invoke(app, ['--palace', p, 'kg', *a]).exit_code for a in (\n"
        "    ['add', 'A', 'b', 'C'], ['query', 'A', '--as-of', '2026-01-01'],\n"
        "    ['invalidate', 'A', 'b', 'C'], ['timeline'], ['stats'], ['--help'])]\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('chromadb', 'onnxruntime'))\n"
        "print(json.dumps({'codes': codes, 'heavy': heavy}))\n"
    )
    env = {**os.environ, "MEMPALACE_HOME": str(home)}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"codes": [0, 0, 0, 0, 0, 0], "heavy": []}


def test_kg_reads_never_create_the_facts_file(runner, home, tmp_path, embedder):
    from tests.conftest import palace_of_notes

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    palace_of_notes(tmp_path / "drawers", {"a.md": "Sarah likes weekly updates."}).close()
    with_drawers = tmp_path / "drawers" / "palace"
    assert with_drawers.is_dir() and not (with_drawers / KG_FILE).exists()
    for folder in (fresh, with_drawers):
        before = sorted(p.relative_to(folder) for p in folder.rglob("*"))
        for args in (["timeline"], ["stats"], ["query", "Sarah"]):
            result = runner.invoke(app, ["--palace", str(folder), "kg", *args, "--json"])
            assert result.exit_code in (0, 4), result.stdout + result.stderr
            if args == ["stats"]:
                assert json.loads(result.stdout)["current_facts"] == 0, result.stdout
        after = sorted(p.relative_to(folder) for p in folder.rglob("*"))
        assert after == before and not (folder / KG_FILE).exists(), folder
    # The first fact still creates it.
    added = runner.invoke(app, ["--palace", str(fresh), "kg", "add", "Sarah", "likes", "tea"])
    assert added.exit_code == 0 and (fresh / KG_FILE).exists(), added.stdout + added.stderr
