"""The on-disk vector index (vector_index.py): its ranking equals exact cosine ranking over every
catalogue vector, and a write made by any process (this one, another CLI process, a rebuild of
the catalogue) is visible to the very next search, in a long-lived process and a fresh one."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mempalace_cli.embedders.base import Embedder
from mempalace_cli.service import open_palace
from mempalace_cli.storage.catalog import CATALOG_FILE
from mempalace_cli.storage.vector_index import INDEX_DIR
from tests.other_process import run_in_another_process

QUERIES = [
    "backup schedule",
    "who owns the roadmap",
    "database migration",
    "quarterly planning meeting",
    "how do we deploy",
]


@pytest.fixture
def palace(mined_notes: dict, tmp_path: Path) -> Path:
    dest = tmp_path / "palace"
    shutil.copytree(mined_notes["palace"], dest)
    shutil.rmtree(dest / INDEX_DIR, ignore_errors=True)
    p = open_palace(str(dest))
    p.sync(restamp=True)
    # Built from nothing by the explicit step writers run after a write (a search only reads it).
    p.core.keep_vector_index()
    p.close()
    return dest


def exact_top(p: Any, query_vec: Any, k: int, wing: str | None = None) -> list[tuple[str, float]]:
    """Exact cosine ranking over every catalogue vector (the reference)."""
    ids, matrix = p.catalog.vectors(wing, None)
    q = np.asarray(query_vec, dtype=np.float32)
    q /= np.linalg.norm(q)
    unit = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    dist = 1.0 - unit @ q
    order = np.argsort(dist, kind="stable")[:k]
    return [(ids[i], float(dist[i])) for i in order]


def cli(palace: Path, home: Path, *args: str) -> Any:
    proc = subprocess.run(
        [sys.executable, "-m", "mempalace_cli", "--palace", str(palace), *args, "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "MEMPALACE_HOME": str(home)},
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def add_in_another_process(palace: Path, home: Path, text: str) -> str:
    """File `text` in zoo/animals from a separate Python process; its drawer id."""
    script = (
        "import sys; from mempalace_cli.service import open_palace; "
        "p = open_palace(sys.argv[1]); "
        "print(p.add_drawer('zoo', 'animals', sys.argv[2])['drawer_id'])"
    )
    return run_in_another_process(palace, home, script, text)


def delete_in_another_process(palace: Path, home: Path, drawer_id: str) -> None:
    script = (
        "import sys; from mempalace_cli.service import open_palace; "
        "open_palace(sys.argv[1]).delete_drawer(sys.argv[2])"
    )
    run_in_another_process(palace, home, script, drawer_id)


def test_index_ranking_equals_exact_ranking(palace: Path, embedder: Embedder) -> None:
    p = open_palace(str(palace))
    assert p.catalog.count() > 20
    for query in QUERIES:
        vec = embedder.embed([query])[0]
        for wing in (None, "notes"):
            got = p.searching.vector_index().nearest(vec, 10, wing=wing)
            want = exact_top(p, vec, 10, wing=wing)
            assert got is not None
            assert [i for i, _ in got] == [i for i, _ in want], (query, wing)
            assert np.allclose([d for _, d in got], [d for _, d in want], atol=1e-5)
    # The index was built on disk, and the service's search used it (same top ids).
    assert (palace / INDEX_DIR / "header.json").exists()
    vec = embedder.embed([QUERIES[0]])[0]
    hits = p.search(QUERIES[0], mode="vector", limit=10)["results"]
    assert [h["drawer_id"] for h in hits] == [i for i, _ in exact_top(p, vec, 10)]
    p.close()


def test_a_write_by_another_process_is_visible_to_the_next_search(
    palace: Path, home: Path, embedder: Embedder
) -> None:
    server = open_palace(str(palace))  # a long-lived process, e.g. the MCP server
    text = "The quokka sanctuary opens its night tours on Thursdays."
    before = server.search("quokka night tours", mode="vector", limit=3)["results"]
    assert all(r["text"] != text for r in before)

    drawer_id = add_in_another_process(palace, home, text)

    warm = server.search("quokka night tours", mode="vector", limit=3)["results"]
    assert warm[0]["drawer_id"] == drawer_id
    fresh = cli(palace, home, "search", "quokka night tours", "--mode", "vector", "-n", "3")
    assert fresh["results"][0]["drawer_id"] == drawer_id
    assert fresh["results"][0]["similarity"] == warm[0]["similarity"]

    # Deleted by yet another process: gone from the next search on both paths.
    delete_in_another_process(palace, home, drawer_id)
    warm = server.search("quokka night tours", mode="vector", limit=10)["results"]
    assert drawer_id not in [r["drawer_id"] for r in warm]
    fresh = cli(palace, home, "search", "quokka night tours", "--mode", "vector", "-n", "10")
    assert drawer_id not in [r["drawer_id"] for r in fresh["results"]]
    vec = embedder.embed(["quokka night tours"])[0]
    assert [r["drawer_id"] for r in warm] == [i for i, _ in exact_top(server, vec, 10)]
    server.close()


def test_a_warm_server_keeps_its_codes_true_across_writes_by_other_processes(
    palace: Path, home: Path, embedder: Embedder
) -> None:
    """stay_warm() (the MCP server) keeps the codes in memory; another process's appends are
    read as new rows only, its deletions as tombstones, and the ranking stays exact."""
    server = open_palace(str(palace))
    server.stay_warm()
    server.search("quokka night tours", mode="vector", limit=3)
    index = server.searching.vector_index()
    assert index._memory is not None and "codes" in index._memory[1]
    kept_before = index._memory[1]["codes"]
    added = [
        add_in_another_process(palace, home, text)
        for text in (
            "The quokka sanctuary opens its night tours on Thursdays.",
            "Night tours at the wombat rescue start at nine.",
        )
    ]
    warm = server.search("quokka night tours", mode="vector", limit=10)["results"]
    assert warm[0]["drawer_id"] == added[0]
    vec = embedder.embed(["quokka night tours"])[0]
    assert [r["drawer_id"] for r in warm] == [i for i, _ in exact_top(server, vec, 10)]
    codes = index._memory[1]["codes"]
    assert len(codes) == len(kept_before) + 2  # the two appended rows, the rest kept
    assert np.array_equal(codes[: len(kept_before)], kept_before)

    delete_in_another_process(palace, home, added[0])
    warm = server.search("quokka night tours", mode="vector", limit=10)["results"]
    assert added[0] not in [r["drawer_id"] for r in warm]
    assert [r["drawer_id"] for r in warm] == [i for i, _ in exact_top(server, vec, 10)]
    server.close()


def test_a_warm_server_notices_an_index_rebuilt_from_nothing_by_another_process(
    palace: Path, home: Path, embedder: Embedder
) -> None:
    """An index deleted and rebuilt elsewhere starts again at epoch 0, possibly with more rows
    than the server holds: the server must read it whole, not append to its old codes."""
    server = open_palace(str(palace))
    server.stay_warm()
    server.search("night tours", mode="vector", limit=3)
    first = server.catalog.conn.execute("SELECT id FROM drawers ORDER BY rowid LIMIT 1")
    delete_in_another_process(palace, home, first.fetchone()[0])  # the rows shift by one
    for text in ("Night tours at the wombat rescue start at nine.", "Owls at dusk.", "Bats."):
        add_in_another_process(palace, home, text)
    shutil.rmtree(palace / INDEX_DIR)
    rebuild = (  # the upkeep a writer runs after its write (a search never writes the index)
        "import sys; from mempalace_cli.service import open_palace; "
        "open_palace(sys.argv[1]).core.keep_vector_index()"
    )
    run_in_another_process(palace, home, rebuild)
    vec = embedder.embed(["night tours"])[0]
    warm = server.search("night tours", mode="vector", limit=10)["results"]
    assert [r["drawer_id"] for r in warm] == [i for i, _ in exact_top(server, vec, 10)]
    # The kept codes are the rebuilt index's, row for row (exact rescoring of a small palace
    # would hide misaligned codes in the ranking).
    index = server.searching.vector_index()
    header = index.current()
    on_disk = np.fromfile(palace / INDEX_DIR / f"codes.{header.epoch}", dtype=np.int8)
    assert np.array_equal(index._memory[1]["codes"].reshape(-1), on_disk[: header.n * header.dim])
    server.close()


def test_a_catalogue_rebuilt_from_chroma_rebuilds_the_index(
    palace: Path, home: Path, embedder: Embedder
) -> None:
    p = open_palace(str(palace))
    vec = embedder.embed(["backup schedule"])[0]
    first = p.searching.vector_index().nearest(vec, 5)
    token = json.loads((palace / INDEX_DIR / "header.json").read_text())["token"]
    p.close()
    # The catalogue is lost and rebuilt from Chroma: new rowids, a new log, a new token.
    (palace / CATALOG_FILE).rename(palace / (CATALOG_FILE + ".bad"))
    result = cli(palace, home, "search", "backup schedule", "--mode", "vector", "-n", "5")
    assert [r["drawer_id"] for r in result["results"]] == [i for i, _ in first]
    # That search rebuilt the catalogue through Chroma; the next one ranks from the index,
    # which notices the new catalogue and rebuilds from it.
    again = cli(palace, home, "search", "backup schedule", "--mode", "vector", "-n", "5")

    # Same drawers, texts and similarities. The fused score (z-scores over all 50 candidates)
    # may differ in the 6th digit: Chroma's float32 distances vs the index's exact rescoring.
    def without_score(hits: list[dict]) -> list[dict]:
        return [{k: v for k, v in h.items() if k != "rank_score"} for h in hits]

    assert without_score(again["results"]) == without_score(result["results"])
    for a, b in zip(again["results"], result["results"], strict=True):
        assert abs(a["rank_score"] - b["rank_score"]) < 1e-4
    header = json.loads((palace / INDEX_DIR / "header.json").read_text())
    assert header["token"] != token
    p = open_palace(str(palace))
    assert header["live"] == p.catalog.count()
    now = p.searching.vector_index().nearest(vec, 5)
    assert [i for i, _ in now] == [i for i, _ in first]
    assert [d for _, d in now] == pytest.approx([d for _, d in first], abs=1e-6)
    p.close()


def test_many_writes_compact_the_index_and_keep_it_exact(palace: Path, embedder: Embedder) -> None:
    p = open_palace(str(palace))
    texts = [
        f"Note {i}: the ferry to island {i} leaves at {i % 12 + 1} o'clock." for i in range(60)
    ]
    p.add_drawers([{"wing": "ferries", "room": "times", "content": t} for t in texts])
    vec = embedder.embed(["ferry timetable to the island"])[0]
    assert [i for i, _ in p.searching.vector_index().nearest(vec, 10)] == [
        i for i, _ in exact_top(p, vec, 10)
    ]
    # Replace most of them: tombstones pile up, the next search compacts or appends.
    ids = [i for i, _ in exact_top(p, vec, 200, wing="ferries")]
    for drawer_id in ids[:50]:
        p.delete_drawer(drawer_id)
    got = p.searching.vector_index().nearest(vec, 10)
    assert [i for i, _ in got] == [i for i, _ in exact_top(p, vec, 10)]
    header = json.loads((palace / INDEX_DIR / "header.json").read_text())
    assert header["live"] == p.catalog.count()
    p.close()
