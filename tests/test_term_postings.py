"""Common words' postings kept in memory by a long-lived process (term_postings.py) rank the
keyword side as FTS5's plain query does: the same ids in the same order (ties included) and
the same scores to float rounding; and a write made by another process (an added drawer, a
deleted one) is in the very next search. The postings are used from 50,000 drawers and for
words held by 0.5% of them; these tests lower both bars so that they run on a small palace,
and check that they did run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mempalace_cli.service import open_palace
from mempalace_cli.storage import term_postings, vector_index
from mempalace_cli.storage.catalog import Catalog, fts_terms
from mempalace_cli.storage.vector_index import INDEX_DIR
from tests.other_process import run_in_another_process

PLAIN = (
    "SELECT d.id, f.rank FROM (SELECT rowid, bm25(drawer_fts) AS rank FROM drawer_fts "
    "WHERE drawer_fts MATCH ? ORDER BY rank LIMIT ?) AS f JOIN drawers d ON d.rowid = f.rowid "
    "ORDER BY f.rank"
)
QUERIES = [
    "backup schedule",
    "who owns the roadmap",
    "database migration plan for the team",
    "quarterly planning meeting notes",
    "how do we deploy the service",
    "the the the",
    "decided decision deciding",  # one stem, three terms
    "向量检索 认证服务",  # CJK bigrams: single tokens too
    "snake_case_words and the team",  # a phrase term: the plain query answers
    "backup\x00 schedule \ud800 team\u200b plan",  # NUL, a lone surrogate, zero-width space
    " ".join(["team", "plan", "backup", "the", "notes", "zzqx"] * 1600)[:10_000],  # the longest
]


@pytest.fixture
def palace(mined_notes: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(term_postings, "MIN_ROWS", 0)
    monkeypatch.setattr(term_postings, "COMMON_MIN", 2)
    monkeypatch.setattr(term_postings, "COMMON_SHARE", 0.0)
    dest = tmp_path / "palace"
    shutil.copytree(mined_notes["palace"], dest)
    shutil.rmtree(dest / INDEX_DIR, ignore_errors=True)
    return dest


def plain(p, query: str, limit: int) -> list[tuple[str, float]]:
    match = " OR ".join(fts_terms(query))
    return [(i, -r) for i, r in p.catalog.conn.execute(PLAIN, [match, limit])]


def assert_same(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> None:
    assert [i for i, _ in got] == [i for i, _ in want]
    for (_, a), (_, b) in zip(got, want, strict=True):
        assert a == pytest.approx(b, rel=1e-12)


def add_plan_in_another_process(palace: Path, home: Path) -> str:
    """File a drawer dense in "team", "schedule" and "planning" from another process."""
    return run_in_another_process(
        palace,
        home,
        "import sys; from mempalace_cli.service import open_palace; "
        "p = open_palace(sys.argv[1]); "
        "print(p.add_drawer('ops', 'plans', sys.argv[2])['drawer_id'])",
        "Team schedule: the planning team plans the team schedule, planning every week.",
    )


def test_kept_postings_rank_as_fts5_does(palace: Path) -> None:
    p = open_palace(str(palace))
    p.stay_warm()
    p.search("backup schedule")  # the change log exists once the vector index does
    assert p.catalog.count() > 20
    for query in QUERIES:
        for limit in (1, 5, 50):
            assert_same(p.catalog.lexical_search(query, limit), plain(p, query, limit))
    kept = p.catalog._postings
    assert kept is not None and len(kept.terms) >= 5  # the postings answered, not FTS5
    # The query weight takes kept words' counts from the postings: the same as FTS5's counts.
    counted = Catalog(palace)
    for query in QUERIES:
        assert p.catalog.query_weight(query) == counted.query_weight(query)
    counted.close()
    assert (
        kept.top(fts_terms("snake_case_words and the team"), 5, 10**6, p.catalog.log_position())
        is None
    )
    p.close()


def test_a_write_by_another_process_is_in_the_next_search(palace: Path, home: Path) -> None:
    server = open_palace(str(palace))  # a long-lived process, e.g. the MCP server
    server.stay_warm()
    server.search("team schedule")
    query = "team schedule planning"
    before = server.catalog.lexical_search(query, 10)
    assert_same(before, plain(server, query, 10))
    assert server.catalog._postings is not None and server.catalog._postings.terms

    added = add_plan_in_another_process(palace, home)
    gone = before[0][0]
    run_in_another_process(
        palace,
        home,
        "import sys; from mempalace_cli.service import open_palace; "
        "open_palace(sys.argv[1]).delete_drawer(sys.argv[2])",
        gone,
    )
    kept = server.catalog._postings
    loads: list[str] = []
    load = kept._load
    kept._load = lambda token: loads.append(token) or load(token)  # type: ignore[method-assign]
    held = set(kept.terms)
    after = server.catalog.lexical_search(query, 10)
    # The kept words were brought up to date from the change log, not read again.
    assert held <= set(kept.terms) and not set(loads) & held
    assert after[0][0] == added
    assert gone not in [i for i, _ in after]
    assert_same(after, plain(server, query, 10))
    for q in QUERIES:
        assert_same(server.catalog.lexical_search(q, 20), plain(server, q, 20))
    server.close()


def test_a_trimmed_change_log_drops_the_postings_rather_than_miss_a_write(
    palace: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The vector index trims the change log once it has applied it (a writer's upkeep step,
    after its write; a search writes nothing): postings kept warm from before the trim can't
    be patched from the log then, and are read again."""
    monkeypatch.setattr(vector_index, "LOG_TRIM_AT", 0)
    server = open_palace(str(palace))
    server.stay_warm()
    query = "team schedule planning"
    server.search(query)
    assert server.catalog._postings is not None and server.catalog._postings.terms
    added = add_plan_in_another_process(palace, home)
    # The writer's upkeep applied the log to the vector index; trimming what it applied is
    # what a writer does once the log is long (LOG_TRIM_AT): done here as that writer would.
    with server.catalog.conn:
        server.catalog.conn.execute("DELETE FROM vector_log")
    left = server.catalog.conn.execute("SELECT count(*) FROM vector_log").fetchone()[0]
    assert left == 0
    after = server.catalog.lexical_search(query, 10)
    assert after[0][0] == added
    assert_same(after, plain(server, query, 10))
    server.close()


def test_without_stay_warm_nothing_is_kept(palace: Path) -> None:
    p = open_palace(str(palace))
    p.search("backup schedule")
    assert_same(p.catalog.lexical_search("backup schedule", 5), plain(p, "backup schedule", 5))
    assert p.catalog._postings is None
    p.close()
