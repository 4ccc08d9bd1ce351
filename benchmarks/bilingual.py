"""Bilingual (English/Chinese) retrieval: recall@1/@3 per direction, per model, per ranking.

The dev set is tests/data/bilingual_dev.json: 36 notes (half English, half Chinese; distractors
share names across the languages) and 80 queries in four directions (en->en, zh->zh, zh->en,
en->zh), each paraphrasing (or naming a keyword of) exactly one note. All notes go into one
fresh palace per model; every query is searched through `Palace.search` in each mode
(vector, lexical, hybrid = the default fusion) over the whole palace.

Usage:
    python benchmarks/bilingual.py                       # minilm and use
    python benchmarks/bilingual.py --models minilm use e5 --dump /tmp/bilingual_dump.json
Writes benchmarks/results/bilingual.{json,md} (or --out). The --dump file holds both sides'
raw candidates per query and model, for benchmarks/tune_fusion.py.
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
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_models import DEFAULT, MODELS, new_palace  # noqa: E402

from mempalace_cli.search import crosslingual  # noqa: E402
from mempalace_cli.search.fusion import LATIN, script_of  # noqa: E402
from mempalace_cli.storage.catalog import translated_share  # noqa: E402

DEV_SET = REPO / "tests" / "data" / "bilingual_dev.json"
DIRECTIONS = ("en->en", "zh->zh", "zh->en", "en->zh")
MODES = ("vector", "lexical", "hybrid")
DEPTH = 50


def load(path: Path = DEV_SET) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def build_palace(model: str, root: Path, notes: list[dict[str, Any]]) -> tuple[Any, dict]:
    """A fresh palace holding every note; returns it and drawer id -> note id."""
    palace = new_palace(model, root / f"palace-{model}", root / "home")
    res = palace.add_drawers(
        [
            {"wing": "dev", "room": "notes", "content": n["text"], "source_file": n["id"]}
            for n in notes
        ],
        added_by="benchmark",
    )
    return palace, dict(zip(res["drawer_ids"], [n["id"] for n in notes], strict=True))


def evaluate(model: str, data: dict[str, Any], root: Path, dump: list | None) -> dict[str, Any]:
    t0 = time.perf_counter()
    palace, back = build_palace(model, root, data["notes"])
    t_build = time.perf_counter() - t0
    rows = []
    t0 = time.perf_counter()
    for q in data["queries"]:
        for mode in MODES:
            hits = palace.search(q["query"], limit=10, mode=mode)["results"]
            ranked = [back[h["drawer_id"]] for h in hits]
            rows.append(
                {
                    "id": q["id"],
                    "direction": q["direction"],
                    "kind": q["kind"],
                    "mode": mode,
                    "r@1": float(q["target"] in ranked[:1]),
                    "r@3": float(q["target"] in ranked[:3]),
                    "top3": ranked[:3],
                }
            )
        if dump is not None:
            _, vec, lex = palace.searching.search_candidates(q["query"], None, None, DEPTH)
            groups = crosslingual.translate(q["query"])
            translated = translated_share(groups, palace.searching.candidate_texts(vec, lex))
            scripts = {n["id"]: script_of(n["text"]) for n in data["notes"]}
            dump.append(
                {
                    "bench": f"bilingual-{model}",
                    "id": q["id"],
                    "type": q["direction"],
                    "gold": [q["target"]],
                    "vector": [[back[h[0]], round(1.0 - h[1], 5)] for h in vec],
                    "lexical": [[back[i], round(s, 5)] for i, s in lex],
                    "translated": {back[i]: round(s, 5) for i, s in translated.items()},
                    "query_script": script_of(q["query"]),
                    "query_weight": round(palace.catalog.query_weight(q["query"]), 5),
                    "scripts": {d: s for d, s in scripts.items() if s != LATIN},
                }
            )
    t_query = time.perf_counter() - t0
    palace.close()
    summary: dict[str, Any] = {}
    for mode in MODES:
        per: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in rows:
            if r["mode"] == mode:
                per[r["direction"]].append(r)
                per["all"].append(r)
        summary[mode] = {
            d: {
                "r@1": round(sum(r["r@1"] for r in rs) / len(rs), 3),
                "r@3": round(sum(r["r@3"] for r in rs) / len(rs), 3),
                "n": len(rs),
            }
            for d, rs in per.items()
        }
    return {
        "seconds": {"file_notes": round(t_build, 1), "search": round(t_query, 1)},
        "summary": summary,
        "misses": [r for r in rows if r["mode"] == "hybrid" and not r["r@3"]],
    }


def markdown(results: dict[str, Any]) -> str:
    lines = [
        f"# Bilingual retrieval ({results['date']})",
        "",
        f"Dev set: {results['dev_set']} ({results['notes']} notes, {results['queries']} "
        "queries). Command: `" + results["command"] + "`",
        "",
        "recall@1 / recall@3 per direction (query language -> note language):",
        "",
        "| model | ranking | " + " | ".join(DIRECTIONS) + " | all |",
        "|---|---|" + "---|" * (len(DIRECTIONS) + 1),
    ]
    for model, res in results["models"].items():
        for mode in MODES:
            s = res["summary"][mode]
            cells = [f"{s[d]['r@1']:.2f} / {s[d]['r@3']:.2f}" for d in (*DIRECTIONS, "all")]
            lines.append(f"| {model} | {mode} | " + " | ".join(cells) + " |")
    lines += ["", f"Total wall time: {results['seconds']} s on {results['machine']}.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", choices=MODELS, default=sorted({"minilm", DEFAULT}))
    ap.add_argument("--data", type=Path, default=DEV_SET)
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "bilingual.json")
    ap.add_argument("--dump", type=Path, help="write raw candidates for tune_fusion.py")
    args = ap.parse_args(argv)
    data = load(args.data)
    dump: list | None = [] if args.dump else None
    t_start = time.perf_counter()
    root = Path(tempfile.mkdtemp(prefix="mp-bilingual-"))
    (root / "home").mkdir()
    results: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "command": "python benchmarks/bilingual.py " + " ".join(argv or sys.argv[1:]),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}",
        "dev_set": str(
            args.data.relative_to(REPO) if args.data.is_relative_to(REPO) else args.data
        ),
        "notes": len(data["notes"]),
        "queries": len(data["queries"]),
        "models": {},
    }
    try:
        for model in args.models:
            results["models"][model] = evaluate(model, data, root, dump)
            print(model, json.dumps(results["models"][model]["summary"]["hybrid"]), file=sys.stderr)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    results["seconds"] = round(time.perf_counter() - t_start, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    md = markdown(results)
    args.out.with_suffix(".md").write_text(md, encoding="utf-8")
    if dump is not None:
        args.dump.write_text(json.dumps(dump, ensure_ascii=False), encoding="utf-8")
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
