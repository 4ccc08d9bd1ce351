"""The vector index's first stage at 100k and 1M drawers: the full int8 scan against the sign-code
pool (vector_index.py), and an IVF first stage for comparison (issue 15).

    python benchmarks/ann_index.py                          # 100k and 1M, both vector sources
    python benchmarks/ann_index.py --sizes 100000 --work /tmp/ann   # keep catalogues and vectors

Only the vector side is measured: a real catalogue file holding ids, wing/room and float32
vectors (no Chroma, no text, no query embedding, no keyword side), and the real on-disk index
built from it by the first search. Two sources of unit vectors, 384 dimensions:
- `clustered`: synthetic, points around n/200 random centres plus a shared offset (sentence
  embeddings are anisotropic), noise comparable to the centre (intra-cluster cosine ~0.5);
- `standin`: the stand-in embedder of benchmarks/scale.py (hashed bag-of-words random
  projection) over LongMemEval exchanges recombined as scale.py does; queries are 200 held-out
  exchanges embedded the same way.
For each source and size, with the index path forced to the full int8 scan (`full`, the path
before this change) and to the sign-code pool (`sign`, the path from ANN_MIN_ROWS on), in the
same run: warm in-process p50/p95 of `VectorIndex.nearest(q, 50)` (wall and CPU, codes kept in
memory as a long-lived process keeps them), recall@10 against exact cosine ranking over every
vector, and a few fresh processes (process wall/CPU, peak RSS). An in-memory comparison of the
sign pool and IVF (k-means lists, nearest lists probed) on the same vectors follows.
Writes benchmarks/results/ann_index.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import numpy as np  # noqa: E402
from perf import dist  # noqa: E402
from scale import BENCH, DIM, StandInEmbedder, TurnPool, load, run_with_rss  # noqa: E402

QUERIES = 200  # recall@10 queries per source
TIMED = 60  # warm searches timed per mode
FRESH = 3  # fresh processes per mode
DEPTH = 50  # what a search asks the index for (service CANDIDATES)

SEARCH_SCRIPT = """
import json, re, sys, time
t0 = time.perf_counter()
def peak_mib():  # this program's own peak (VmHWM), not the forking parent's
    status = open("/proc/self/status").read()
    return int(re.search(r"VmHWM:\\s+(\\d+)", status).group(1)) / 1024
import numpy as np
from pathlib import Path
from mempalace_cli.storage import vector_index
from mempalace_cli.storage.catalog import Catalog
from mempalace_cli.storage.vector_index import VectorIndex
palace, mode, kind = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
if mode == "full":
    vector_index.ANN_MIN_ROWS = 10**12
queries = np.load(sys.argv[4])
index = VectorIndex(palace, Catalog(palace).conn)
if kind == "fresh":
    t1, c1 = time.perf_counter(), time.process_time()
    index.nearest(queries[int(sys.argv[6])], DEPTH)
    print(json.dumps({"process_s": time.perf_counter() - t0, "nearest_s": time.perf_counter() - t1,
                      "nearest_cpu_s": time.process_time() - c1,
                      "process_cpu_s": time.process_time(),
                      "peak_rss_mib": peak_mib()}))
    raise SystemExit
truth = np.load(sys.argv[5])
index.keep_in_memory()
index.nearest(queries[0], DEPTH)
wall, cpu, hits = [], [], 0
for i, q in enumerate(queries):
    t, c = time.perf_counter(), time.process_time()
    got = index.nearest(q, DEPTH)
    if i < TIMED:
        wall.append(time.perf_counter() - t); cpu.append(time.process_time() - c)
    top = {int(d[1:]) for d, _ in got[:10]}
    hits += len(top & set(truth[i].tolist()))
print(json.dumps({"wall": wall, "cpu": cpu, "recall": hits / (10 * len(queries)),
                  "rss_mib": peak_mib()}))
""".replace("DEPTH", str(DEPTH)).replace("TIMED", str(TIMED))


# -- vectors ------------------------------------------------------------------------------------
def clustered(n: int, seed: int, n_centers: int) -> Any:
    import numpy as np

    rng = np.random.default_rng(seed)
    base = np.random.default_rng(1000)
    offset = base.standard_normal(DIM).astype(np.float32)
    offset *= 0.4 / np.linalg.norm(offset)
    centers = base.standard_normal((n_centers, DIM)).astype(np.float32)
    centers /= np.linalg.norm(centers, axis=1, keepdims=True)
    out = np.empty((n, DIM), dtype=np.float32)
    for s in range(0, n, 100_000):
        m = min(100_000, n - s)
        x = offset + centers[rng.integers(0, n_centers, m)]
        x += rng.standard_normal((m, DIM)).astype(np.float32) / np.sqrt(DIM)
        out[s : s + m] = x / np.linalg.norm(x, axis=1, keepdims=True)
    return out


def vectors(source: str, size: int, work: Path) -> tuple[Any, Any]:
    """(drawer vectors, query vectors), cached in `work`."""
    import numpy as np

    cache, qcache = work / f"{source}-{size}.npy", work / f"{source}-{size}-q.npy"
    if cache.exists() and qcache.exists():
        return np.load(cache, mmap_mode="r"), np.load(qcache)
    if source == "clustered":
        x = clustered(size, size, max(100, size // 200))
        q = clustered(QUERIES, size + 1, max(100, size // 200))
    else:
        pool, emb = TurnPool(BENCH), StandInEmbedder()
        texts = pool.exchanges(size, seed=1)
        x = np.empty((size, DIM), dtype=np.float32)
        for s in range(0, size, 10_000):
            x[s : s + 10_000] = emb.embed(texts[s : s + 10_000])
            print(f"  stand-in vectors {s + 10_000:,}/{size:,}", file=sys.stderr, flush=True)
        del texts
        q = emb.embed(pool.exchanges(QUERIES, seed=99))
    np.save(cache, x)
    np.save(qcache, q)
    return np.load(cache, mmap_mode="r"), q


def exact_truth(x: Any, q: Any, k: int = 10) -> Any:
    import numpy as np

    qn = q / np.linalg.norm(q, axis=1, keepdims=True)
    best_s = np.full((len(q), 0), 0, dtype=np.float32)
    best_i = np.full((len(q), 0), 0, dtype=np.int64)
    for s in range(0, len(x), 100_000):
        block = np.asarray(x[s : s + 100_000])
        block = block / np.linalg.norm(block, axis=1, keepdims=True)
        sims = qn @ block.T
        top = np.argpartition(-sims, k, axis=1)[:, :k]
        best_s = np.concatenate([best_s, np.take_along_axis(sims, top, 1)], axis=1)
        best_i = np.concatenate([best_i, top + s], axis=1)
        keep = np.argsort(-best_s, axis=1)[:, :k]
        best_s, best_i = np.take_along_axis(best_s, keep, 1), np.take_along_axis(best_i, keep, 1)
    return best_i


def fill_catalogue(palace: Path, x: Any) -> float:
    """A real catalogue (storage.catalog.Catalog) holding ids, wing/room and vectors."""
    from mempalace_cli.storage.catalog import Catalog

    shutil.rmtree(palace, ignore_errors=True)
    catalog = Catalog(palace)
    t0 = time.perf_counter()
    catalog.conn.execute("PRAGMA synchronous = OFF")  # a benchmark fixture, not a palace
    for start in range(0, len(x), 20_000):
        with catalog.transaction() as conn:
            conn.executemany(
                "INSERT INTO drawers(id, wing, room, embedding) VALUES (?, ?, ?, ?)",
                [
                    (f"d{start + i}", f"w{(start + i) % 4}", f"r{(start + i) % 24}", v.tobytes())
                    for i, v in enumerate(np.asarray(x[start : start + 20_000]))
                ],
            )
    catalog.close()
    return time.perf_counter() - t0


# -- IVF and sign pool in memory (the design comparison) -----------------------------------------
def compare_first_stages(x: Any, q: Any, truth: Any, n_queries: int = 40) -> list[dict[str, Any]]:
    """Both first stages over the same int8 codes, in memory, with the index's own rescoring
    (int8 over the candidates, exact float32 cosine over the best 200). The sign pools: 1%,
    what the index uses (max(POOL_MIN, POOL_SHARE x n)) and 10% of the rows."""
    from mempalace_cli.storage.vector_index import POOL_MIN, POOL_SHARE

    n = len(x)
    x = np.asarray(x)
    scale = np.maximum(np.abs(x).max(axis=1), 1e-12) / 127.0
    codes = np.rint(x / scale[:, None]).astype(np.int8)
    q = q[:n_queries] / np.linalg.norm(q[:n_queries], axis=1, keepdims=True)
    out: list[dict[str, Any]] = []

    def finish(cand: Any, qv: Any) -> set[int]:
        s = np.einsum("ij,j->i", codes[cand], qv) * scale[cand]
        pool = min(len(cand), 200)
        best = cand[np.argpartition(-s, pool - 1)[:pool]]
        exact = x[best] @ qv
        return set(best[np.argsort(-exact)[:10]].tolist())

    def measure(label: str, fn: Any, **extra: Any) -> None:
        hits, cpu = 0, []
        for i, qv in enumerate(q):
            c = time.process_time()
            got = fn(qv)
            cpu.append(time.process_time() - c)
            hits += len(got & set(truth[i].tolist()))
        row = {"stage": label, **extra, "recall": hits / (10 * len(q)), "cpu": dist(cpu)}
        print(f"  {json.dumps(row)}", file=sys.stderr, flush=True)
        out.append(row)

    signs = np.packbits(x > 0, axis=1).view(np.uint64)

    def sign(qv: Any, pool: int) -> set[int]:
        qb = np.packbits(qv > 0).view(np.uint64)
        d = np.bitwise_count(signs[:, 0] ^ qb[0]).astype(np.uint16)
        for w in range(1, signs.shape[1]):
            d += np.bitwise_count(signs[:, w] ^ qb[w])
        return finish(np.argpartition(d, pool)[:pool], qv)

    for pool in sorted({int(0.01 * n), max(POOL_MIN, int(POOL_SHARE * n)), int(0.1 * n)}):
        measure("sign", lambda qv, p=pool: sign(qv, p), pool=pool)

    nlist = int(np.sqrt(n))
    rng = np.random.default_rng(1)
    t0 = time.perf_counter()
    sample = x[rng.choice(n, min(n, 40 * nlist), replace=False)]
    cent = sample[rng.choice(len(sample), nlist, replace=False)].copy()
    for _ in range(8):
        a = np.argmax(sample @ cent.T, axis=1)
        for j in range(nlist):
            m = sample[a == j]
            if len(m):
                cent[j] = m.mean(axis=0)
        cent /= np.maximum(np.linalg.norm(cent, axis=1, keepdims=True), 1e-12)
    assign = np.concatenate(
        [np.argmax(x[s : s + 50_000] @ cent.T, axis=1) for s in range(0, n, 50_000)]
    )
    order = np.argsort(assign, kind="stable")
    starts = np.searchsorted(assign[order], np.arange(nlist + 1))
    train_s = time.perf_counter() - t0

    def ivf(qv: Any, probe: int) -> set[int]:
        lists = np.argpartition(-(cent @ qv), probe)[:probe]
        return finish(np.concatenate([order[starts[j] : starts[j + 1]] for j in lists]), qv)

    for share in (0.05, 0.1, 0.2):
        probe = max(1, int(share * nlist))
        measure(
            "ivf",
            lambda qv, p=probe: ivf(qv, p),
            lists=nlist,
            probe=probe,
            train_assign_s=round(train_s, 1),
        )
    return out


# -- the index, measured ------------------------------------------------------------------------
def measure_index(palace: Path, qfile: Path, tfile: Path) -> dict[str, Any]:
    env = dict(os.environ)
    res: dict[str, Any] = {}
    for mode in ("full", "sign"):
        warm = run_with_rss(
            [
                sys.executable,
                "-c",
                SEARCH_SCRIPT,
                str(palace),
                mode,
                "warm",
                str(qfile),
                str(tfile),
            ],
            env,
        )
        w = json.loads(warm["stdout"])
        fresh = [
            json.loads(
                run_with_rss(
                    [sys.executable, "-c", SEARCH_SCRIPT, str(palace), mode, "fresh", str(qfile)]
                    + [str(tfile), str(i + 1)],
                    env,
                )["stdout"]
            )
            for i in range(FRESH)
        ]
        res[mode] = {
            "warm_wall": dist(w["wall"]),
            "warm_cpu": dist(w["cpu"]),
            "warm_process_rss_mib": round(w["rss_mib"], 1),
            "recall_at_10": round(w["recall"], 4),
            "fresh_nearest_wall": dist([f["nearest_s"] for f in fresh]),
            "fresh_nearest_cpu": dist([f["nearest_cpu_s"] for f in fresh]),
            "fresh_process_wall": dist([f["process_s"] for f in fresh]),
            "fresh_process_cpu": dist([f["process_cpu_s"] for f in fresh]),
            "fresh_peak_rss_mib": round(max(f["peak_rss_mib"] for f in fresh), 1),
        }
        print(f"  {mode}: {json.dumps(res[mode])}", file=sys.stderr, flush=True)
    return res


def run_one(source: str, size: int, work: Path, compare: bool) -> dict[str, Any]:
    t0 = time.perf_counter()
    x, q = vectors(source, size, work)
    vec_s = time.perf_counter() - t0
    truth = exact_truth(x, q)
    qfile, tfile = work / f"{source}-{size}-queries.npy", work / f"{source}-{size}-truth.npy"
    np.save(qfile, q)
    np.save(tfile, truth)
    palace = work / f"palace-{source}-{size}"
    fill_s = fill_catalogue(palace, x)
    print(f"  catalogue filled in {fill_s:.0f} s", file=sys.stderr, flush=True)
    first = run_with_rss(
        [sys.executable, "-c", SEARCH_SCRIPT, str(palace), "sign", "fresh", str(qfile), "-", "0"],
        dict(os.environ),
    )
    index_bytes = sum(f.stat().st_size for f in (palace / "vector_index").iterdir())
    row: dict[str, Any] = {
        "source": source,
        "drawers": size,
        "vectors_s": round(vec_s, 1),
        "fill_catalogue_s": round(fill_s, 1),
        "first_search_builds_index_s": first["seconds"],
        "first_search_cpu_s": first["cpu_s"],
        "first_search_peak_rss_mib": round(json.loads(first["stdout"])["peak_rss_mib"], 1),
        "index_bytes_per_drawer": round(index_bytes / size, 1),
        **measure_index(palace, qfile, tfile),
    }
    if compare:
        row["first_stages_in_memory"] = compare_first_stages(x, q, truth)
    row["load"] = load()
    shutil.rmtree(palace, ignore_errors=True)
    return row


# -- report -------------------------------------------------------------------------------------
def markdown(results: dict[str, Any]) -> str:
    out = [
        f"Machine: {results['machine']}. Date: {results['date']}. "
        f"Wall time: {results['wall_s'] / 60:.1f} min. Vector side only (no query embedding, "
        "no keyword side). Thresholds: "
        + ", ".join(f"{k} = {v}" for k, v in results["thresholds"].items())
        + ".",
        "",
        "| vectors | drawers | path | warm ms wall p50 / p95 | warm ms CPU p50 / p95 | "
        "recall@10 | fresh process wall / CPU s p50 | fresh nearest CPU s p50 | "
        "fresh peak RSS MiB | warm process RSS MiB |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results["runs"]:
        for mode, label in (("full", "full int8 scan (before)"), ("sign", "sign-code pool")):
            m = r[mode]
            out.append(
                f"| {r['source']} | {r['drawers']:,} | {label} | "
                f"{m['warm_wall']['p50'] * 1000:.1f} / {m['warm_wall']['p95'] * 1000:.1f} | "
                f"{m['warm_cpu']['p50'] * 1000:.1f} / {m['warm_cpu']['p95'] * 1000:.1f} | "
                f"{m['recall_at_10']:.4f} | {m['fresh_process_wall']['p50']:.2f} / "
                f"{m['fresh_process_cpu']['p50']:.2f} | {m['fresh_nearest_cpu']['p50']:.3f} | "
                f"{m['fresh_peak_rss_mib']:.0f} | {m['warm_process_rss_mib']:.0f} |"
            )
    out += [
        "",
        "| vectors | drawers | fill catalogue s | first search builds index: wall / CPU s, peak "
        "RSS MiB | index bytes/drawer | load |",
        "|---|---|---|---|---|---|",
    ]
    for r in results["runs"]:
        out.append(
            f"| {r['source']} | {r['drawers']:,} | {r['fill_catalogue_s']} | "
            f"{r['first_search_builds_index_s']:.1f} / {r['first_search_cpu_s']:.1f}, "
            f"{r['first_search_peak_rss_mib']:.0f} | {r['index_bytes_per_drawer']} | {r['load']} |"
        )
    cmp_rows = [(r, c) for r in results["runs"] for c in r.get("first_stages_in_memory", [])]
    if cmp_rows:
        out += [
            "",
            "First stages compared in memory on the same vectors (numpy, 40 queries; int8 over "
            "the candidates, exact over the best 200, as the index does):",
            "",
            "| vectors | drawers | first stage | candidates | recall@10 | CPU ms p50 / p95 |",
            "|---|---|---|---|---|---|",
        ]
        for r, c in cmp_rows:
            what = (
                f"pool {c['pool']:,}"
                if c["stage"] == "sign"
                else f"{c['probe']} of {c['lists']} lists (train+assign {c['train_assign_s']} s)"
            )
            out.append(
                f"| {r['source']} | {r['drawers']:,} | {c['stage']} | {what} | "
                f"{c['recall']:.4f} | {c['cpu']['p50'] * 1000:.1f} / {c['cpu']['p95'] * 1000:.1f} |"
            )
    return "\n".join(out) + "\n"


def save(results: dict[str, Any], out: Path, started: float) -> None:
    results["wall_s"] = round(time.perf_counter() - started, 1)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(results), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    from mempalace_cli.storage import vector_index

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", default="100000,1000000")
    ap.add_argument("--sources", default="clustered,standin")
    ap.add_argument("--no-compare", action="store_true", help="skip the in-memory IVF comparison")
    ap.add_argument("--work", type=Path, help="keep vectors here between runs (default: temp)")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "ann_index.json")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    work = args.work or Path(tempfile.mkdtemp(prefix="mp-ann-"))
    work.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, numpy {np.__version__}, {platform.system()}",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "thresholds": {
            k: getattr(vector_index, k) for k in ("ANN_MIN_ROWS", "POOL_SHARE", "POOL_MIN")
        },
        "runs": [],
    }
    if args.out.exists():  # keep the rows of other sizes/sources from an earlier run
        old = json.loads(args.out.read_text(encoding="utf-8"))
        results["runs"] = old.get("runs", [])
    try:
        for size in [int(s) for s in args.sizes.split(",") if s]:
            for source in [s for s in args.sources.split(",") if s]:
                print(f"{source} at {size:,} drawers ...", file=sys.stderr, flush=True)
                row = run_one(source, size, work, not args.no_compare)
                results["runs"] = [
                    r for r in results["runs"] if (r["source"], r["drawers"]) != (source, size)
                ] + [row]
                results["runs"].sort(key=lambda r: (r["drawers"], r["source"]))
                save(results, args.out, started)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    save(results, args.out, started)
    print(markdown(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
