"""Embedding models compared in one run: cross-lingual and Chinese quality, English quality,
speed and memory. This is how the default model for new palaces was chosen.

For each model (all-MiniLM-L6-v2 int8, use-multilingual-v3, multilingual-e5-small-q4):
- bilingual: the bilingual dev set (tests/data/bilingual_dev.json: English and Chinese notes,
  queries in four directions); every note embedded with `embed`, every query with
  `embed_query`, ranked by cosine over all notes; recall@1/@3 per direction. Vector side only.
- LongMemEval-S dev (50 questions, session level, the protocol of benchmarks/retrieval.py) and
  LoCoMo dev (5 conversations, session level): exact cosine ranking of the question against
  that question's documents (what `search --mode vector` ranks). Vector side only.
- speed and memory, each model in a fresh subprocess: load time, time to embed N (default 300) prose
  chunks (~800 characters, cut from LongMemEval user turns), median single-query latency on
  an idle machine and while two other processes keep both cores busy, peak RSS.

Usage:
    python benchmarks/embedders.py                        # everything
    python benchmarks/embedders.py --skip-english --chunks 60   # bilingual + a quicker speed test
    python benchmarks/embedders.py --models use-multilingual-v3 --lme-limit 10
Writes benchmarks/results/embedders.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from retrieval import (  # noqa: E402
    DEFAULT_DATA,
    lme_documents,
    load_lme,
    load_locomo,
    locomo_gold_sessions,
    locomo_sessions,
    mean,
    ndcg,
    recall_any,
    recall_frac,
    render_turn,
)

from mempalace_cli.embedders import E5_NAME, MODELS, USE_NAME  # noqa: E402
from mempalace_cli.embedders.base import get_embedder  # noqa: E402

ALL = ["all-MiniLM-L6-v2", USE_NAME, E5_NAME]
BILINGUAL = REPO / "tests" / "data" / "bilingual_dev.json"
CHUNKS = 300
CHUNK_CHARS = 800
QUERIES = ["what did we decide about the database?", "谁负责数据平台团队？"] * 10


# -- quality ----------------------------------------------------------------------------------
def rank(emb: Any, query: str, doc_matrix: Any, doc_ids: list[str]) -> list[str]:
    import numpy as np

    q = emb.embed_query(query)
    order = np.argsort(-(doc_matrix @ q), kind="stable")
    return [doc_ids[i] for i in order]


def bilingual(emb: Any, data: dict[str, Any]) -> dict[str, Any]:
    notes = data["notes"]
    ids = [n["id"] for n in notes]
    matrix = emb.embed([n["text"] for n in notes])
    rows: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for q in data["queries"]:
        ranked = rank(emb, q["query"], matrix, ids)
        hit = (recall_any(ranked, {q["target"]}, 1), recall_any(ranked, {q["target"]}, 3))
        rows[q["direction"]].append(hit)
        rows["all"].append(hit)
    return {
        d: {"recall@1": mean(h[0] for h in hs), "recall@3": mean(h[1] for h in hs), "n": len(hs)}
        for d, hs in sorted(rows.items())
    }


def lme(emb: Any, questions: list[dict[str, Any]]) -> dict[str, Any]:
    r1, r5, nd = [], [], []
    for q in questions:
        docs = lme_documents(q)
        ids = [d for d, _ in docs]
        ranked = rank(emb, q["question"], emb.embed([t for _, t in docs]), ids)
        gold = set(q["answer_session_ids"])
        r1.append(recall_any(ranked, gold, 1))
        r5.append(recall_any(ranked, gold, 5))
        nd.append(ndcg(ranked, gold, 10))
    return {"recall_any@1": mean(r1), "recall_any@5": mean(r5), "ndcg@10": mean(nd), "n": len(r1)}


def locomo(emb: Any, samples: list[dict[str, Any]]) -> dict[str, Any]:
    r5, r10 = [], []
    for sample in samples:
        sessions = locomo_sessions(sample["conversation"])
        docs = [(f"session_{n}", "\n".join(render_turn(t) for t in turns)) for n, turns in sessions]
        ids = [d for d, _ in docs]
        matrix = emb.embed([t for _, t in docs])
        for qa in sample["qa"]:
            gold = locomo_gold_sessions([str(e) for e in qa.get("evidence") or []])
            ranked = rank(emb, qa["question"], matrix, ids)
            r5.append(recall_frac(ranked, gold, 5))
            r10.append(recall_frac(ranked, gold, 10))
    return {"recall@5": mean(r5), "recall@10": mean(r10), "n": len(r5)}


# -- speed and memory (one fresh process per model) -------------------------------------------
def prose_chunks(data: Path, n: int = CHUNKS) -> list[str]:
    text = "\n".join(t for q in load_lme(data)[:10] for _, t in lme_documents(q))
    return [text[i : i + CHUNK_CHARS] for i in range(0, n * CHUNK_CHARS, CHUNK_CHARS)]


def _burn(stop_at: float) -> None:
    x = 0
    while time.time() < stop_at:
        x += 1


def child(name: str, data: Path, n: int = CHUNKS) -> dict[str, Any]:
    chunks = prose_chunks(data, n)
    t0 = time.perf_counter()
    emb = get_embedder(name)
    emb.ensure_loaded()
    load = time.perf_counter() - t0
    t0 = time.perf_counter()
    emb.embed(chunks)
    embed_s = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    def query_ms() -> float:
        times = []
        for q in QUERIES:
            t = time.perf_counter()
            emb.embed_query(q)
            times.append((time.perf_counter() - t) * 1000)
        return round(statistics.median(times), 1)

    idle = query_ms()
    # Two busy processes on a two-core machine: what a query costs while mining runs.
    burners = [multiprocessing.Process(target=_burn, args=(time.time() + 60,)) for _ in range(2)]
    for p in burners:
        p.start()
    try:
        busy = query_ms()
    finally:
        for p in burners:
            p.terminate()
            p.join()
    return {
        "load_seconds": round(load, 2),
        "chunks": n,
        "embed_chunks_seconds": round(embed_s, 2),
        "query_ms_idle": idle,
        "query_ms_busy": busy,
        "peak_rss_mib": round(rss),
    }


def speed(name: str, data: Path, n: int = CHUNKS) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", name, "--data", str(data), "--chunks", str(n)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if out.returncode != 0:
        return {"error": out.stderr[-500:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- report -----------------------------------------------------------------------------------
def markdown(res: dict[str, Any]) -> str:
    models = list(res["models"])
    lines = [
        "# Embedding models, one run",
        "",
        f"`{res['command']}` on {res['machine']}, {res['date']}. Vector side only "
        "(no lexical fusion); ratios against all-MiniLM-L6-v2 from the same run.",
        "",
        "| | " + " | ".join(models) + " |",
        "|---|" + "---|" * len(models),
    ]

    def row(label: str, fn: Any) -> None:
        cells = []
        for m in models:
            try:
                cells.append(fn(res["models"][m]))
            except (KeyError, TypeError):
                cells.append("–")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    for d in ("all", "en->en", "zh->zh", "zh->en", "en->zh"):
        row(
            f"bilingual {d} R@1 / R@3",
            lambda r, d=d: (
                f"{r['bilingual'][d]['recall@1']:.2f} / {r['bilingual'][d]['recall@3']:.2f}"
            ),
        )
    row(
        "LongMemEval dev R@1 / R@5 / NDCG@10",
        lambda r: (
            f"{r['lme']['recall_any@1']:.2f} / {r['lme']['recall_any@5']:.2f} / "
            f"{r['lme']['ndcg@10']:.3f}"
        ),
    )
    row(
        "LoCoMo dev session R@5 / R@10",
        lambda r: f"{r['locomo']['recall@5']:.3f} / {r['locomo']['recall@10']:.3f}",
    )
    base = res["models"].get("all-MiniLM-L6-v2", {}).get("speed", {})
    row(
        "embed N prose chunks of 800 chars (s, ratio)",
        lambda r: (
            f"N={r['speed']['chunks']}: {r['speed']['embed_chunks_seconds']} "
            f"({r['speed']['embed_chunks_seconds'] / base['embed_chunks_seconds']:.2f}x)"
        ),
    )
    row("load (s)", lambda r: f"{r['speed']['load_seconds']}")
    row(
        "one query (ms): machine as it was / with two more busy processes",
        lambda r: f"{r['speed']['query_ms_idle']} / {r['speed']['query_ms_busy']}",
    )
    row(
        "peak RSS after the chunks (MiB; ~109 of it is the benchmark's data)",
        lambda r: f"{r['speed']['peak_rss_mib']}",
    )
    row("dimension", lambda r: str(r["dimension"]))
    row("languages", lambda r: r["languages"])
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--models", nargs="*", default=ALL)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--bilingual", type=Path, default=BILINGUAL)
    ap.add_argument("--lme-limit", type=int, default=None)
    ap.add_argument("--skip-english", action="store_true")
    ap.add_argument("--skip-speed", action="store_true", help="quality only")
    ap.add_argument("--chunks", type=int, default=CHUNKS, help="prose chunks for the speed test")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "embedders")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--markdown-only", action="store_true", help="rewrite OUT.md from OUT.json")
    args = ap.parse_args()
    if args.markdown_only:
        res = json.loads(args.out.with_suffix(".json").read_text())
        args.out.with_suffix(".md").write_text(markdown(res))
        return
    if args.child:
        print(json.dumps(child(args.child, args.data, args.chunks)))
        return
    bi = json.loads(args.bilingual.read_text(encoding="utf-8"))
    questions = load_lme(args.data)[: args.lme_limit] if not args.skip_english else []
    samples = load_locomo(args.data) if not args.skip_english else []
    res: dict[str, Any] = {
        "command": "python benchmarks/embedders.py " + " ".join(sys.argv[1:]),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "bilingual_set": f"{args.bilingual.name}: {len(bi['notes'])} notes, "
        f"{len(bi['queries'])} queries",
        "models": {},
    }
    for name in args.models:
        info = MODELS[name]
        r: dict[str, Any] = {"dimension": info.dimension, "languages": info.languages}
        if not args.skip_speed:
            r["speed"] = speed(name, args.data, args.chunks)
            print(name, "speed", r["speed"], flush=True)
        emb = get_embedder(name)
        r["bilingual"] = bilingual(emb, bi)
        print(name, "bilingual", r["bilingual"]["all"], flush=True)
        if not args.skip_english:
            t0 = time.perf_counter()
            r["lme"] = lme(emb, questions)
            r["locomo"] = locomo(emb, samples)
            r["english_seconds"] = round(time.perf_counter() - t0, 1)
            print(name, "lme", r["lme"], "locomo", r["locomo"], flush=True)
        res["models"][name] = r
        write(res, args.out)  # after each model: a long run leaves what it measured so far
    print(markdown(res))


def write(res: dict[str, Any], out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(res, indent=2, ensure_ascii=False) + "\n")
    out.with_suffix(".md").write_text(markdown(res))


if __name__ == "__main__":
    main()
