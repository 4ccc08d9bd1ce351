"""Where a warm in-process search spends its time, stage by stage.

    python benchmarks/search_profile.py PALACE [--rounds 3] [--cprofile N] [--compare]

Opens PALACE in this (long-lived) process the way the MCP server or the scale benchmark's warm
search does (`open_palace`, the vector index kept in memory), warms up, then runs the scale
benchmark's queries `--rounds` times in the default (hybrid) mode and times each stage by
wrapping the function that does it:

- query embedding (the palace's model, `embed_query`);
- vector side (`VectorIndex.nearest`);
- keyword side (`Catalog.lexical_search`: FTS5 BM25);
- the keyword side's query weight (`Catalog.query_weight`: one FTS5 count per query term);
- catalogue fetches of texts (`Catalog.candidates`: the candidates' texts for the ranking
  rules; `Catalog.get`: the results' rows);
- fusion (`fusion.fuse_scores`);
- the rest of `Palace.search` (result building, filters, bookkeeping): whole minus the above.

Prints p50 per stage (wall and CPU ms) and, with --cprofile N, the N costliest functions by
cumulative time over one more round. The palace's queries are embedded by its own model.

--compare: the same, in the same process, with rounds alternating between the keyword side as
it was before (`OLD_LEXICAL`: the FTS5 match joined to the drawers table before the LIMIT, and
the query weight counted for every search) and as it is now; also checks that both give the
same results.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from scale import QUERIES  # noqa: E402

OLD_LEXICAL = (
    "SELECT d.id, bm25(drawer_fts) AS rank FROM drawer_fts JOIN drawers d "
    "ON d.rowid = drawer_fts.rowid WHERE drawer_fts MATCH ? AND {where} "
    "ORDER BY rank LIMIT ?"
)


def old_keyword_side(enable: bool) -> None:
    """Switch Catalog.lexical_search and Search.fuse_candidates to their previous form (the
    match joined before the LIMIT; the query weight counted for every search), or back."""
    from mempalace_cli.search import fusion
    from mempalace_cli.service.searching import Search
    from mempalace_cli.storage import catalog

    saved = "_new_keyword_side"
    if not hasattr(catalog.Catalog, saved):
        setattr(catalog.Catalog, saved, (catalog.Catalog.lexical_search, Search.fuse_candidates))

    def lexical_search(self, query, limit, wing=None, room=None, filt=None):  # type: ignore[no-untyped-def]
        match = catalog.fts_query(query)
        if match is None:
            return []
        where, params = catalog._where(wing, room, prefix="d.", filt=filt)
        rows = self.conn.execute(OLD_LEXICAL.format(where=where), [match, *params, limit])
        return [(drawer_id, -rank) for drawer_id, rank in rows]

    def fuse_candidates(self, query, vector_hits, lexical_hits, params=None):  # type: ignore[no-untyped-def]
        if params is None:
            params = fusion.for_model(self.binding().model)
        ids = list(dict.fromkeys([h[0] for h in vector_hits] + [i for i, _ in lexical_hits]))
        texts = {i: r.text for i, r in self.catalog.get(ids).items()}
        texts.update({h[0]: h[2] for h in vector_hits if h[0] not in texts})
        return fusion.fuse_scores(
            [(h[0], 1.0 - h[1]) for h in vector_hits],
            lexical_hits,
            fusion.script_of(query),
            {i: fusion.script_of(t) for i, t in texts.items()},
            params,
            self.catalog.query_weight(query) if lexical_hits else 0.0,
        )

    new_lexical, new_fuse = getattr(catalog.Catalog, saved)
    catalog.Catalog.lexical_search = lexical_search if enable else new_lexical  # type: ignore[method-assign]
    Search.fuse_candidates = fuse_candidates if enable else new_fuse  # type: ignore[method-assign]


class Stages:
    """Wall and CPU time of each wrapped function (CPU of the thread that ran it)."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self._undo: list[tuple[Any, str, Any]] = []

    def wrap(self, owner: Any, attr: str, name: str) -> None:
        fn = getattr(owner, attr)

        def timed(*args: Any, **kwargs: Any) -> Any:
            t0, c0 = time.perf_counter(), time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.wall[name] = self.wall.get(name, 0.0) + time.perf_counter() - t0
                self.cpu[name] = self.cpu.get(name, 0.0) + time.thread_time() - c0

        self._undo.append((owner, attr, owner.__dict__.get(attr, fn)))
        setattr(owner, attr, timed)

    def unwrap(self) -> None:
        for owner, attr, fn in reversed(self._undo):
            setattr(owner, attr, fn)
        self._undo = []

    def reset(self) -> None:
        self.wall, self.cpu = {}, {}


def timed_round(p: Any, mode: str, stages: Stages) -> list[dict[str, Any]]:
    """One pass over QUERIES with every stage wrapped: per query, {stage: (wall, cpu)}."""
    from mempalace_cli.search import fusion
    from mempalace_cli.storage.catalog import Catalog
    from mempalace_cli.storage.vector_index import VectorIndex

    stages.wrap(p.embedder, "embed_query", "query embedding")
    stages.wrap(VectorIndex, "nearest", "vector side (index)")
    stages.wrap(Catalog, "lexical_search", "keyword side (FTS5 bm25)")
    stages.wrap(Catalog, "query_weight", "keyword query weight (FTS5 counts)")
    stages.wrap(Catalog, "get", "catalogue fetch of texts/rows")
    stages.wrap(Catalog, "candidates", "catalogue fetch of texts/rows")
    stages.wrap(fusion, "fuse_scores", "fusion")
    out = []
    try:
        for q in QUERIES:
            stages.reset()
            t0, c0 = time.perf_counter(), time.process_time()
            p.search(q, mode=mode)
            whole, whole_cpu = time.perf_counter() - t0, time.process_time() - c0
            row: dict[str, Any] = {"query": q, "whole": (whole, whole_cpu)}
            for name in stages.wall:
                row[name] = (stages.wall[name], stages.cpu[name])
            parts = [v for k, v in row.items() if k not in ("query", "whole")]
            row["rest of search"] = (
                whole - sum(v[0] for v in parts),
                whole_cpu - sum(v[1] for v in parts),
            )
            out.append(row)
    finally:
        stages.unwrap()
    return out


def summarise(per_query: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    names: list[str] = []
    for r in per_query:
        names += [k for k in r if k != "query" and k not in names]
    summary = {}
    for name in names:
        wall = [r[name][0] * 1000 for r in per_query if name in r]
        cpu = [r[name][1] * 1000 for r in per_query if name in r]
        summary[name] = {
            "wall_ms_p50": round(statistics.median(wall), 2),
            "cpu_ms_p50": round(statistics.median(cpu), 2),
            "wall_ms_mean": round(statistics.fmean(wall), 2),
            "searches": len(wall),
        }
    return summary


def show(title: str, summary: dict[str, dict[str, float]]) -> None:
    print(title)
    print(f"  {'stage':40s} {'wall p50 ms':>12s} {'CPU p50 ms':>11s} {'wall mean':>10s} {'n':>4s}")
    for name, s in summary.items():
        print(
            f"  {name:40s} {s['wall_ms_p50']:12.2f} {s['cpu_ms_p50']:11.2f} "
            f"{s['wall_ms_mean']:10.2f} {s['searches']:4d}"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("palace")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cprofile", type=int, default=0)
    ap.add_argument("--mode", default="hybrid")
    ap.add_argument("--compare", action="store_true")
    ap.add_argument("--json", type=Path, help="also write the summaries here")
    args = ap.parse_args(argv)

    from mempalace_cli.service import open_palace

    p = open_palace(args.palace)
    p.searching.vector_index().keep_in_memory()
    for q in QUERIES[:3]:
        p.search(q, mode=args.mode)
    drawers = p.catalog.count()
    stages = Stages()
    variants = ["before", "after"] if args.compare else ["now"]
    runs: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
    same = True
    for _ in range(args.rounds):
        for variant in variants:
            old_keyword_side(variant == "before")
            runs[variant] += timed_round(p, args.mode, stages)
        old_keyword_side(False)
    if args.compare:
        for q in QUERIES:
            old_keyword_side(True)
            a = p.search(q, mode=args.mode)
            old_keyword_side(False)
            b = p.search(q, mode=args.mode)
            same = same and a == b
    print(f"{drawers:,} drawers, mode {args.mode}, {args.rounds} rounds of {len(QUERIES)} queries")
    summaries = {v: summarise(r) for v, r in runs.items()}
    for variant, summary in summaries.items():
        show(f"keyword side {variant}:" if args.compare else "stages:", summary)
    if args.compare:
        print(f"same results before and after (every query, whole result dicts): {same}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "drawers": drawers,
                    "mode": args.mode,
                    "same_results": same,
                    "load": "{:.1f} / {:.1f} / {:.1f}".format(*os.getloadavg()),
                    **summaries,
                },
                indent=2,
            )
            + "\n",
            encoding="utf-8",
        )
    if args.cprofile:
        prof = cProfile.Profile()
        prof.enable()
        for q in QUERIES:
            p.search(q, mode=args.mode)
        prof.disable()
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(args.cprofile)
        print(out.getvalue())
    p.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
