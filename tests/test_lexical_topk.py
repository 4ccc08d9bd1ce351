"""The keyword side's split ranking for big palaces (lexical_topk.py) returns exactly what the
plain FTS5 query returns: the same ids, the same bm25 scores bit for bit, in the same order,
ties included, with and without a wing filter. The split is used from MIN_ROWS indexed rows on;
these tests lower that bar to zero on a real catalogue, so the split runs on every query it
accepts, and check that it did run."""

from __future__ import annotations

import random

import numpy as np
import pytest

from mempalace_cli.storage import lexical_topk
from mempalace_cli.storage.catalog import Catalog, DrawerRow, fts_terms

COMMON = "new best way make time good help home plan work".split()
MIDDLE = [f"mid{i}" for i in range(30)]
RARE = [f"rare{i}" for i in range(300)]
PLAIN = (
    "SELECT d.id, bm25(drawer_fts) AS rank FROM drawer_fts JOIN drawers d "
    "ON d.rowid = drawer_fts.rowid WHERE drawer_fts MATCH ? AND {where} ORDER BY rank LIMIT ?"
)


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    """4,000 drawers: common words in most, middling words in some, rare words in a few,
    repeated words (term frequency > 1) and lengths from 1 to 40 words."""
    rng = random.Random(11)
    rows = []
    for n in range(4000):
        words = [rng.choice(COMMON) for _ in range(rng.randint(0, 25))]
        words += [rng.choice(MIDDLE) for _ in range(rng.randint(0, 4))]
        words += [rng.choice(RARE) for _ in range(rng.randint(0, 3))]
        words += ["filler"] * rng.randint(0, 10)
        rng.shuffle(words)
        drawer_id = f"d{rng.randrange(10**9):09d}-{n}"
        rows.append(
            DrawerRow(
                drawer_id,
                ["w1", "w2"][n % 2],
                "r",
                "",
                None,
                "2026-01-01",
                " ".join(words) or "filler",
                {},
            )
        )
    cat = Catalog(tmp_path_factory.mktemp("topk") / "palace")
    with cat.transaction() as conn:
        cat.upsert_drawers(conn, rows, np.zeros((len(rows), 4), dtype=np.float32))
    return cat


QUERIES = [
    "best way",
    "new home",
    "rare3 new",
    "rare7 rare8",
    "mid1 mid2 help",
    "good help at home rare3",
    "best way to make a new home plan",
    "rare1 rare2 rare3 mid4 time",
    "rare10 best",
    "mid5 make work",
    "plan plans planning",  # one stem, three phrases: rows holding it hold all three
    "best\x00 way \ud800 home\u200b",  # NUL, a lone surrogate, zero-width space
]


def plain(catalog: Catalog, query: str, limit: int, wing: str | None) -> list[tuple[str, float]]:
    where, params = ("d.wing = ?", [wing]) if wing else ("1", [])
    match = " OR ".join(fts_terms(query))
    sql = PLAIN.format(where=where)
    return [(i, -r) for i, r in catalog.conn.execute(sql, [match, *params, limit])]


@pytest.mark.parametrize("wing", [None, "w2"])
@pytest.mark.parametrize("limit", [1, 10, 50, 300])
@pytest.mark.parametrize("query", QUERIES)
def test_the_split_ranks_exactly_as_the_plain_query(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch, query: str, limit: int, wing: str | None
) -> None:
    monkeypatch.setattr(lexical_topk, "MIN_ROWS", 0)
    where, params = ("d.wing = ?", [wing]) if wing else ("1", [])
    rows = lexical_topk.indexed_rows(catalog.conn)
    split = lexical_topk.top_k(catalog.conn, fts_terms(query), limit, where, params, rows)
    expected = plain(catalog, query, limit, wing)
    if split is None:  # the split declined: fewer than `limit` rows hold two terms
        held = catalog.conn.execute(
            "SELECT count(*) FROM drawer_fts JOIN drawers d ON d.rowid = drawer_fts.rowid "
            f"WHERE drawer_fts MATCH ? AND {where}",
            [lexical_topk.two_or_more(fts_terms(query)), *params],
        ).fetchone()[0]
        assert held < limit
    else:
        assert split == expected  # ids, scores bit for bit, order and ties
    assert catalog.lexical_search(query, limit, wing) == expected


def test_the_split_runs_on_most_of_these_queries(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The equality above is not vacuous: the split answers most of the queries itself, and
    some answers take rows that hold one rare term only."""
    monkeypatch.setattr(lexical_topk, "MIN_ROWS", 0)
    rows = lexical_topk.indexed_rows(catalog.conn)
    answered = [
        q for q in QUERIES if lexical_topk.top_k(catalog.conn, fts_terms(q), 10, "1", [], rows)
    ]
    assert len(answered) >= len(QUERIES) - 2
    got = dict(lexical_topk.top_k(catalog.conn, fts_terms("rare10 best"), 10, "1", [], rows) or [])
    holders = {
        i
        for (i,) in catalog.conn.execute(
            "SELECT d.id FROM drawer_fts JOIN drawers d ON d.rowid = drawer_fts.rowid "
            "WHERE drawer_fts MATCH ?",
            (lexical_topk.only('"rare10"', ['"rare10"', '"best"']),),
        )
    }
    assert holders & set(got)  # a row with "rare10" and not "best" made the top 10


def test_indexed_rows_is_the_number_of_drawers(catalog: Catalog) -> None:
    count = catalog.conn.execute("SELECT count(*) FROM drawers").fetchone()[0]
    assert lexical_topk.indexed_rows(catalog.conn) == count == 4000


def test_small_palaces_and_long_queries_keep_the_plain_query(catalog: Catalog) -> None:
    rows = lexical_topk.indexed_rows(catalog.conn)
    assert rows < lexical_topk.MIN_ROWS
    terms = fts_terms("best way")
    assert lexical_topk.top_k(catalog.conn, terms, 10, "1", [], rows) is None
    many = [f'"{w}"' for w in COMMON[: lexical_topk.MAX_TERMS + 1]]
    assert lexical_topk.top_k(catalog.conn, many, 10, "1", [], 10**6) is None
