"""How close do both models put a fact and its update, or a fact and its restatement?

    python benchmarks/duplicates.py

Pairs of short texts written for this script: an update (another day, number, person or a
negation) should be filed; a restatement (case, punctuation, spacing) should be refused. Prints
each pair's cosine similarity under all-MiniLM-L6-v2 and use-multilingual-v3, and what the
duplicate check decides (the same words, mempalace_cli/search/sameness.py; the candidates are the
nearest drawers by meaning) against similarity >= 0.9 alone.
Writes benchmarks/results/duplicates.{json,md}.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from mempalace_cli.embedders.base import get_embedder  # noqa: E402
from mempalace_cli.search.sameness import says_the_same  # noqa: E402

THRESHOLD = 0.9
FACT = "The production deploy of the billing service is on Tuesday at 02:00 UTC."
PAIRS = {
    "update": [
        ("We chose Postgres for the billing service.", "We chose MySQL for the billing service."),
        ("Maya leads the Harbor project.", "Tomás leads the Harbor project."),
        ("The deploy is on Tuesday.", "The deploy is on Thursday."),
        ("Use Clerk for authentication.", "Do not use Clerk for authentication."),
        ("Budget for Q3 is 40k EUR.", "Budget for Q4 is 40k EUR."),
        ("我们决定用 Postgres 做账单服务。", "我们决定用 MySQL 做账单服务。"),
        ("王磊负责支付模块。", "李娜负责支付模块。"),
        (
            "The API rate limit is 100 requests per minute.",
            "The API rate limit is 1000 requests per minute.",
        ),
        (FACT, "The production deploy of the billing service is on Thursday at 02:00 UTC."),
        (FACT, "The production deploy of the billing service is on Tuesday at 03:00 UTC."),
        (FACT, "The production deploy of the billing service is not on Tuesday at 02:00 UTC."),
    ],
    "restatement": [
        ("We chose Postgres for the billing service.", "We chose Postgres for the billing service"),
        (
            "We chose Postgres for the billing service.",
            "we chose postgres for the billing service.",
        ),
        ("Maya leads the Harbor project.", "Maya leads the Harbor project. "),
        ("The deploy is on Tuesday.", "The deploy is on tuesday!"),
        ("我们决定用 Postgres 做账单服务。", "我们决定用Postgres做账单服务"),
        ("Budget for Q3 is 40k EUR.", "Budget for Q3 is 40k EUR"),
        (FACT, "the production deploy of the billing service is on tuesday at 2:00 UTC"),
        (FACT, "The production deploy of the billing service is on Tuesday, at 02:00 UTC!"),
    ],
}
MODELS = ("all-MiniLM-L6-v2", "use-multilingual-v3")


def main() -> None:
    rows = []
    for model in MODELS:
        embedder = get_embedder(model)
        for kind, pairs in PAIRS.items():
            for a, b in pairs:
                v = embedder.embed([a, b])
                v = v / np.linalg.norm(v, axis=1, keepdims=True)
                sim = float(v[0] @ v[1])
                rows.append(
                    {
                        "model": model,
                        "kind": kind,
                        "a": a,
                        "b": b,
                        "similarity": round(sim, 4),
                        "refused_by_similarity": sim >= THRESHOLD,
                        "refused_by_check": says_the_same(a, b),
                    }
                )
    out = REPO / "benchmarks" / "results"
    (out / "duplicates.json").write_text(json.dumps(rows, ensure_ascii=False, indent=1) + "\n")
    lines = [
        "Command: `python benchmarks/duplicates.py`. Threshold 0.9.",
        "",
        "| model | kind | pairs | refused by similarity >= 0.9 alone "
        "| refused by the check (same words) | similarity min / max |",
        "|---|---|---|---|---|---|",
    ]
    for model in MODELS:
        for kind in PAIRS:
            sel = [r for r in rows if r["model"] == model and r["kind"] == kind]
            sims = [r["similarity"] for r in sel]
            by_sim = sum(r["refused_by_similarity"] for r in sel)
            by_check = sum(r["refused_by_check"] for r in sel)
            lines.append(
                f"| {model} | {kind} | {len(sel)} | {by_sim} | {by_check} "
                f"| {min(sims):.3f} / {max(sims):.3f} |"
            )
    (out / "duplicates.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
