"""AAAK: a deterministic one-line summary whose spec is generated from the encoder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mempalace_cli.common.errors import InvalidInputError
from mempalace_cli.memory import aaak
from mempalace_cli.service import open_palace

NOTES = Path(__file__).resolve().parent.parent / "examples" / "notes"

DECISION = (
    "We decided to replace Redis with Postgres LISTEN/NOTIFY for the job queue. "
    "Alice was worried about throughput, but Bob ran a benchmark and was glad: 4,000 jobs a "
    "second is enough. Alice and Bob agreed to revisit in June."
)


def test_spec_covers_every_constant() -> None:
    spec = aaak.spec()
    for code, (meaning, _words) in aaak.EMOTIONS.items():
        assert f"*{code}* = {meaning}" in spec
    for flag, (meaning, _trig, _w) in aaak.FLAGS.items():
        assert f"{flag} = {meaning}" in spec
    for hall in {*aaak.HALLS.values(), aaak.DEFAULT_HALL}:
        assert hall in spec
    for sep in (aaak.FIELD_SEP, aaak.LIST_SEP, aaak.LOCATION_SEP, aaak.ENTITY_ASSIGN):
        assert repr(sep) in spec or sep in spec
    for name in aaak.ENTITY_EXAMPLES:
        assert f"{name}={aaak.entity_code(name)}" in spec
    assert aaak.STAR * aaak.MAX_STARS in spec
    assert "lossy" in spec
    example = spec.split("Example: ", 1)[1].strip()
    assert aaak.parse(example).wing == "harbor"


def test_entity_codes_follow_the_rule() -> None:
    assert aaak.entity_code("Alice") == "ALC"
    assert aaak.entity_code("Tomás Reyes") == "TMS"
    assert aaak.entity_code("Bo") == "BOX"
    taken = {aaak.entity_code("Alice")}
    other = aaak.entity_code("Alicia", taken)
    assert other != "ALC" and len(other) == 3 and other.startswith("A")


def test_encode_extracts_the_fields() -> None:
    rec = aaak.analyze(DECISION, {"wing": "harbor", "room": "queue"})
    assert rec.entities["ALC"] == "Alice"
    assert rec.entities["BBO"] == "Bob"
    assert "DECISION" in rec.flags and rec.hall == "decisions"
    assert set(rec.emotions) == {"anx", "warm"}
    assert rec.key.startswith("We decided to replace Redis")
    assert 1 <= rec.importance <= 5
    line = aaak.encode(DECISION, {"wing": "harbor", "room": "queue"})
    assert line.startswith("harbor/queue/decisions|")
    assert "*warm*" in line and "\n" not in line


def test_importance_metadata_sets_the_stars() -> None:
    assert aaak.encode("A short plain note about lunch plans.", {"importance": 5}).endswith(
        "|" + "★" * 5
    )
    assert aaak.encode("A short plain note about lunch plans.").endswith("|★")


def test_code_is_flagged_and_ranked_low() -> None:
    code = "import os\n\ndef main():\n    return os.getcwd()\n"
    rec = aaak.analyze(code, {"source_file": "/x/tool.py"})
    assert rec.flags == ["CODE"] and rec.hall == "code" and rec.importance == 1


@pytest.mark.parametrize("path", sorted(NOTES.rglob("*.md"))[:12], ids=lambda p: p.name)
def test_encode_parse_round_trip_on_real_notes(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    meta = {"wing": "notes", "room": path.parent.name, "source_file": str(path)}
    line = aaak.encode(text, meta)
    assert aaak.encode(text, meta) == line  # deterministic
    parsed = aaak.parse(line)
    assert parsed == aaak.analyze(text, meta)
    assert aaak.format_record(parsed) == line


def test_round_trip_with_empty_fields() -> None:
    rec = aaak.AAAKRecord(key="just a key sentence here")
    line = aaak.format_record(rec)
    assert line == '-/-/facts|-|-|"just a key sentence here"|-|-|★'
    assert aaak.parse(line) == rec


def test_separators_in_text_do_not_break_the_line() -> None:
    text = 'The rule is "a | b" for every pipe, decided by Carol Smith and Carol Smith.'
    line = aaak.encode(text, {"wing": "w/x", "room": "r|s"})
    assert aaak.parse(line).wing == "w_x"
    assert aaak.format_record(aaak.parse(line)) == line


@pytest.mark.parametrize(
    "bad", ["", "a|b|c", "w/r/h|-|-|no quotes|-|-|★", 'w/r/h|-|-|"k"|-|-|', 'w/r|-|-|"k"|-|-|★']
)
def test_parse_rejects_malformed_lines(bad: str) -> None:
    with pytest.raises(InvalidInputError):
        aaak.parse(bad)


def test_service_encode_and_spec(home) -> None:
    palace = open_palace()
    assert palace.aaak_spec() == aaak.spec()
    line = palace.aaak_encode(DECISION, wing="harbor", room="queue", line_start=3)
    assert line == aaak.encode(DECISION, {"wing": "harbor", "room": "queue"})
    with pytest.raises(InvalidInputError):
        palace.aaak_encode("   ")
    assert not palace.path.exists()


def test_cli_prints_the_spec(cli, cli_json) -> None:
    out = cli("wake-up", "--aaak-spec").stdout
    assert out.strip() == aaak.spec()
    assert cli_json("wake-up", "--aaak-spec") == {"aaak_spec": aaak.spec()}


def test_search_shows_aaak_summaries(cli, mined_notes, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # so the table shows whole lines
    palace = str(mined_notes["palace"])
    result = cli(
        "--palace", palace, "search", "why did we move off Auth0", "-n", "2", "--aaak", "--json"
    )
    items = json.loads(result.stdout)["results"]
    assert items
    for item in items:
        rec = aaak.parse(item["aaak"])
        assert (rec.wing, rec.room) == (item["wing"], item["room"])
    plain = json.loads(cli("--palace", palace, "search", "Auth0", "-n", "1", "--json").stdout)
    assert "aaak" not in plain["results"][0]
    table = cli("--palace", palace, "search", "Auth0", "-n", "1", "--aaak").stdout
    assert "notes/decisions/" in table and "|★" in table
