"""Relative dates in `--since`/`--before` and in questions, in English and Chinese, read at a
fixed "now" (`--now`, MEMPALACE_NOW, or the MCP server's clock); an empty range is refused."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from mempalace_cli.common.errors import InvalidInputError
from mempalace_cli.search.dates import find_period, parse_period, resolve_range
from tests.conftest import NOTES
from tests.test_mcp_support import http_session

NOW = "2026-05-13"  # a Wednesday: this week is 05-11..05-17, last week 05-04..05-10


@pytest.mark.parametrize(
    ("written", "first", "last"),
    [
        ("today", "2026-05-13", "2026-05-13"),
        ("yesterday", "2026-05-12", "2026-05-12"),
        ("the day before yesterday", "2026-05-11", "2026-05-11"),
        ("7d", "2026-05-06", "2026-05-13"),
        ("2w", "2026-04-29", "2026-05-13"),
        ("3mo", "2026-02-13", "2026-05-13"),
        ("past 7 days", "2026-05-06", "2026-05-13"),
        ("3 days ago", "2026-05-10", "2026-05-10"),
        ("a month ago", "2026-04-13", "2026-05-12"),
        ("this week", "2026-05-11", "2026-05-17"),
        ("last week", "2026-05-04", "2026-05-10"),
        ("Last Month", "2026-04-01", "2026-04-30"),
        ("this month", "2026-05-01", "2026-05-31"),
        ("last year", "2025-01-01", "2025-12-31"),
        ("in March", "2026-03-01", "2026-03-31"),
        ("march", "2026-03-01", "2026-03-31"),
        ("in June", "2025-06-01", "2025-06-30"),  # the latest June that has begun
        ("March 2025", "2025-03-01", "2025-03-31"),
        ("2026-02", "2026-02-01", "2026-02-28"),
        ("March 12", "2026-03-12", "2026-03-12"),
        ("last monday", "2026-05-11", "2026-05-11"),
    ],
)
def test_english_relative_dates_at_a_fixed_now(written: str, first: str, last: str) -> None:
    period = parse_period(written, NOW)
    assert period is not None, written
    assert period.describe() == (first if first == last else f"{first} to {last}")


@pytest.mark.parametrize(
    ("written", "first", "last"),
    [
        ("今天", "2026-05-13", "2026-05-13"),
        ("昨天", "2026-05-12", "2026-05-12"),
        ("前天", "2026-05-11", "2026-05-11"),
        ("上周", "2026-05-04", "2026-05-10"),
        ("上个星期", "2026-05-04", "2026-05-10"),
        ("本周", "2026-05-11", "2026-05-17"),
        ("上个月", "2026-04-01", "2026-04-30"),
        ("这个月", "2026-05-01", "2026-05-31"),
        ("去年", "2025-01-01", "2025-12-31"),
        ("三月", "2026-03-01", "2026-03-31"),
        ("3月", "2026-03-01", "2026-03-31"),
        ("十二月", "2025-12-01", "2025-12-31"),
        ("2026年3月", "2026-03-01", "2026-03-31"),
        ("3月12日", "2026-03-12", "2026-03-12"),
        ("3天前", "2026-05-10", "2026-05-10"),
        ("一个月前", "2026-04-13", "2026-05-12"),
        ("最近7天", "2026-05-06", "2026-05-13"),
        ("上周一", "2026-05-04", "2026-05-04"),
    ],
)
def test_chinese_relative_dates_at_a_fixed_now(written: str, first: str, last: str) -> None:
    period = parse_period(written, NOW)
    assert period is not None, written
    assert period.describe() == (first if first == last else f"{first} to {last}")


def test_a_period_bound_is_its_first_day_and_nonsense_is_refused() -> None:
    assert resolve_range("last month", "this month", NOW) == ("2026-04-01", "2026-05-01")
    assert resolve_range("上个月", None, NOW) == ("2026-04-01", None)
    assert resolve_range("2026-03-12", "2026-03-12T09:30:00", NOW)[1] == "2026-03-12T09:30:00"
    for bad in ("someday", "next tuesday", "March 32", "13月"):
        with pytest.raises(InvalidInputError, match="is not a date") as caught:
            resolve_range(bad, None, NOW)
        assert "7d, yesterday, last week, last month, in March" in (caught.value.hint or "")


def test_an_inverted_or_empty_range_is_refused() -> None:
    with pytest.raises(InvalidInputError) as caught:
        resolve_range("2026-05-01", "2026-04-01", NOW, ("--since", "--before"))
    assert caught.value.message.startswith("--since 2026-05-01 comes after --before 2026-04-01")
    assert "swap the two" in (caught.value.hint or "")
    with pytest.raises(InvalidInputError, match="same day"):
        resolve_range("this month", "2026-05-01", NOW)
    with pytest.raises(InvalidInputError, match=r"since='this month' \(2026-05-01\) comes after"):
        resolve_range("this month", "last month", NOW)


@pytest.mark.parametrize(
    ("question", "named", "first", "last"),
    [
        ("上个月我们为什么决定用 Clerk?", "上个月", "2026-04-01", "2026-04-30"),
        ("What did we decide last month?", "last month", "2026-04-01", "2026-04-30"),
        ("What did the weekly sync in March cover?", "in March", "2026-03-01", "2026-03-31"),
        ("What charity event did I join a month ago?", "a month ago", "2026-04-13", "2026-05-12"),
        ("Who did Maria have dinner with on May 3, 2023?", "May 3, 2023", "2023-05-03", None),
        ("上周的发布会议决定了什么?", "上周", "2026-05-04", "2026-05-10"),
        ("三月份的架构评审讨论了什么?", "三月份", "2026-03-01", "2026-03-31"),
    ],
)
def test_a_question_names_its_time(question: str, named: str, first: str, last: str | None) -> None:
    period = find_period(question, NOW)
    assert period is not None and period.text == named
    assert period.describe() == (f"{first} to {last}" if last else first)


@pytest.mark.parametrize(
    "question",
    [
        "How many days ago did I buy a smoker?",
        "What may change before the launch?",  # "may" is a verb here
        "Why did we pick Postgres?",
        "Which tests did we run in mar-a-lago?",
        "我们三个人讨论了什么?",
    ],
)
def test_a_question_without_a_time_names_none(question: str) -> None:
    assert find_period(question, NOW) is None


@pytest.fixture(scope="module")
def dated_notes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """examples/notes mined as a fresh clone leaves it (every file's time is today)."""
    from typer.testing import CliRunner

    from mempalace_cli.cli import app

    base = tmp_path_factory.mktemp("relative")
    notes = base / "notes"
    shutil.copytree(NOTES, notes, ignore=shutil.ignore_patterns("mempalace.toml"))
    palace = base / "palace"
    result = CliRunner().invoke(app, ["--palace", str(palace), "mine", str(notes), "--json"])
    assert result.exit_code == 0, result.stdout + result.stderr
    return {"palace": palace, "notes": notes, "base": base}


def _days(results: list[dict[str, Any]]) -> set[str]:
    return {r["date"][:10] for r in results}


def test_cli_reads_relative_dates_at_now(cli_json: Any, cli: Any, dated_notes: dict) -> None:
    palace = ("--palace", dated_notes["palace"])
    found = cli_json(
        "search",
        "what did we decide",
        *palace,
        "-n",
        "20",
        "--since",
        "last month",
        "--before",
        "this month",
        "--now",
        "2026-04-15",
    )
    assert found["filters"]["since"] == "2026-03-01" and found["filters"]["before"] == "2026-04-01"
    assert found["results"] and all(
        "2026-03-01" <= d < "2026-04-01" for d in _days(found["results"])
    )
    assert any(r["source_file"].endswith("0006-auth0-to-clerk.md") for r in found["results"])
    zh = cli_json(
        "search",
        "为什么决定用 Clerk",
        *palace,
        "-n",
        "20",
        "--since",
        "上个月",
        "--before",
        "本月",
        "--now",
        "2026-04-15",
    )
    assert (zh["filters"]["since"], zh["filters"]["before"]) == ("2026-03-01", "2026-04-01")
    assert zh["results"][0]["source_file"].endswith("0006-auth0-to-clerk.md")
    assert all("2026-03-01" <= d < "2026-04-01" for d in _days(zh["results"]))
    inverted = cli(
        "search",
        "auth",
        *palace,
        "--since",
        "this month",
        "--before",
        "last month",
        "--now",
        "2026-04-15",
        expect=2,
    )
    assert "--since 'this month' (2026-04-01) comes after --before 'last month' (2026-03-01)" in (
        inverted.stderr
    )
    bad = cli("search", "auth", *palace, "--since", "the other day", expect=2)
    assert "--since 'the other day' is not a date." in bad.stderr
    assert "last week, last month, in March, 昨天, 上周, 上个月, 三月" in bad.stderr
    bad_now = cli("search", "auth", *palace, "--since", "7d", "--now", "soon", expect=2)
    assert "--now 'soon' is not a date or time." in bad_now.stderr


def test_env_now_fixes_relative_dates(
    cli_json: Any, dated_notes: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMPALACE_NOW", "2026-04-15")
    found = cli_json(
        "search",
        "what did we decide",
        "--palace",
        dated_notes["palace"],
        "-n",
        "20",
        "--since",
        "last month",
        "--before",
        "this month",
    )
    assert (found["filters"]["since"], found["filters"]["before"]) == ("2026-03-01", "2026-04-01")


def test_a_question_that_names_a_time_ranks_drawers_dated_then_first(
    cli: Any, cli_json: Any, dated_notes: dict
) -> None:
    palace = ("--palace", dated_notes["palace"])
    question = "What did the weekly sync in March cover?"
    plain = cli_json("search", "weekly sync", *palace, "-n", "3", "--now", "2026-05-13")
    assert "time" not in plain
    found = cli_json("search", question, *palace, "-n", "3", "--now", "2026-05-13")
    assert found["time"] == {
        "named": "in March",
        "since": "2026-03-01",
        "before": "2026-04-01",
        "ranked_first": found["time"]["ranked_first"],
    }
    assert found["time"]["ranked_first"] >= 1
    top = found["results"][0]
    assert top["source_file"].endswith("meetings/2026-03-10-weekly-sync.md"), top["source_file"]
    text = cli("search", question, *palace, "-n", "3", "--now", "2026-05-13")
    assert "The question names 'in March' (2026-03-01 to 2026-03-31)" in text.stderr
    assert "--since 2026-03-01 --before 2026-04-01" in text.stderr
    # An explicit window wins: no ranking by the question's own time.
    windowed = cli_json(
        "search",
        question,
        *palace,
        "--since",
        "2026-02-01",
        "--before",
        "2026-03-01",
        "--now",
        "2026-05-13",
    )
    assert "time" not in windowed
    assert windowed["results"][0]["source_file"].endswith("meetings/2026-02-03-weekly-sync.md")


def test_mcp_reads_relative_dates_by_the_servers_clock(
    dated_notes: dict, monkeypatch: pytest.MonkeyPatch, embedder: Any
) -> None:
    base = dated_notes["base"]
    home = base / "mcp-home"
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("MEMPALACE_NOW", "2026-04-15")  # the server's clock
    with http_session(dated_notes["palace"], home, base / "mcp.log") as mcp:
        found = mcp.ok(
            "mempalace_search",
            {"query": "为什么决定用 Clerk", "since": "上个月", "before": "本月", "limit": 10},
        )
        assert found["filters"]["since"] == "2026-03-01"
        assert found["results"] and all(
            "2026-03-01" <= r["date"][:10] < "2026-04-01" for r in found["results"]
        )
        asked = mcp.ok("mempalace_search", {"query": "上个月我们为什么决定用 Clerk?"})
        assert asked["time"]["named"] == "上个月" and asked["time"]["since"] == "2026-03-01"
        assert asked["results"][0]["source_file"].endswith("0006-auth0-to-clerk.md")
        assert asked["results"][0]["date"] == "2026-03-12"
        said = mcp.error(
            "mempalace_search", {"query": "auth", "since": "2026-05-01", "before": "2026-04-01"}
        )
        assert "since=2026-05-01 comes after before=2026-04-01" in said, said
