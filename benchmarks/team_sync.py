"""What a team palace costs a reader: the per-command check, a refresh after another machine's
write, and how late a long-lived reader sees it. Against a real `chroma run`.

    python benchmarks/team_sync.py --url http://127.0.0.1:8000 [--drawers 2000] [--rounds 20]

Two palaces ("machines") in one process share one server database made for the run. Numbers
are wall-clock on this machine; the script prints the command line and medians/p95.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

from mempalace_cli.common.config import resolve_settings
from mempalace_cli.embedders.base import DIMENSION
from mempalace_cli.service import Palace
from mempalace_cli.storage.catalog import DrawerRow


def _rows(n: int, start: int, rng: np.random.Generator) -> tuple[list[DrawerRow], np.ndarray]:
    rows = [
        DrawerRow(
            f"drawer_bench_room_{i:08d}",
            "bench",
            "room",
            "",
            None,
            "2026-01-01T00:00:00+00:00",
            f"Benchmark drawer number {i} about topic {i % 37}.",
            {"added_by": "bench"},
        )
        for i in range(start, start + n)
    ]
    vecs = rng.standard_normal((n, DIMENSION)).astype(np.float32)
    return rows, vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


def _pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--drawers", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    db = "bench_" + uuid.uuid4().hex[:12]
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory() as tmp:
        writer = Palace(resolve_settings(Path(tmp) / "a", args.url, chroma_database=db))
        reader = Palace(resolve_settings(Path(tmp) / "b", args.url, chroma_database=db))
        writer.create()
        rows, vecs = _rows(args.drawers, 0, rng)
        t = time.perf_counter()
        with writer.lock.hold():
            writer.writer.file(rows, vecs)
        filed = time.perf_counter() - t
        reader.create()
        t = time.perf_counter()
        reader.sync()
        first = time.perf_counter() - t
        checks, refreshes, fulls = [], [], []
        for r in range(args.rounds):
            t = time.perf_counter()
            assert reader.sync() == 0
            checks.append(time.perf_counter() - t)
            more, mvecs = _rows(1, args.drawers + r, rng)
            with writer.lock.hold():
                writer.writer.file(more, mvecs)
            t = time.perf_counter()
            assert reader.sync() == 1
            refreshes.append(time.perf_counter() - t)
            # What the same catch-up costs without the change log: every drawer compared.
            t = time.perf_counter()
            with reader.lock.hold():
                reader.consistency.reconcile("bench")
            fulls.append(time.perf_counter() - t)
        print(
            f"$ python benchmarks/team_sync.py --url URL --drawers {args.drawers} "
            f"--rounds {args.rounds}"
        )
        print(f"python {sys.version.split()[0]}; server {args.url}; database {db}")
        print(f"file {args.drawers} drawers on the server: {filed:.2f} s")
        print(f"second machine's first mirror of {args.drawers} drawers: {first:.2f} s")
        print(
            f"per-command check, in step: median {statistics.median(checks) * 1000:.1f} ms, "
            f"p95 {_pct(checks, 0.95) * 1000:.1f} ms"
        )
        print(
            f"refresh after another machine's 1-drawer write ({args.drawers}+ drawers): "
            f"median {statistics.median(refreshes) * 1000:.0f} ms, "
            f"p95 {_pct(refreshes, 0.95) * 1000:.0f} ms"
        )
        print(
            f"the same without the change log (full reconcile): median "
            f"{statistics.median(fulls) * 1000:.0f} ms; ratio change log / full = "
            f"{statistics.median(refreshes) / statistics.median(fulls):.2f}"
        )
        writer.close()
        reader.close()


if __name__ == "__main__":
    main()
