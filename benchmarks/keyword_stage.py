"""The keyword side alone at scale: the plain FTS5 query against the split (lexical_topk.py).

    python benchmarks/keyword_stage.py                    # 100k drawers
    python benchmarks/keyword_stage.py --sizes 100000,1000000

For each size: a catalogue (mempalace_cli.storage.catalog.Catalog, the real schema, tokenizer and
triggers; no Chroma, no vectors: the keyword side reads neither) holding that many drawers of
scale.py's text (LongMemEval-S dev haystack turns recombined), then every query, in turn
through the plain query (`ORDER BY bm25() LIMIT 50` over the OR of the terms), through
`Catalog.lexical_search` (which splits where it can, lexical_topk.py): the wall time of each
(best of --repeat), whether the two lists are identical (ids, scores, order), and how many
queries the split took. Then the same queries twice more in a long-lived process keeping common
words' postings (`Catalog.keep_postings`, term_postings.py, as the MCP server does): the first
pass reads each common word's postings on first use, the second finds them kept; whether the
lists are the plain query's (same ids in the same order, scores within 1e-12), and the memory
the postings take.
Queries: the 50 LongMemEval dev questions and scale.py's 12 short queries.
Writes benchmarks/results/keyword_stage.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import numpy as np  # noqa: E402
from scale import BENCH, LME_FILE, QUERIES, TurnPool  # noqa: E402

from mempalace_cli.storage import lexical_topk  # noqa: E402
from mempalace_cli.storage.catalog import Catalog, DrawerRow, fts_terms  # noqa: E402
from mempalace_cli.storage.vector_index import VectorIndex  # noqa: E402

DEPTH = 50  # the search's candidate depth (service CANDIDATES)
PLAIN = (
    "SELECT d.id, f.rank FROM (SELECT rowid, bm25(drawer_fts) AS rank FROM drawer_fts "
    "WHERE drawer_fts MATCH ? ORDER BY rank LIMIT ?) AS f JOIN drawers d ON d.rowid = f.rowid "
    "ORDER BY f.rank"
)


def build(size: int, pool: TurnPool, path: Path) -> Catalog:
    cat = Catalog(path)
    have = cat.conn.execute("SELECT count(*) FROM drawers").fetchone()[0]
    seed = 0
    while have < size:
        n = min(20_000, size - have)
        seed += 1
        rows = [
            DrawerRow(f"k{have + i:08d}", "w", "r", "", None, "2026-01-01", text, {})
            for i, text in enumerate(pool.exchanges(n, seed=seed * 7919 + have))
        ]
        with cat.transaction() as conn:
            cat.upsert_drawers(conn, rows, np.zeros((n, 4), dtype=np.float32))
        have += n
        print(f"  {have:,}/{size:,} drawers", file=sys.stderr, flush=True)
    return cat


def timed(fn: Any, repeat: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def measure(cat: Catalog, queries: list[str], repeat: int) -> dict[str, Any]:
    rows = lexical_topk.indexed_rows(cat.conn)
    plain_s, split_s, identical, taken = [], [], 0, 0
    for q in queries:
        terms = fts_terms(q)
        a, plain = timed(
            lambda t=terms: [(i, -r) for i, r in cat.conn.execute(PLAIN, [" OR ".join(t), DEPTH])],
            repeat,
        )
        b, split = timed(lambda q=q: cat.lexical_search(q, DEPTH), repeat)
        taken += lexical_topk.top_k(cat.conn, terms, DEPTH, "1", [], rows) is not None
        identical += split == plain
        plain_s.append(a)
        split_s.append(b)
    result = {
        "drawers": rows,
        "queries": len(queries),
        "split_taken": taken,
        "identical": identical,
        "plain_ms": {"p50": ms(statistics.median(plain_s)), "mean": ms(statistics.mean(plain_s))},
        "split_ms": {"p50": ms(statistics.median(split_s)), "mean": ms(statistics.mean(split_s))},
        "ratio_p50": round(statistics.median(split_s) / statistics.median(plain_s), 2),
        "ratio_mean": round(statistics.mean(split_s) / statistics.mean(plain_s), 2),
    }
    return result | kept_postings(cat, queries, plain_s)


def kept_postings(cat: Catalog, queries: list[str], plain_s: list[float]) -> dict[str, Any]:
    """Two passes over the queries in a process keeping common words' postings."""
    VectorIndex(cat.path.parent, cat.conn).log_position()  # the change log the postings follow
    cat.keep_postings()
    out: dict[str, Any] = {}
    for name in ("kept_first_pass", "kept_second_pass"):
        times, same = [], 0
        for q in queries:
            t0 = time.perf_counter()
            got = cat.lexical_search(q, DEPTH)
            times.append(time.perf_counter() - t0)
            terms = fts_terms(q)
            want = [(i, -r) for i, r in cat.conn.execute(PLAIN, [" OR ".join(terms), DEPTH])]
            same += [i for i, _ in got] == [i for i, _ in want] and all(
                abs(a - b) <= 1e-12 * abs(b) for (_, a), (_, b) in zip(got, want, strict=True)
            )
        out[name] = {
            "p50": ms(statistics.median(times)),
            "mean": ms(statistics.mean(times)),
            "same_as_plain": same,
            "ratio_p50": round(statistics.median(times) / statistics.median(plain_s), 3),
        }
    kept = cat._postings
    if kept is not None:
        postings = sum(len(p.rowids) for p in kept.terms.values())
        nbytes = sum(
            p.rowids.nbytes + p.freqs.nbytes + (p.shares.nbytes if p.shares is not None else 0)
            for p in kept.terms.values()
        ) + (kept.lengths.nbytes if kept.lengths is not None else 0)
        out["kept"] = {
            "words": len(kept.terms),
            "postings": postings,
            "mib": round(nbytes / 2**20, 1),
        }
    return out


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def markdown(res: dict[str, Any]) -> str:
    out = [
        f"# Keyword side at scale ({res['date']})",
        "",
        f"Command: `{res['command']}`. Machine: {res['machine']}. Wall time: {res['wall_s']} s.",
        f"Queries: {res['query_source']}. Text: {res['text']}.",
        "",
        "| drawers | split took | identical to plain | plain p50 / mean ms | split p50 / mean ms "
        "| ratio p50 / mean |",
        "|---|---|---|---|---|---|",
    ]
    for r in res["sizes"]:
        out.append(
            f"| {r['drawers']:,} | {r['split_taken']} of {r['queries']} | {r['identical']} of "
            f"{r['queries']} | {r['plain_ms']['p50']} / {r['plain_ms']['mean']} | "
            f"{r['split_ms']['p50']} / {r['split_ms']['mean']} | {r['ratio_p50']} / "
            f"{r['ratio_mean']} |"
        )
    out += [
        "",
        "A long-lived process keeping common words' postings (term_postings.py, as the MCP "
        "server does), the same queries twice:",
        "",
        "| drawers | first pass p50 / mean ms (reads postings) | second pass p50 / mean ms "
        "| second / plain p50 | same as plain (both passes) | kept: words, postings, MiB |",
        "|---|---|---|---|---|---|",
    ]
    for r in res["sizes"]:
        a, b, k = r["kept_first_pass"], r["kept_second_pass"], r.get("kept", {})
        out.append(
            f"| {r['drawers']:,} | {a['p50']} / {a['mean']} | {b['p50']} / {b['mean']} | "
            f"{b['ratio_p50']} | {a['same_as_plain']} and {b['same_as_plain']} of "
            f"{r['queries']} | {k.get('words', 0)}, {k.get('postings', 0):,}, "
            f"{k.get('mib', 0)} |"
        )
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", default="100000")
    ap.add_argument("--repeat", type=int, default=3, help="runs per query; the best counts")
    ap.add_argument("--data", type=Path, default=BENCH)
    ap.add_argument("--work", type=Path, help="keep the catalogues here (reused when present)")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "keyword_stage")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    pool = TurnPool(args.data)
    with lzma.open(args.data / LME_FILE, "rt", encoding="utf-8") as f:
        questions = [item["question"] for item in json.load(f)]
    queries = questions + QUERIES
    work = args.work or Path(tempfile.mkdtemp(prefix="mp-keyword-"))
    res: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": "python benchmarks/keyword_stage.py " + " ".join(argv or sys.argv[1:]),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}",
        "query_source": f"{len(questions)} LongMemEval dev questions + {len(QUERIES)} scale.py "
        "queries",
        "text": pool.source,
        "sizes": [],
    }
    for size in [int(s) for s in args.sizes.split(",") if s]:
        print(f"building {size:,} ...", file=sys.stderr, flush=True)
        cat = build(size, pool, work / f"k{size}")
        res["sizes"].append(measure(cat, queries, args.repeat))
        cat.close()
        print(json.dumps(res["sizes"][-1]), file=sys.stderr, flush=True)
    res["wall_s"] = round(time.perf_counter() - started, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    args.out.with_suffix(".md").write_text(markdown(res), encoding="utf-8")
    print(markdown(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
