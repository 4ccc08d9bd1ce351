"""One notion of "today" and of an interval's end (mempalace_cli/common/clock.py), the same in the
knowledge graph (query, timeline, `current`, stats) and in search's date filters: a date is a
day on the user's calendar, `valid_to` is the fact's last day (inclusive), and MEMPALACE_NOW
fixes the clock."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mempalace_cli.common import clock
from mempalace_cli.common.errors import InvalidInputError
from mempalace_cli.memory.kg import FactInput, KnowledgeGraph
from tests.test_watch_support import cli_env, mempalace_command


@pytest.fixture
def zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Set this process's time zone (TZ, as a user's shell would); restored afterwards."""

    def set_zone(tz: str) -> None:
        monkeypatch.setenv("TZ", tz)
        time.tzset()

    yield set_zone
    monkeypatch.undo()
    time.tzset()


def test_a_day_is_the_users_local_day(zone: Any) -> None:
    zone("AHEAD-24")  # always a day ahead of UTC: beyond what datetime's offsets allow
    assert clock.day_start("2026-03-12") == "2026-03-11T00:00:00"
    assert clock.day_end("2026-03-12") == "2026-03-11T23:59:59.999999"
    assert clock.local_date("2026-03-11T23:59:59") == "2026-03-12"
    assert clock.local_date("2026-03-12") == "2026-03-12"  # a date is already a day
    zone("America/New_York")  # a 23-hour day (DST starts 2026-03-08)
    assert clock.day_start("2026-03-08") == "2026-03-08T05:00:00"
    assert clock.day_end("2026-03-08") == "2026-03-09T03:59:59.999999"
    assert clock.first_instant("2026-03-08T06:00:00") == "2026-03-08T06:00:00"  # an instant


def test_mempalace_now_fixes_the_clock(zone: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    zone("Pacific/Kiritimati")  # UTC+14
    monkeypatch.setenv(clock.NOW_ENV, "2026-03-12T09:30:00")  # local time
    assert clock.today() == "2026-03-12"
    assert clock.utc_stamp() == "2026-03-11T19:30:00"
    monkeypatch.setenv(clock.NOW_ENV, "2026-03-12T01:00:00Z")  # an offset: that instant
    assert (clock.today(), clock.utc_stamp()) == ("2026-03-12", "2026-03-12T01:00:00")
    monkeypatch.setenv(clock.NOW_ENV, "2026-03-12")  # a date: local noon that day
    assert (clock.today(), clock.utc_stamp()) == ("2026-03-12", "2026-03-11T22:00:00")
    assert clock.today("2027-01-01") == "2027-01-01"  # a --now value wins over the variable
    monkeypatch.setenv(clock.NOW_ENV, "next tuesday")
    with pytest.raises(InvalidInputError) as err:
        clock.today()
    assert "MEMPALACE_NOW 'next tuesday'" in err.value.message
    assert "YYYY-MM-DD" in (err.value.hint or "")
    monkeypatch.delenv(clock.NOW_ENV)
    assert clock.today() == clock.local_date(clock.utc_stamp())


def _facts(result: list[Any], now: str | None = None) -> dict[str, bool]:
    return {f.object: f.to_dict(now=now)["current"] for f in result}


@pytest.mark.parametrize("tz", ["UTC", "AHEAD-24", "BEHIND+11"])
def test_a_fact_whose_last_day_is_today_holds_today_and_is_current(
    tmp_path: Path, zone: Any, monkeypatch: pytest.MonkeyPatch, tz: str
) -> None:
    zone(tz)
    monkeypatch.setenv(clock.NOW_ENV, "2026-03-12T23:00:00")  # late in the user's day
    kg = KnowledgeGraph(tmp_path)
    kg.add(FactInput("Ana", "owns", "billing", "2026-01-01", "2026-03-12"))  # last day: today
    kg.add(FactInput("Ana", "owned", "payroll", "2025-01-01", "2026-03-11"))  # last: yesterday
    kg.add(FactInput("Ana", "owns", "auth", "2026-03-12"))  # from today on
    # Today: exactly the facts that hold today, each current, in query and timeline alike.
    assert _facts(kg.query("Ana", as_of=clock.today())) == {"billing": True, "auth": True}
    assert _facts(kg.timeline("Ana")) == {"payroll": False, "billing": True, "auth": True}
    # Now (an instant of today): the same facts.
    assert _facts(kg.query("Ana", as_of=clock.utc_stamp())) == {"billing": True, "auth": True}
    assert kg.stats()["current_facts"] == 2 and kg.stats()["expired_facts"] == 1
    # Tomorrow, the user's day: billing has ended everywhere.
    monkeypatch.setenv(clock.NOW_ENV, "2026-03-13T00:30:00")
    assert _facts(kg.query("Ana", as_of=clock.today())) == {"auth": True}
    assert _facts(kg.timeline("Ana")) == {"payroll": False, "billing": False, "auth": True}
    assert kg.stats()["current_facts"] == 1 and kg.stats()["expired_facts"] == 2
    kg.close()


def test_a_date_as_of_covers_the_users_day_for_facts_with_times(tmp_path: Path, zone: Any) -> None:
    zone("Pacific/Kiritimati")  # UTC+14: local 2026-03-12 is 03-11T10:00Z .. 03-12T10:00Z
    kg = KnowledgeGraph(tmp_path)
    kg.add(FactInput("deploy", "frozen_by", "Ana", "2026-03-11T12:00:00Z"))  # local 03-12 02:00
    kg.add(FactInput("deploy", "frozen_by", "Ben", None, "2026-03-11T09:00:00Z"))  # 03-11 23:00
    assert [f.object for f in kg.query("deploy", as_of="2026-03-12")] == ["Ana"]
    assert [f.object for f in kg.query("deploy", as_of="2026-03-11")] == ["Ben"]
    kg.close()


def _run(home: Path, env: dict[str, str], *args: str) -> Any:
    proc = subprocess.run(
        [*mempalace_command(), *args, "--json"],
        env={**cli_env(home), **env},
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode in (0, 4), proc.stderr[-3000:]
    return json.loads(proc.stdout)


@pytest.mark.parametrize("tz", ["AHEAD-24", "BEHIND+11"])
def test_search_dates_and_the_graph_share_the_users_today(
    tmp_path: Path, home: Path, tz: str
) -> None:
    """A zone a whole day ahead of UTC, and one 11 hours behind: what was filed today (the
    user's today) is found by --since today and not by --before today, diary entries
    included, and a fact ending today is current and holds as of today."""
    env = {"TZ": tz}
    palace = ["--palace", str(tmp_path / "palace")]
    local_today = subprocess.run(
        ["date", "+%Y-%m-%d"], env={"TZ": tz}, capture_output=True, text=True
    ).stdout.strip()
    if tz == "AHEAD-24":
        assert local_today != dt.datetime.now(dt.UTC).date().isoformat()
    notes = tmp_path / "ops"
    notes.mkdir()
    (notes / "deploys.md").write_text("Deploys freeze every Friday after 3pm.\n")  # dated now
    _run(home, env, *palace, "mine", str(notes))
    _run(home, env, *palace, "diary", "write", "claude", "Froze the deploys for the audit.")
    since = _run(home, env, *palace, "search", "deploys freeze", "--since", local_today)
    assert {h["wing"] for h in since["results"]} == {"ops", "wing_claude"}
    before = _run(home, env, *palace, "search", "deploys freeze", "--before", local_today)
    assert before["results"] == []

    fact = ("deploys", "frozen_by", "audit", "--valid-to", local_today)
    _run(home, env, *palace, "kg", "add", *fact)
    today = _run(home, env, *palace, "kg", "query", "deploys", "--as-of", local_today)
    assert [(f["object"], f["current"]) for f in today["facts"]] == [("audit", True)]
    assert _run(home, env, *palace, "kg", "stats")["current_facts"] == 1
    tomorrow = (dt.date.fromisoformat(local_today) + dt.timedelta(days=1)).isoformat()
    later = {**env, "MEMPALACE_NOW": tomorrow}
    assert _run(home, later, *palace, "kg", "query", "deploys", "--as-of", tomorrow)["facts"] == []
    facts = _run(home, later, *palace, "kg", "query", "deploys")["facts"]
    assert [(f["object"], f["current"]) for f in facts] == [("audit", False)]
