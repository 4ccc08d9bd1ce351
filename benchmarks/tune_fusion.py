"""Compare fusion methods offline on the candidate lists `retrieval.py --dump` wrote.

The dump holds, per dev question, both sides' raw candidates (50 deep: vector cosine
similarities and BM25 scores) and each document's length, so every fusion variant here is
scored on exactly the same candidates without embedding anything again.

    python benchmarks/retrieval.py --dump /tmp/candidates.json
    python benchmarks/tune_fusion.py /tmp/candidates.json

Tune on the dev splits only (they are all the dump holds).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

Fusion = Callable[[dict[str, Any]], list[str]]


def rrf(
    k: float,
    wv: float = 1.0,
    wl: float = 1.0,
    depth: int = 50,
    seen_chars: float = 0.0,
    floor: float = 0.0,
) -> Fusion:
    """Weighted RRF. With `seen_chars`, a document's vector weight is scaled by the share of it
    the model read (MiniLM stops at 256 tokens, about `seen_chars` characters) and the rest
    of the weight moves to the lexical side, which reads all of it."""

    def run(q: dict[str, Any]) -> list[str]:
        score: dict[str, float] = {}
        seen = {
            d: max(floor, min(1.0, seen_chars / max(n, 1))) if seen_chars else 1.0
            for d, n in q["lengths"].items()
        }
        for rank, (doc, _) in enumerate(q["vector"][:depth]):
            score[doc] = score.get(doc, 0.0) + wv * seen[doc] / (k + rank + 1)
        for rank, (doc, _) in enumerate(q["lexical"][:depth]):
            w = wl + wv * (1.0 - seen[doc])
            score[doc] = score.get(doc, 0.0) + w / (k + rank + 1)
        return sorted(score, key=lambda d: (-score[d], d))

    return run


def blend(alpha: float, depth: int = 50) -> Fusion:
    """alpha * cosine (min-max over the candidates) + (1 - alpha) * BM25 / max BM25."""

    def run(q: dict[str, Any]) -> list[str]:
        vec = dict(q["vector"][:depth])
        lex = dict(q["lexical"][:depth])
        lo = min(vec.values(), default=0.0)
        hi = max(vec.values(), default=1.0)
        top_lex = max(lex.values(), default=1.0) or 1.0
        floor = lo  # a document missing from a side gets that side's worst score
        score = {}
        for doc in set(vec) | set(lex):
            v = (vec.get(doc, floor) - lo) / ((hi - lo) or 1.0)
            lx = lex.get(doc, 0.0) / top_lex
            score[doc] = alpha * v + (1 - alpha) * lx
        return sorted(score, key=lambda d: (-score[d], d))

    return run


def ndcg(ranked: list[str], gold: set[str], k: int) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, d in enumerate(ranked[:k]) if d in gold)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(gold), k)))
    return dcg / ideal if ideal else 0.0


def metrics(dump: list[dict[str, Any]], fusion: Fusion) -> dict[str, float]:
    lme = [q for q in dump if q["bench"] == "lme"]
    loc = [q for q in dump if q["bench"] == "locomo"]
    out = {}
    if lme:
        ranked = [(set(q["gold"]), fusion(q)) for q in lme]
        for k in (1, 5, 10):
            out[f"lme_R@{k}"] = sum(bool(g & set(r[:k])) for g, r in ranked) / len(lme)
        out["lme_all@5"] = sum(bool(g) and g <= set(r[:5]) for g, r in ranked) / len(lme)
        out["lme_ndcg@10"] = sum(ndcg(r, g, 10) for g, r in ranked) / len(lme)
    if loc:
        for k in (5, 10):
            total = 0.0
            for q in loc:
                gold = set(q["gold"])
                total += len(gold & set(fusion(q)[:k])) / len(gold) if gold else 1.0
            out[f"locomo_R@{k}"] = total / len(loc)
    return {m: round(v, 4) for m, v in out.items()}


def variants() -> dict[str, Fusion]:
    out: dict[str, Fusion] = {
        "vector only": rrf(60, 1, 0),
        "lexical only": rrf(60, 0, 1),
    }
    for k, (wv, wl) in itertools.product(
        (1, 5, 10, 20, 30, 60, 100), ((1, 1), (1, 1.5), (1.5, 1), (1, 2), (2, 1))
    ):
        out[f"rrf k={k} wv={wv} wl={wl}"] = rrf(k, wv, wl)
    for k, seen in itertools.product((10, 30, 60), (800, 1000, 1200, 1600)):
        out[f"rrf k={k} seen={seen}"] = rrf(k, seen_chars=seen)
    for k, wl, floor in itertools.product((30, 60), (1.0, 1.5, 2.0), (0.25, 0.5)):
        out[f"rrf k={k} wl={wl} seen=1200 floor={floor}"] = rrf(
            k, wl=wl, seen_chars=1200, floor=floor
        )
    for k in (40, 60, 80):
        for wl in (1.5, 1.75, 2.0, 2.5, 3.0):
            out[f"rrf k={k} wv=1 wl={wl}"] = rrf(k, 1, wl)
    for depth in (10, 20, 100):
        out[f"rrf k=60 depth={depth}"] = rrf(60, depth=depth)
    for alpha in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8):
        out[f"blend alpha={alpha}"] = blend(alpha)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dump", type=Path, nargs="+")
    ap.add_argument("--out", type=Path, help="write the table as JSON too")
    args = ap.parse_args(argv)
    # Later files win for the same question, so a re-run of one benchmark can be layered on.
    by_id = {
        (q["bench"], q["id"]): q
        for path in args.dump
        for q in json.loads(path.read_text(encoding="utf-8"))
    }
    dump = list(by_id.values())
    rows = {name: metrics(dump, f) for name, f in variants().items()}
    cols = list(next(iter(rows.values())))
    print("| fusion | " + " | ".join(cols) + " |")
    print("|---|" + "---|" * len(cols))
    for name, m in rows.items():
        print(f"| {name} | " + " | ".join(f"{m[c]:.3f}" for c in cols) + " |")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
