"""Choose the hybrid fusion by its worst fold, on cached dev scores (issue 27).

Reads what benchmarks/fusion_data.py cached (LongMemEval dev50, the seven LoCoMo dev
conversations at session level, dialog level and through `mine --mode convos`) and the
bilingual dump of benchmarks/bilingual.py, and scores a small set of fusions on exactly the
same candidates, nothing embedded again:

    python benchmarks/fusion_data.py --bench locomo --model use --out /tmp/fz
    python benchmarks/fusion_data.py --bench lme --cache /tmp/fz/vectors_use_lme.pkl --out /tmp/fz
    python benchmarks/bilingual.py --models use --dump /tmp/fz/bil_use.json
    python benchmarks/fusion_cv.py /tmp/fz --doc-vectors full product --siblings \
        --out benchmarks/results/fusion_cv_worst_fold_use.json
    python benchmarks/fusion_cv.py /tmp/fz --doc-vectors product p300 p600 p400a window \
        --out benchmarks/results/fusion_cv_passages_use.json  # passage sizes, turn windows
    python benchmarks/fusion_cv.py /tmp/fz --bridge-weights \
        --out benchmarks/results/fusion_cv_bridge_use.json   # also the dictionary bridge's weight
    python benchmarks/fusion_cv.py /tmp/fz --doc-vectors product --siblings --neighbours \
        --turns-as-chunks --out benchmarks/results/fusion_cv_neighbours_use.json
        # a drawer read with its neighbours, dialog turns filed as chunks of their session

Folds: LoCoMo by conversation (7 folds = its 7 dev conversations, the same conversation
held out at all three levels), LongMemEval and the bilingual set by question (seeded shuffle into
7 folds). A fusion's margin on a fold is its headline minus the better single side's on that
fold (the single sides as `--mode vector` and `--mode lexical` rank); a fusion is chosen by its
worst margin over every (benchmark, fold) it is chosen on (ties: the higher mean margin, then
fewer free parameters). Cross-validation: fold f is held out of every benchmark at once, the
fusion is chosen on the other six, and scored on f.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from mempalace_cli.search import fusion as product  # noqa: E402
from mempalace_cli.storage.passage_vectors import PASSAGES_FROM  # noqa: E402

FOLDS = 7
# USE's fusion before issue 27: the vector side read against its own spread, keywords x3.
BEFORE = product.for_model(product.USE).with_(
    lexical_weight=3.0, vector_sd_floor=0.0, sibling_weight=0.0
)
DEPTH = 50
BENCHES = ("lme", "locomo", "locomo_dialog", "locomo_pipeline", "bilingual")
# The dictionary bridge's weights tried around the shipped fusion (fusion.py: x16).
BRIDGE_WEIGHTS = (2.0, 4.0, 6.0, 8.0, 12.0, 16.0)
SQRT_BRIDGE_WEIGHTS = (2.0, 4.0, 6.0, 8.0)
# --bilingual-by-direction: the bilingual headline is the mean of its four directions' R@3
# instead of R@3 over its 80 questions (the rule's default, as before).
BY_DIRECTION = [False]
# A drawer's share of its best same-file candidate's score (fusion.with_siblings), with
# `--siblings`: only the product pipeline's drawers share files (a session's exchanges).
SIBLING_WEIGHTS = (0.25, 0.5, 1.0)


# -- the fusions ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Fusion:
    """A fusion to try. `kind`: 'product' (fusion.fuse with `params`), 'vector' / 'lexical'
    (one side alone), 'conf' (the confidence fusion of fusion.py with the changes below)."""

    name: str
    kind: str = "conf"
    params: product.FusionParams = field(default_factory=product.FusionParams)
    # The vector side's score of a long document: 'full' (one vector per document, what the
    # product has), 'passage' (its best ~800-character passage), 'maxfp' (the higher of both).
    doc_vector: str = "full"
    free: int = 0  # free parameters, for the tie-break
    # The dictionary bridge's share as the fusion reads it: 'linear' (what the product has)
    # or 'sqrt' (damped: a note holding a few of the question's words gains relatively more).
    bridge: str = "linear"

    def fuse(self, q: dict[str, Any], vector: list, lexical: list) -> list[str]:
        if self.kind == "vector":
            return [d for d, _ in vector]
        if self.kind == "lexical":
            return [d for d, _ in lexical]
        scripts = {
            d: q.get("scripts", {}).get(d, "latin")
            for d in (*(d for d, _ in (*vector, *lexical)), *q.get("translated", {}))
        }
        translated = q.get("translated", {})
        if self.bridge == "sqrt":
            translated = {d: math.sqrt(max(s, 0.0)) for d, s in translated.items()}
        scores = product.fuse_scores(
            vector,
            lexical,
            q.get("query_script", "latin"),
            scripts,
            self.params,
            q.get("query_weight", 0.0),
            translated,
        )
        if self.params.sibling_weight:  # drawers of one source file (the pipeline's sessions)
            scores = product.with_siblings(scores, sources(q), self.params.sibling_weight)
        return product.order(scores, vector, lexical)


# -- a drawer read with its neighbours (fusion.with_neighbours) -------------------------------
# `--turns-as-chunks`: the dialog level's turns filed as chunks of their session (source file
# = the session, chunk index = the turn's place), as a mined conversation stores them; without
# it each turn is a source of its own (the fixed protocol as retrieval.py files it), and
# neither the sibling lift nor the neighbour lift sees anything.
TURNS_AS_CHUNKS = [False]
# the pipeline's drawers: conversation -> id -> [session, chunk index] (fusion_data.py)
LAYOUT: dict[str, dict[str, list[Any]]] = {}
_PLACES: dict[str, dict[str, tuple[str, int]]] = {}


def places(q: dict[str, Any]) -> dict[str, tuple[str, int]]:
    """id -> (source, chunk index) of every drawer of the question's conversation."""
    key = f"{q['bench']}/{q['fold_key']}"
    if key not in _PLACES:
        out: dict[str, tuple[str, int]] = {}
        if q["bench"] == "locomo_dialog" and TURNS_AS_CHUNKS[0]:
            for d in q.get("vector_all_turns", {}):
                m = re.match(r"D(\d+):(\d+)$", d)
                if m:
                    out[d] = (f"session_{m.group(1)}", int(m.group(2)))
        elif q["bench"] == "locomo_pipeline":
            out = {d: (x[0], x[1]) for d, x in LAYOUT.get(q["fold_key"], {}).items()}
        _PLACES[key] = out
    return _PLACES[key]


def sources(q: dict[str, Any]) -> dict[str, str]:
    """id -> source file, for the candidates (and for the drawers a neighbour lift adds)."""
    if q["bench"] in ("locomo_dialog", "locomo_pipeline"):
        return {d: s for d, (s, _) in places(q).items()} | q.get("source", {})
    return q.get("source", {})


def beside(q: dict[str, Any], reach: int) -> dict[str, list[str]]:
    """id -> the ids within `reach` chunks of it in its source (as the search reads them from
    the catalogue)."""
    key = f"{q['bench']}/{q['fold_key']}/{reach}"
    if key not in _PLACES:
        by: dict[str, list[tuple[int, str]]] = defaultdict(list)
        for d, (src, n) in places(q).items():
            by[src].append((n, d))
        near: dict[str, list[str]] = {}
        for chunks in by.values():
            where = dict(chunks)
            for n, d in chunks:
                span = range(n - reach, n + reach + 1)
                near[d] = [where[m] for m in span if m != n and m in where]
        _PLACES[key] = near  # type: ignore[assignment]
    return _PLACES[key]  # type: ignore[return-value]


def neighbour_sides(
    q: dict[str, Any], params: product.FusionParams, vector: list, lexical: list
) -> tuple[list, list]:
    """Both sides as the search hands them to the fusion with `neighbour_weight`: the first
    candidates' neighbours added (their cosines computed), every candidate lifted by its
    neighbours' scores (fusion.with_neighbours)."""
    cos_all = q.get("vector_all_turns") or q.get("vector_all_drawers")
    if not params.neighbour_weight or not cos_all:
        return vector, lexical
    near = beside(q, params.neighbour_reach)
    pool = {d for d, _ in (*vector, *lexical)}
    pool |= {n for d in product.neighbour_seeds(vector, lexical) for n in near.get(d, ())}
    similarity = {d: cos_all[d] for d in pool if d in cos_all}
    return product.with_neighbours(vector, lexical, near, similarity, params.neighbour_weight)


def vector_side(q: dict[str, Any], how: str) -> list[tuple[str, float]]:
    if how == "window":  # dialogs: each turn read with its neighbours; elsewhere the product's
        if "vector_window_top" in q:
            return [tuple(x) for x in q["vector_window_top"]][:DEPTH]
        how = "product"
    if "vector_all" not in q:  # dialogs, pipeline, bilingual: one vector per drawer
        return [tuple(x) for x in q.get("vector_top", q.get("vector", []))][:DEPTH]
    full = q["vector_all"]
    if how == "product" and "vector_product" in q:  # what Palace.search's vector side found
        return [tuple(x) for x in q["vector_product"]][:DEPTH]
    if how.startswith("p") and how[1:].rstrip("a").isdigit():
        # p<size>: the product's rule, a document longer than PASSAGES_FROM scored by the
        # higher of its own and its best passage's cosine; p<size>a: every document of more
        # than one passage.
        size = how[1:].rstrip("a")
        start = 0 if how.endswith("a") else PASSAGES_FROM
        best = q["passage_best"][size]
        s = {
            d: max(v, best[d]) if d in best and q["sizes"][d] > start else v
            for d, v in full.items()
        }
    elif how in ("full", "product"):
        s = full
    elif how == "passage":
        s = q["vector_passage"]
    elif how == "turn":  # LoCoMo: its best single turn
        s = q.get("vector_turn", q["vector_passage"])
    elif how == "maxfp":
        s = {d: max(full[d], q["vector_passage"][d]) for d in full}
    else:
        raise ValueError(how)
    return sorted(s.items(), key=lambda x: (-x[1], x[0]))[:DEPTH]


# -- scoring ----------------------------------------------------------------------------------
def ndcg(ranked: list[str], gold: set[str], k: int) -> float:
    dcg = sum(1.0 / math.log2(i + 2) for i, d in enumerate(ranked[:k]) if d in gold)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(gold), k)))
    return dcg / ideal if ideal else 0.0


def frac(ranked: list[str], gold: set[str], k: int) -> float:
    return len(gold & set(ranked[:k])) / len(gold) if gold else 1.0


def score(q: dict[str, Any], f: Fusion) -> dict[str, float]:
    bench = bench_of(q)
    vector = vector_side(q, f.doc_vector)
    lexical = [tuple(x) for x in q["lexical"]]
    if bench == "locomo_pipeline":
        depth = len(q["vector_top"])
        lexical = lexical[:depth]
        params = f.params.with_(depth=depth)
        if f.params.neighbour_weight:
            vector, lexical = neighbour_sides(q, f.params, vector, lexical)
        ranked_drawers = Fusion(f.name, f.kind, params, f.doc_vector, f.free, f.bridge).fuse(
            q, vector, lexical
        )
        ranked = list(dict.fromkeys(sources(q)[d] for d in ranked_drawers))
    else:
        if f.params.neighbour_weight:
            vector, lexical = neighbour_sides(q, f.params, vector, lexical)
        ranked = f.fuse(q, vector, lexical)
    gold = set(q["gold"])
    if bench == "lme":
        hit = lambda k: float(bool(gold & set(ranked[:k])))  # noqa: E731
        return {"R@1": hit(1), "R@5": hit(5), "R@10": hit(10), "NDCG@10": ndcg(ranked, gold, 10)}
    if bench == "bilingual":
        return {"R@1": float(ranked[:1] == q["gold"]), "R@3": float(bool(gold & set(ranked[:3])))}
    return {"R@5": frac(ranked, gold, 5), "R@10": frac(ranked, gold, 10)}


def bench_of(q: dict[str, Any]) -> str:
    return "bilingual" if q["bench"].startswith("bilingual") else q["bench"]


def headline(bench: str, s: dict[str, float]) -> float:
    """The number a fold is judged by."""
    if bench == "lme":
        return (s["R@5"] + s["NDCG@10"]) / 2
    if bench == "bilingual":
        return s["R@3"]
    if bench == "locomo_dialog":
        return s["R@10"]
    return (s["R@5"] + s["R@10"]) / 2


def means(rows: list[dict[str, float]]) -> dict[str, float]:
    return {m: statistics.fmean(r[m] for r in rows) for m in rows[0]} if rows else {}


# -- folds ------------------------------------------------------------------------------------
def assign_folds(qs: list[dict[str, Any]], k: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    fold = [0] * len(qs)
    by: dict[str, list[int]] = defaultdict(list)
    for i, q in enumerate(qs):
        by[bench_of(q)].append(i)
    for bench, idx in by.items():
        if bench.startswith("locomo"):
            convs = sorted({qs[i]["fold_key"] for i in idx})
            for i in idx:
                fold[i] = convs.index(qs[i]["fold_key"]) % k
        else:
            order = sorted(idx, key=lambda i: qs[i]["id"])
            rng.shuffle(order)
            for n, i in enumerate(order):
                fold[i] = n % k
    return fold


def fold_table(
    qs: list[dict[str, Any]], rows: list[dict[str, float]], fold: list[int]
) -> dict[tuple[str, int], float]:
    """(benchmark, fold) -> headline; with BY_DIRECTION the bilingual set's is the mean over
    its four directions of each one's R@3 (the issue's target is per direction) instead of
    R@3 over all its questions."""
    groups: dict[tuple[str, int], list[dict[str, float]]] = defaultdict(list)
    directions: dict[tuple[str, int], dict[str, list[dict[str, float]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for q, r, f in zip(qs, rows, fold, strict=True):
        groups[(bench_of(q), f)].append(r)
        directions[(bench_of(q), f)][str(q.get("type"))].append(r)
    out = {}
    for key, rs in groups.items():
        if key[0] == "bilingual" and BY_DIRECTION[0]:
            out[key] = statistics.fmean(means(d)["R@3"] for d in directions[key].values())
        else:
            out[key] = headline(key[0], means(rs))
    return out


def choose(
    names: list[str],
    tables: dict[str, dict[tuple[str, int], float]],
    best_single: dict[tuple[str, int], float],
    frees: dict[str, int],
    keep: Callable[[tuple[str, int]], bool],
) -> tuple[str, float, float]:
    """The fusion with the best worst margin over the kept (benchmark, fold) cells; ties go to
    the higher mean margin over those cells, then to fewer free parameters. (The worst cell is
    often one bilingual question, the same for many fusions, so the mean decides often; the
    report also lists each benchmark's worst fold, `worst_fold_by_benchmark`.)"""

    def key(name: str) -> tuple[float, float, int]:
        margins = [v - best_single[c] for c, v in tables[name].items() if keep(c)]
        return (round(min(margins), 9), round(statistics.fmean(margins), 9), -frees[name])

    best = max(names, key=key)
    k = key(best)
    return best, k[0], k[1]


# -- candidates -------------------------------------------------------------------------------
# `--neighbours`: fusions near the shipped one (keyword weight, floor, sibling share) with a
# drawer lifted by its neighbours' scores (fusion.with_neighbours), at these shares and reaches.
NEIGHBOUR_BASES = ((4.0, 0.1, 0.25), (4.0, 0.1, 0.0), (3.0, 0.15, 0.5), (5.0, 0.15, 0.25))
NEIGHBOUR_WEIGHTS = (0.25, 0.5, 0.75, 1.0)
NEIGHBOUR_REACHES = (1, 2)


def candidates(
    doc_vectors: tuple[str, ...] = ("full",),
    bridge: bool = False,
    siblings: bool = False,
    neighbours: bool = False,
) -> list[Fusion]:
    """Single sides, today's fusion, weighted RRF, with `bridge` today's fusion with other
    dictionary-bridge weights (linear or damped share), and the confidence fusion over keyword
    weights and vector spread floors (0 = today's z-scores), per way of scoring a long
    document's vector side (`doc_vectors`; only 'full' exists in the product)."""
    current = product.for_model(product.USE)
    out = [
        # The vector side as `--mode vector` ranks (a long document by its best passage).
        Fusion("vector only", "vector", doc_vector="product"),
        Fusion("lexical only", "lexical"),
        Fusion("vector only, one vector a document", "vector"),
        Fusion("shipped (fusion.py, USE)", "product", current, "product", free=4),
        Fusion("before (keywords x3, own spread)", "product", BEFORE, free=2),
    ]
    for wl in (1.5, 2.0, 3.0):
        p = current.with_(method="rrf", lexical_weight=wl, sibling_weight=0.0)
        out.append(Fusion(f"rrf k=60 wl={wl}", "product", p, free=1))
    # The dictionary bridge's weight around the shipped fusion (everything else as shipped),
    # linear in the share as the product reads it, and damped (sqrt of the share).
    for tw in BRIDGE_WEIGHTS if bridge else ():
        if tw != current.translated_weight:
            p = current.with_(translated_weight=tw)
            out.append(Fusion(f"shipped, bridge x{tw:g}", "product", p, "product", free=4))
    for tw in SQRT_BRIDGE_WEIGHTS if bridge else ():
        p = current.with_(translated_weight=tw)
        out.append(
            Fusion(
                f"shipped, bridge x{tw:g} sqrt(share)", "product", p, "product", 4, bridge="sqrt"
            )
        )
    for how in doc_vectors:
        for wl in (2.0, 3.0, 4.0, 5.0, 6.0):
            for floor in (0.0, 0.06, 0.08, 0.1, 0.12, 0.15, 0.2, 0.25):
                p = current.with_(lexical_weight=wl, vector_sd_floor=floor, sibling_weight=0.0)
                name = f"conf {how} wl={wl} sdfloor={floor}"
                extra = how not in ("full", "product")  # a passage size or a window
                out.append(Fusion(name, "product", p, how, free=2 + (floor > 0) + extra))
                for sib in SIBLING_WEIGHTS if how == "product" and siblings else ():
                    ps = p.with_(sibling_weight=sib)
                    name = f"conf {how} wl={wl} sdfloor={floor} siblings={sib}"
                    out.append(Fusion(name, "product", ps, how, free=3 + (floor > 0)))
    for wl, floor, sib in NEIGHBOUR_BASES if neighbours else ():
        base = current.with_(lexical_weight=wl, vector_sd_floor=floor, sibling_weight=sib)
        for reach in NEIGHBOUR_REACHES:
            for nw in NEIGHBOUR_WEIGHTS:
                p = base.with_(neighbour_weight=nw, neighbour_reach=reach)
                name = f"conf product wl={wl} sdfloor={floor} siblings={sib} nb={nw}x{reach}"
                out.append(Fusion(name, "product", p, "product", free=4 + (sib > 0) + 1))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--model", default="use")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--only", nargs="*", help="benchmarks to read (default all)")
    ap.add_argument(
        "--doc-vectors",
        nargs="+",
        default=["full"],
        help="how a long document's vector side is scored: full (one vector), product (what "
        "Palace.search returns: passages of documents longer than PASSAGES_FROM), p<size> (the "
        "higher of the document's and its best <size> passage's cosine, the product's rule), "
        "p<size>a (the same for every document), passage / maxfp / turn (the earlier 800-"
        "character passages, their max with the document, the best turn), window (dialogs: "
        "each turn read with its neighbours)",
    )
    ap.add_argument(
        "--bridge-weights",
        action="store_true",
        help="also try the shipped fusion with other dictionary-bridge weights (x2-x16, the "
        "share linear or its square root) and report each one's worst fold per benchmark",
    )
    ap.add_argument(
        "--siblings",
        action="store_true",
        help="also try a drawer lifted by its best same-file candidate (fusion.with_siblings)",
    )
    ap.add_argument(
        "--neighbours",
        action="store_true",
        help="also try a drawer lifted by the scores of the drawers beside it in its source "
        "(fusion.with_neighbours; LoCoMo's dialog turns with --turns-as-chunks, and the "
        "pipeline's exchanges)",
    )
    ap.add_argument(
        "--turns-as-chunks",
        action="store_true",
        help="file LoCoMo's dialog turns as chunks of their session (as a mined conversation "
        "stores them) instead of each turn as its own source",
    )
    ap.add_argument(
        "--bilingual-by-direction",
        action="store_true",
        help="judge the bilingual folds by the mean of the four directions' R@3 instead of R@3 "
        "over all their questions",
    )
    args = ap.parse_args(argv)
    BY_DIRECTION[0] = args.bilingual_by_direction
    TURNS_AS_CHUNKS[0] = args.turns_as_chunks
    layout = args.folder / f"locomo_pipeline_layout_{args.model}.json"
    if layout.exists():
        LAYOUT.update(json.loads(layout.read_text(encoding="utf-8")))
    qs: list[dict[str, Any]] = []
    for bench in args.only or BENCHES:
        name = "bil" if bench == "bilingual" else bench
        path = args.folder / f"{name}_{args.model}.json"
        if path.exists():
            qs += json.loads(path.read_text(encoding="utf-8"))
    fold = assign_folds(qs, FOLDS, args.seed)
    fusions = candidates(
        tuple(args.doc_vectors), args.bridge_weights, args.siblings, args.neighbours
    )
    rows = {f.name: [score(q, f) for q in qs] for f in fusions}
    tables = {name: fold_table(qs, r, fold) for name, r in rows.items()}
    best_single = {
        c: max(tables["vector only"][c], tables["lexical only"][c]) for c in tables["vector only"]
    }
    frees = {f.name: f.free for f in fusions}
    pool = [f.name for f in fusions if f.kind not in ("vector", "lexical")]
    # nested: hold out fold h everywhere, choose on the rest
    held: list[dict[str, float] | None] = [None] * len(qs)
    per_fold = []
    for h in range(FOLDS):
        name, worst, avg = choose(pool, tables, best_single, frees, lambda c, h=h: c[1] != h)
        for i in range(len(qs)):
            if fold[i] == h:
                held[i] = rows[name][i]
        per_fold.append(
            {"held_out_fold": h, "chosen": name, "worst_margin_on_rest": round(worst, 4)}
            | {
                f"{b} margin": round(tables[name][(b, h)] - best_single[(b, h)], 4)
                for b in BENCHES
                if (b, h) in best_single
            }
        )
    chosen, worst, avg = choose(pool, tables, best_single, frees, lambda c: True)
    report: dict[str, Any] = {
        "command": "python benchmarks/fusion_cv.py " + " ".join(argv or sys.argv[1:]),
        "questions": dict(sorted(defaultdict(int, _count(qs)).items())),
        "folds": FOLDS,
        "cross_validation": per_fold,
        "held_out_pooled": _summary(qs, held),  # type: ignore[arg-type]
        "chosen_on_all_dev": {"name": chosen, "worst_margin": round(worst, 4)},
        "all_dev": {
            name: _summary(qs, rows[name])
            for name in (
                "vector only",
                "vector only, one vector a document",
                "lexical only",
                "before (keywords x3, own spread)",
                "shipped (fusion.py, USE)",
                chosen,
            )
        },
        # (worst cell, mean margin over all cells, fusion), best first: the order `choose`
        # ranks by on all dev (before free parameters)
        "ranking": sorted(
            (
                (
                    round(min(v - best_single[c] for c, v in tables[n].items()), 4),
                    round(statistics.fmean(v - best_single[c] for c, v in tables[n].items()), 4),
                    n,
                )
                for n in pool
            ),
            reverse=True,
        )[:25],
        # per fusion and benchmark: the worst fold's margin over the better single side
        "worst_fold_by_benchmark": {
            n: {
                b: round(min(v - best_single[c] for c, v in tables[n].items() if c[0] == b), 4)
                for b in BENCHES
                if any(c[0] == b for c in tables[n])
            }
            for n in pool
        },
    }
    if args.bridge_weights:
        report["bridge_weights"] = {
            f.name: _worst_and_all(qs, rows[f.name], tables[f.name])
            for f in fusions
            if f.name == "shipped (fusion.py, USE)" or f.name.startswith("shipped, bridge")
        }
    if chosen in {f.name for f in fusions}:
        f = next(f for f in fusions if f.name == chosen)
        report["chosen_on_all_dev"]["params"] = asdict(f.params) | {"doc_vector": f.doc_vector}
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


def _worst_and_all(
    qs: list[dict[str, Any]], rows: list[dict[str, float]], table: dict[tuple[str, int], float]
) -> dict[str, Any]:
    """Per benchmark: the worst fold's headline and the headline on all dev; and the
    bilingual zh->en R@1 / R@3 on all dev."""
    out: dict[str, Any] = {}
    for bench in BENCHES:
        idx = [i for i, q in enumerate(qs) if bench_of(q) == bench]
        if not idx:
            continue
        worst = min(v for (b, _), v in table.items() if b == bench)
        out[bench] = {
            "worst_fold": round(worst, 4),
            "all_dev": round(headline(bench, means([rows[i] for i in idx])), 4),
        }
    zh_en = [r for q, r in zip(qs, rows, strict=True) if q.get("type") == "zh->en"]
    if zh_en:
        out["bilingual zh->en all dev"] = {k: round(v, 4) for k, v in means(zh_en).items()}
    return out


def _count(qs: list[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for q in qs:
        out[bench_of(q)] += 1
    return out


def _summary(qs: list[dict[str, Any]], rows: list[dict[str, float]]) -> dict[str, Any]:
    """Per benchmark: the metrics over all its questions, and per type / category."""
    out: dict[str, Any] = {}
    by: dict[str, list[int]] = defaultdict(list)
    for i, q in enumerate(qs):
        by[bench_of(q)].append(i)
    for bench, idx in sorted(by.items()):
        types: dict[str, list[dict[str, float]]] = defaultdict(list)
        for i in idx:
            types[str(qs[i]["type"])].append(rows[i])
        out[bench] = {k: round(v, 4) for k, v in means([rows[i] for i in idx]).items()} | {
            "by_type": {
                t: {k: round(v, 4) for k, v in means(rs).items()} | {"n": len(rs)}
                for t, rs in sorted(types.items())
            }
        }
    return out


if __name__ == "__main__":
    raise SystemExit(main())
