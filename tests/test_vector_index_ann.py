"""The vector index's sign-code first stage (vector_index.py, issue 15) on a real catalogue file:
with the thresholds lowered so a few thousand drawers take the path a million would, it returns
the same top results as exact cosine ranking, without scoring every row's int8 codes; wing/room
filters stay exact; an add, a delete and a wing/room update made by another process are visible
to the next search of a long-lived process and of a fresh one; a compaction and an index of the
previous format rebuild into the same answers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mempalace_cli.storage import vector_index
from mempalace_cli.storage.catalog import Catalog
from mempalace_cli.storage.vector_index import INDEX_DIR, VectorIndex

DIM = 384
ROWS = 4000
WINGS = ["w0", "w1", "w2", "w3"]
ROOMS = ["r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9"]
# The thresholds a million-drawer palace meets, scaled down to ROWS: the sign-code stage from
# 500 candidate rows on, a pool of 10% (at least 300) scored by int8 codes.
SMALL = {"ANN_MIN_ROWS": 500, "POOL_SHARE": 0.10, "POOL_MIN": 300}
REPO = Path(__file__).resolve().parent.parent


def clustered(n: int, seed: int, centers: Any) -> Any:
    """Unit vectors around shared centres with a common offset, as sentence embeddings are."""
    rng = np.random.default_rng(seed)
    offset = np.random.default_rng(0).standard_normal(DIM).astype(np.float32) * 0.04
    lab = rng.integers(0, len(centers), n)
    x = offset + centers[lab] + 0.045 * rng.standard_normal((n, DIM)).astype(np.float32)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture
def small_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SMALL.items():
        monkeypatch.setattr(vector_index, name, value)


@pytest.fixture
def centers() -> Any:
    c = np.random.default_rng(1).standard_normal((60, DIM)).astype(np.float32)
    return c / np.linalg.norm(c, axis=1, keepdims=True) * 0.9


@pytest.fixture
def palace(tmp_path: Path, centers: Any) -> Path:
    """A catalogue of ROWS drawers (ids, wing/room, vectors) in a real palace folder."""
    path = tmp_path / "palace"
    catalog = Catalog(path)
    vecs = clustered(ROWS, 2, centers)
    with catalog.transaction() as conn:
        conn.executemany(
            "INSERT INTO drawers(id, wing, room, embedding) VALUES (?, ?, ?, ?)",
            [(f"d{i}", WINGS[i % 4], ROOMS[i % 10], v.tobytes()) for i, v in enumerate(vecs)],
        )
    catalog.close()
    return path


def exact_top(conn: Any, q: Any, k: int, wing: str | None = None, room: str | None = None):
    rows = conn.execute(
        "SELECT id, embedding FROM drawers "
        "WHERE (? IS NULL OR wing = ?) AND (? IS NULL OR room = ?)",
        (wing, wing, room, room),
    ).fetchall()
    mat = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    unit = mat / np.linalg.norm(mat, axis=1, keepdims=True)
    dist = 1.0 - unit @ (q / np.linalg.norm(q))
    order = np.argsort(dist, kind="stable")[:k]
    return [(rows[i][0], float(dist[i])) for i in order]


class Scored:
    """Counts the rows each search scored by int8 codes (the spy sits on the index's own
    method; the files and the catalogue are real)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[int] = []
        self.scans = 0
        row_scores, scan_scores = VectorIndex._row_scores, VectorIndex._scan_scores

        def spy_rows(index: VectorIndex, header: Any, q: Any, rows: Any, arrays: Any) -> Any:
            self.calls.append(len(rows))
            return row_scores(index, header, q, rows, arrays)

        def spy_scan(index: VectorIndex, *args: Any) -> Any:
            self.scans += 1
            return scan_scores(index, *args)

        monkeypatch.setattr(VectorIndex, "_row_scores", spy_rows)
        monkeypatch.setattr(VectorIndex, "_scan_scores", spy_scan)


def assert_same(got: Any, want: Any) -> None:
    assert got is not None
    assert [i for i, _ in got] == [i for i, _ in want]
    assert np.allclose([d for _, d in got], [d for _, d in want], atol=1e-5)


@pytest.mark.parametrize("warm", [False, True])
def test_sign_stage_ranks_like_exact_without_scoring_every_row(
    palace: Path, centers: Any, small_thresholds: None, monkeypatch: pytest.MonkeyPatch, warm: bool
) -> None:
    scored = Scored(monkeypatch)
    catalog = Catalog(palace)
    index = VectorIndex(palace, catalog.conn)
    if warm:
        index.keep_in_memory()
    for q in clustered(30, 3, centers):
        assert_same(index.nearest(q, 10), exact_top(catalog.conn, q, 10))
    assert scored.scans == 0
    assert scored.calls and max(scored.calls) == 400  # 10% of 4000 rows, not all of them
    header = json.loads((palace / INDEX_DIR / "header.json").read_text())
    assert header["format"] == vector_index.FORMAT and header["sign_bytes"] == DIM // 8
    assert (palace / INDEX_DIR / "signs.0").stat().st_size == ROWS * DIM // 8
    catalog.close()


def test_below_the_threshold_every_row_is_scored(palace: Path, centers: Any) -> None:
    """4,000 rows are below the default ANN_MIN_ROWS: the full int8 scan, as before."""
    catalog = Catalog(palace)
    index = VectorIndex(palace, catalog.conn)
    for q in clustered(5, 4, centers):
        assert_same(index.nearest(q, 10), exact_top(catalog.conn, q, 10))
    catalog.close()


def test_wing_and_room_filters_stay_exact(
    palace: Path, centers: Any, small_thresholds: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    scored = Scored(monkeypatch)
    catalog = Catalog(palace)
    index = VectorIndex(palace, catalog.conn)
    for q in clustered(10, 5, centers):
        # A wing holds 1,000 rows: the sign stage among them (pool 300).
        assert_same(index.nearest(q, 10, wing="w1"), exact_top(catalog.conn, q, 10, "w1"))
        assert scored.calls[-1] == 300
        # A room holds 400, a wing+room 200 (below ANN_MIN_ROWS): every one of them scored.
        assert_same(index.nearest(q, 10, room="r3"), exact_top(catalog.conn, q, 10, None, "r3"))
        assert scored.calls[-1] == 400
        got = index.nearest(q, 10, wing="w3", room="r3")
        assert_same(got, exact_top(catalog.conn, q, 10, "w3", "r3"))
        assert scored.calls[-1] == 200
        assert index.nearest(q, 10, wing="nowhere") == []
    catalog.close()


FRESH_SEARCH = """
import json, sys
from pathlib import Path
import numpy as np
from mempalace_cli.storage import vector_index
from mempalace_cli.storage.catalog import Catalog
from mempalace_cli.storage.vector_index import VectorIndex
for name, value in json.loads(sys.argv[2]).items():
    setattr(vector_index, name, value)
palace = Path(sys.argv[1])
q = np.asarray(json.loads(sys.argv[3]), dtype=np.float32)
index = VectorIndex(palace, Catalog(palace).conn)
print(json.dumps({w or "": index.nearest(q, 10, wing=w) for w in (None, "w0", "w2")}))
"""

WRITE = """
import sys, json
from pathlib import Path
import numpy as np
from mempalace_cli.storage.catalog import Catalog
palace, new_vec = Path(sys.argv[1]), np.asarray(json.loads(sys.argv[2]), dtype=np.float32)
catalog = Catalog(palace)
with catalog.transaction() as conn:
    conn.execute("INSERT INTO drawers(id, wing, room, embedding) VALUES ('new', 'w0', 'r0', ?)",
                 (new_vec.tobytes(),))
    conn.execute("DELETE FROM drawers WHERE id = ?", (sys.argv[3],))
    conn.execute("UPDATE drawers SET wing = 'w2' WHERE id = ?", (sys.argv[4],))
"""


def test_writes_by_another_process_are_seen_by_the_next_search(
    palace: Path, centers: Any, small_thresholds: None
) -> None:
    catalog = Catalog(palace)
    server = VectorIndex(palace, catalog.conn)  # a long-lived process
    server.keep_in_memory()
    q = clustered(1, 6, centers)[0]
    before = server.nearest(q, 10)
    assert_same(before, exact_top(catalog.conn, q, 10))
    deleted = before[0][0]
    moved = next(i for i, _ in exact_top(catalog.conn, q, 10, "w0") if i != deleted)
    new_vec = q + 0.01 * np.random.default_rng(7).standard_normal(DIM).astype(np.float32)
    proc = subprocess.run(
        [sys.executable, "-c", WRITE, str(palace), json.dumps(new_vec.tolist()), deleted, moved],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]

    warm = {w or "": server.nearest(q, 10, wing=w) for w in (None, "w0", "w2")}
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            FRESH_SEARCH,
            str(palace),
            json.dumps(SMALL),
            json.dumps(q.tolist()),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    fresh = json.loads(proc.stdout)
    for results in (warm, fresh):
        every, w0, w2 = results[""], results["w0"], results["w2"]
        assert every[0][0] == "new" and w0[0][0] == "new"
        assert deleted not in [i for i, _ in every + w0]
        assert moved not in [i for i, _ in w0] and moved in [i for i, _ in w2]
        assert_same(every, exact_top(catalog.conn, q, 10))
        assert_same(w0, exact_top(catalog.conn, q, 10, "w0"))
        assert_same(w2, exact_top(catalog.conn, q, 10, "w2"))
    catalog.close()


def test_compaction_and_an_older_format_rebuild_to_the_same_answers(
    palace: Path, centers: Any, small_thresholds: None
) -> None:
    catalog = Catalog(palace)
    index = VectorIndex(palace, catalog.conn)
    queries = clustered(10, 8, centers)
    index.nearest(queries[0], 10)
    # A third of the drawers deleted: mostly tombstones, the next search compacts (new epoch).
    with catalog.transaction() as conn:
        conn.execute("DELETE FROM drawers WHERE rowid % 3 = 0")
    for q in queries:
        assert_same(index.nearest(q, 10), exact_top(catalog.conn, q, 10))
    header = json.loads((palace / INDEX_DIR / "header.json").read_text())
    assert header["epoch"] == 1 and header["n"] == header["live"] == catalog.count()
    assert sorted(p.name for p in (palace / INDEX_DIR).glob("*.*[0-9]")) == sorted(
        f"{p}.1" for p in vector_index._PARTS
    )
    # An index of the previous format (no sign codes): rebuilt once, stale parts removed.
    header["format"] = 1
    del header["sign_bytes"]
    (palace / INDEX_DIR / "header.json").write_text(json.dumps(header))
    (palace / INDEX_DIR / "signs.1").unlink()
    (palace / INDEX_DIR / "codes.7").write_bytes(b"old")
    for q in queries:
        assert_same(index.nearest(q, 10), exact_top(catalog.conn, q, 10))
    header = json.loads((palace / INDEX_DIR / "header.json").read_text())
    assert header["format"] == vector_index.FORMAT and header["epoch"] == 0
    assert not (palace / INDEX_DIR / "codes.7").exists()
    assert (palace / INDEX_DIR / "signs.0").stat().st_size == catalog.count() * DIM // 8
    catalog.close()
