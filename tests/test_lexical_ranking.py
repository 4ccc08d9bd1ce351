"""The keyword side's ranking without a filter (rank inside FTS5, then look up the ids of the
best `limit`) returns exactly what the form it replaced returned (the FTS5 match joined to the
drawers table, ranked, then cut at `limit`): the same ids, scores and order, ties included.
And the query weight (one FTS5 count per query term) is counted only by the fusion that reads
it, once per search."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from mempalace_cli.embedders.base import Embedder
from mempalace_cli.search import fusion
from mempalace_cli.service import open_palace
from mempalace_cli.storage.catalog import Catalog, DrawerRow, fts_query

# Few words, some very common: many drawers match, many scores tie.
COMMON = "new best way make time good help home".split()
RARE = [f"rare{i}" for i in range(40)]
OLD_FORM = (
    "SELECT d.id, bm25(drawer_fts) AS rank FROM drawer_fts JOIN drawers d "
    "ON d.rowid = drawer_fts.rowid WHERE drawer_fts MATCH ? AND 1 ORDER BY rank LIMIT ?"
)


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    rng = random.Random(3)
    rows, texts = [], set()
    while len(rows) < 3000:
        words = [rng.choice(COMMON) for _ in range(rng.randint(1, 6))]
        words += [rng.choice(RARE) for _ in range(rng.randint(0, 2))]
        rng.shuffle(words)
        text = " ".join(words)
        if len(rows) % 3 and text in texts:  # two of three distinct, the rest may repeat
            continue
        texts.add(text)
        # Ids not in rowid order, so an order by id could not pass for an order by rowid.
        drawer_id = f"d{rng.randrange(10**9):09d}-{len(rows)}"
        wing = ["w1", "w2"][len(rows) % 2]
        rows.append(DrawerRow(drawer_id, wing, "r", "", None, "2026-01-01", text, {}))
    cat = Catalog(tmp_path_factory.mktemp("lexical") / "palace")
    vecs = np.zeros((len(rows), 4), dtype=np.float32)
    with cat.transaction() as conn:
        cat.upsert_drawers(conn, rows, vecs)
    return cat


QUERIES = [
    "new",
    "best way",
    "best way to make a new home",
    "good help at home rare3",
    "rare7",
    "rare1 rare2 rare3 new",
    "time",
    "nothing matches this",
]


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("limit", [1, 5, 50, 400, 5000])
def test_unfiltered_ranking_is_the_old_join_exactly(catalog: Catalog, query: str, limit: int):
    match = fts_query(query)
    old = [(i, -r) for i, r in catalog.conn.execute(OLD_FORM, [match, limit])]
    new = catalog.lexical_search(query, limit)
    assert new == old  # ids, scores (bit for bit) and order, ties included
    if query == "new" and limit >= 400:
        scores = [s for _, s in new]
        assert len(set(scores)) < len(scores)  # the case does hold ties


def test_the_filtered_form_agrees_with_the_unfiltered_ranking(catalog: Catalog) -> None:
    """A wing filter keeps the joined form: its ranking is the unfiltered ranking of every
    match, restricted to the wing, ties in the same order."""
    wing_of = dict(catalog.conn.execute("SELECT id, wing FROM drawers"))
    for query in QUERIES:
        every = catalog.lexical_search(query, 10**6)
        for limit in (5, 60):
            in_w1 = [h for h in every if wing_of[h[0]] == "w1"][:limit]
            assert catalog.lexical_search(query, limit, wing="w1") == in_w1


def test_the_query_weight_is_counted_only_by_the_fusion_that_reads_it() -> None:
    vector = [("a", 0.9), ("b", 0.5), ("c", 0.4)]
    lexical = [("b", 6.0), ("c", 1.0)]
    calls: list[int] = []

    def weight() -> float:
        calls.append(1)
        return 12.0

    rrf = fusion.FusionParams(method="rrf")
    assert fusion.fuse_scores(vector, lexical, params=rrf, query_weight=weight) == (
        fusion.fuse_scores(vector, lexical, params=rrf, query_weight=12.0)
    )
    minilm = fusion.for_model(fusion.MINILM)  # MiniLM palaces rank-fuse every query
    fusion.fuse_scores(vector, lexical, params=minilm, query_weight=weight)
    assert calls == []
    confidence = fusion.FusionParams(one_script_rrf=False)
    lazy = fusion.fuse_scores(vector, lexical, params=confidence, query_weight=weight)
    assert calls == [1]
    assert lazy == fusion.fuse_scores(vector, lexical, params=confidence, query_weight=12.0)


def test_a_search_counts_the_query_weight_once(
    home: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the service, on a palace of the default model (USE: the confidence fusion, which
    reads the query weight): the query's terms are counted once per search, not per
    candidate."""
    p = open_palace()
    p.add_drawers(
        [
            {"wing": "w", "room": "r", "content": f"Note {i}: the best way to bake new bread."}
            for i in range(5)
        ]
        + [{"wing": "w", "room": "r", "content": "Sourdough needs a starter fed daily."}]
    )
    counted: list[str] = []
    original = Catalog.query_weight

    def spy(self: Catalog, query: str) -> float:
        counted.append(query)
        return original(self, query)

    monkeypatch.setattr(Catalog, "query_weight", spy)
    found = p.search("best way to bake sourdough bread", limit=3)
    assert found["results"] and counted == ["best way to bake sourdough bread"]
