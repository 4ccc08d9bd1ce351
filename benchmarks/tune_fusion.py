"""Choose the hybrid fusion by K-fold cross-validation on the dev candidate dumps.

The dumps hold, per dev question, both sides' raw candidates (50 deep: cosine similarities,
BM25 scores), the query's BM25 weight and the scripts (Latin / CJK) of the query and of each
candidate, so every fusion here is scored on exactly the same candidates without embedding
anything again:

    python benchmarks/retrieval.py --model use --dump-only --dump /tmp/dump_use.json
    python benchmarks/bilingual.py --models minilm use --dump /tmp/bilingual.json
    python benchmarks/tune_fusion.py /tmp/dump_use.json /tmp/bilingual.json --model use \
        --out benchmarks/results/fusion_cv_use.json

Folds: LoCoMo by conversation (5 folds = its 5 conversations), LongMemEval and the bilingual
set by question (seeded shuffle into K folds). For each fold, the fusion with the best
objective on the other folds is chosen and scored on the held-out fold; the report gives
each fold's held-out numbers, their mean and spread, the pooled held-out numbers per question
type next to each single side, and the fusion chosen on all the dev data (the model's
default in mempalace_cli/search/fusion.py, `BY_MODEL`; ties go to the fusion nearest the current
one). Objective: the mean of LongMemEval (R@5 + NDCG@10) / 2, LoCoMo
session R@10 and the bilingual set's R@3 averaged over its four directions.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import random
import statistics
import sys
from collections import Counter, defaultdict
from dataclasses import asdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_models import PRODUCT_NAMES  # noqa: E402

from mempalace_cli.search.fusion import FusionParams, for_model, fuse  # noqa: E402

VECTOR_ONLY = FusionParams(method="rrf", vector_weight=1.0, lexical_weight=0.0)
LEXICAL_ONLY = FusionParams(method="rrf", vector_weight=0.0, lexical_weight=1.0)
OLD_DEFAULT = FusionParams(method="rrf", vector_weight=1.0, lexical_weight=2.0, rrf_k=60)


# Weights of the dictionary bridge's side (crosslingual.py); 0 = no bridge.
TRANSLATED = (0.0, 4.0, 8.0, 12.0, 16.0, 24.0)


def grid() -> dict[str, FusionParams]:
    """Candidate fusions. When the query and every candidate share one script, a fusion
    either keeps weighted RRF (`rrfwl` = the keyword weight) or uses the confidence fusion
    too (`conf-all`); the cross-script rules (`wl`, `xl`, `xv`, `cap`) apply otherwise."""
    out = {"rrf k=60 wl=2 (before)": OLD_DEFAULT}
    for wl, tw in itertools.product((1.0, 1.5, 2.0), (0.0, 1.0, 2.0, 3.0)):
        out[f"rrf k=60 wl={wl} tw={tw}"] = OLD_DEFAULT.with_(
            lexical_weight=wl, translated_weight=tw
        )
    for wl, xl, xv, cap, rw, tw in itertools.product(
        (1.0, 1.5, 2.0, 3.0, 4.0, 6.0),
        (0.0, 0.25, 0.5, 1.0),
        (0.0, 0.5, 1.0),
        (3.0, 4.0),
        (1.0, 1.5, 2.0),
        TRANSLATED,
    ):
        p = FusionParams(
            lexical_weight=wl,
            cross_script_lexical=xl,
            cross_script_vector=xv,
            z_cap=cap,
            rrf_lexical_weight=rw,
            translated_weight=tw,
        )
        out[f"conf wl={wl} xl={xl} xv={xv} cap={cap} rrfwl={rw} tw={tw}"] = p
    for wl, xl, xv, cap, tw in itertools.product(
        (1.0, 1.5, 2.0, 3.0, 4.0), (0.0, 0.25, 0.5), (0.0, 0.5), (2.0, 3.0, 4.0), TRANSLATED
    ):
        p = FusionParams(
            lexical_weight=wl,
            cross_script_lexical=xl,
            cross_script_vector=xv,
            z_cap=cap,
            one_script_rrf=False,
            translated_weight=tw,
        )
        out[f"conf-all wl={wl} xl={xl} xv={xv} cap={cap} tw={tw}"] = p
    return out


# -- scoring one ranking ----------------------------------------------------------------------
def ndcg(ranked: list[str], gold: set[str], k: int) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, d in enumerate(ranked[:k]) if d in gold)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(gold), k)))
    return dcg / ideal if ideal else 0.0


def score(q: dict[str, Any], params: FusionParams) -> dict[str, float]:
    # A single side is ranked from its own candidates only (a zero weight would still let the
    # other side's candidates in, ordered by the tie-break).
    ranked = fuse(
        [] if params.vector_weight == 0 else [tuple(x) for x in q["vector"]],
        [] if params.lexical_weight == 0 else [tuple(x) for x in q["lexical"]],
        q.get("query_script", "latin"),
        # the dumps list non-Latin candidates only; the service passes every candidate's script
        {
            d: q.get("scripts", {}).get(d, "latin")
            for d in (*(d for d, _ in (*q["vector"], *q["lexical"])), *q.get("translated", {}))
        },
        params,
        q.get("query_weight", 0.0),
        {} if params.vector_weight == 0 else q.get("translated", {}),
    )
    gold = set(q["gold"])
    if q["bench"] == "lme":
        return {"R@5": float(bool(gold & set(ranked[:5]))), "NDCG@10": ndcg(ranked, gold, 10)}
    if q["bench"] == "locomo":
        if not gold:
            return {"R@10": 1.0, "R@5": 1.0}
        return {
            "R@10": len(gold & set(ranked[:10])) / len(gold),
            "R@5": len(gold & set(ranked[:5])) / len(gold),
        }
    return {"R@1": float(bool(gold & set(ranked[:1]))), "R@3": float(bool(gold & set(ranked[:3])))}


def dataset(q: dict[str, Any]) -> str:
    return "bilingual" if q["bench"].startswith("bilingual") else q["bench"]


def summary(qs: list[dict[str, Any]], scores: list[dict[str, float]]) -> dict[str, float]:
    """Headline numbers of one fusion over a set of questions."""
    by: dict[str, list[dict[str, float]]] = defaultdict(list)
    bil: dict[str, list[float]] = defaultdict(list)
    for q, s in zip(qs, scores, strict=True):
        by[dataset(q)].append(s)
        if dataset(q) == "bilingual":
            bil[q["type"]].append(s["R@3"])
    out: dict[str, float] = {}
    if by["lme"]:
        out["lme_R@5"] = statistics.fmean(s["R@5"] for s in by["lme"])
        out["lme_NDCG@10"] = statistics.fmean(s["NDCG@10"] for s in by["lme"])
    if by["locomo"]:
        out["locomo_R@10"] = statistics.fmean(s["R@10"] for s in by["locomo"])
    for direction, xs in sorted(bil.items()):
        out[f"bil_{direction}_R@3"] = statistics.fmean(xs)
    if bil:
        out["bil_R@3_macro"] = statistics.fmean(statistics.fmean(xs) for xs in bil.values())
    return out


def objective(s: dict[str, float]) -> float:
    parts = []
    if "lme_R@5" in s:
        parts.append((s["lme_R@5"] + s["lme_NDCG@10"]) / 2)
    if "locomo_R@10" in s:
        parts.append(s["locomo_R@10"])
    if "bil_R@3_macro" in s:
        parts.append(s["bil_R@3_macro"])
    return statistics.fmean(parts) if parts else 0.0


# -- folds ------------------------------------------------------------------------------------
def folds(qs: list[dict[str, Any]], k: int, seed: int) -> list[int]:
    """A fold number per question: LoCoMo by conversation, the rest shuffled into k folds."""
    rng = random.Random(seed)
    fold = [0] * len(qs)
    by: dict[str, list[int]] = defaultdict(list)
    for i, q in enumerate(qs):
        by[q["bench"]].append(i)
    for bench, idx in by.items():
        if bench == "locomo":
            convs = sorted({qs[i]["id"].split("#")[0] for i in idx})
            for i in idx:
                fold[i] = convs.index(qs[i]["id"].split("#")[0]) % k
        else:
            order = idx[:]
            rng.shuffle(order)
            for n, i in enumerate(order):
                fold[i] = n % k
    return fold


def changes(a: FusionParams, b: FusionParams) -> int:
    """How many settings differ: among fusions that score the same, the one nearest the
    current default is kept (no change without evidence)."""
    return sum(x != y for x, y in zip(asdict(a).values(), asdict(b).values(), strict=True))


def cross_validate(
    qs: list[dict[str, Any]],
    table: dict[str, list[dict[str, float]]],
    k: int,
    seed: int,
    closeness: dict[str, int],
) -> dict[str, Any]:
    fold = folds(qs, k, seed)
    per_fold = []
    held_out: list[dict[str, float] | None] = [None] * len(qs)
    for f in range(k):
        train = [i for i in range(len(qs)) if fold[i] != f]
        test = [i for i in range(len(qs)) if fold[i] == f]
        best = max(
            table,
            key=lambda name: (
                round(
                    objective(summary([qs[i] for i in train], [table[name][i] for i in train])),
                    9,
                ),
                -closeness[name],
            ),
        )
        for i in test:
            held_out[i] = table[best][i]
        per_fold.append(
            {"fold": f, "chosen": best}
            | summary([qs[i] for i in test], [table[best][i] for i in test])
        )
    metrics = [m for m in per_fold[0] if m not in ("fold", "chosen")]
    spread = {
        m: {
            "mean": round(statistics.fmean(p[m] for p in per_fold if m in p), 4),
            "sd": round(statistics.pstdev([p[m] for p in per_fold if m in p]), 4),
            "min": round(min(p[m] for p in per_fold if m in p), 4),
            "max": round(max(p[m] for p in per_fold if m in p), 4),
        }
        for m in metrics
    }
    pooled = summary(qs, [h for h in held_out if h is not None])
    return {"folds": per_fold, "spread": spread, "pooled": pooled, "held_out": held_out}


def by_type(
    qs: list[dict[str, Any]], scores: list[dict[str, float]], bench: str, metric: str
) -> dict[str, float]:
    groups: dict[str, list[float]] = defaultdict(list)
    for q, s in zip(qs, scores, strict=True):
        if dataset(q) == bench:
            groups[str(q["type"])].append(s[metric])
    return {t: round(statistics.fmean(xs), 4) for t, xs in sorted(groups.items())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dump", type=Path, nargs="+")
    ap.add_argument("--model", default="use", help="which bilingual-<model> dump to use")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--out", type=Path, help="write the report as JSON too")
    args = ap.parse_args(argv)
    qs = []
    for path in args.dump:
        for q in json.loads(path.read_text(encoding="utf-8")):
            if q["bench"].startswith("bilingual") and q["bench"] != f"bilingual-{args.model}":
                continue
            qs.append(q)
    current = for_model(PRODUCT_NAMES.get(args.model, args.model))
    configs = grid() | {"current default": current}
    closeness = {name: changes(p, current) for name, p in configs.items()}
    table = {name: [score(q, p) for q in qs] for name, p in configs.items()}
    singles = {
        "vector only": [score(q, VECTOR_ONLY) for q in qs],
        "lexical only": [score(q, LEXICAL_ONLY) for q in qs],
    }
    cv = cross_validate(qs, table, args.folds, args.seed, closeness)
    everything = {name: summary(qs, rows) for name, rows in table.items()}
    chosen = max(everything, key=lambda n: (round(objective(everything[n]), 9), -closeness[n]))

    report: dict[str, Any] = {
        "command": "python benchmarks/tune_fusion.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "questions": {
            b: sum(1 for q in qs if dataset(q) == b) for b in ("lme", "locomo", "bilingual")
        },
        "cross_validation": {k: v for k, v in cv.items() if k != "held_out"},
        "current_default": {"params": asdict(current)}
        | {k: round(v, 4) for k, v in everything["current default"].items()},
        "chosen_on_all_dev": {"name": chosen, "params": asdict(configs[chosen])}
        | {k: round(v, 4) for k, v in everything[chosen].items()},
        "single_sides": {n: summary(qs, rows) for n, rows in singles.items()},
        "before": everything["rrf k=60 wl=2 (before)"],
        "by_type": {},
    }
    held = [h for h in cv["held_out"] if h is not None]
    for bench, metric in (("lme", "R@5"), ("locomo", "R@10"), ("bilingual", "R@3")):
        if not any(dataset(q) == bench for q in qs):
            continue
        report["by_type"][bench] = {
            "metric": metric,
            "n": dict(sorted(Counter(str(q["type"]) for q in qs if dataset(q) == bench).items())),
            "vector": by_type(qs, singles["vector only"], bench, metric),
            "lexical": by_type(qs, singles["lexical only"], bench, metric),
            "before": by_type(qs, table["rrf k=60 wl=2 (before)"], bench, metric),
            "fusion (held-out)": by_type(qs, held, bench, metric),
        }
    print(json.dumps({k: v for k, v in report.items()}, indent=1))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
