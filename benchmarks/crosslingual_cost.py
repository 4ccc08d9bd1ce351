"""What the dictionary bridge (mempalace_cli/search/crosslingual.py) costs a search.

Measures, on this machine:
- loading CC-CEDICT in a fresh process (what a cold `mempalace search` with a Chinese query
  pays, on a thread beside the model's own load);
- translating one query (the bilingual dev set's 42 Chinese questions, median);
- scoring the translation over 100 candidate texts (`catalog.translated_share`, what every
  Chinese search pays once the dictionary is loaded; it never grows with the palace);
- a warm hybrid search with and without the bridge on the bilingual dev palace (median over the
  Chinese questions), as a ratio.

Usage:
    python benchmarks/crosslingual_cost.py [--runs 5]
Writes benchmarks/results/crosslingual_cost.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bilingual import build_palace, load  # noqa: E402

from mempalace_cli.search import crosslingual, fusion  # noqa: E402
from mempalace_cli.storage.catalog import translated_share  # noqa: E402

LOAD_SCRIPT = (
    "import time; t = time.perf_counter(); from mempalace_cli.search import crosslingual; "
    "crosslingual.dictionary(); print(time.perf_counter() - t)"
)


def median_ms(fn: Any, items: list[Any], repeat: int = 3) -> float:
    times = []
    for item in items:
        best = float("inf")
        for _ in range(repeat):
            t = time.perf_counter()
            fn(item)
            best = min(best, time.perf_counter() - t)
        times.append(best)
    return round(statistics.median(times) * 1000, 2)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument(
        "--out", type=Path, default=REPO / "benchmarks" / "results" / "crosslingual_cost.json"
    )
    args = ap.parse_args(argv)
    data = load()
    chinese = [q["query"] for q in data["queries"] if q["direction"].startswith("zh")]

    loads = []
    for _ in range(args.runs):
        out = subprocess.run(
            [sys.executable, "-c", LOAD_SCRIPT], capture_output=True, text=True, check=True
        )
        loads.append(float(out.stdout.strip()))
    crosslingual.dictionary()
    translate_ms = median_ms(crosslingual.translate, chinese)
    texts = {f"n{i}": n["text"] for i, n in enumerate(data["notes"] * 3)}  # 108 texts
    texts = dict(list(texts.items())[:100])
    groups = [crosslingual.translate(q) for q in chinese]
    share_ms = median_ms(lambda g: translated_share(g, texts), groups)

    root = Path(tempfile.mkdtemp(prefix="mp-bridge-cost-"))
    (root / "home").mkdir()
    try:
        palace, _ = build_palace("use", root, data["notes"])
        for q in chinese:  # warm: model, caches
            palace.search(q, limit=5)
        with_bridge = median_ms(lambda q: palace.search(q, limit=5), chinese)
        shipped = fusion.BY_MODEL[fusion.USE]
        fusion.BY_MODEL[fusion.USE] = shipped.with_(translated_weight=0.0)
        try:
            without = median_ms(lambda q: palace.search(q, limit=5), chinese)
        finally:
            fusion.BY_MODEL[fusion.USE] = shipped
        palace.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)

    results = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "command": " ".join(["python benchmarks/crosslingual_cost.py", *(argv or sys.argv[1:])]),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, load {os.getloadavg()[0]:.1f}",
        "dictionary_load_s": {
            "median": round(statistics.median(loads), 3),
            "min": round(min(loads), 3),
            "max": round(max(loads), 3),
            "runs": args.runs,
        },
        "translate_ms_median": translate_ms,
        "share_over_100_texts_ms_median": share_ms,
        "warm_search_ms_median": {"with_bridge": with_bridge, "without_bridge": without},
        "ratio_with_to_without": round(with_bridge / without, 2),
        "chinese_queries": len(chinese),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    md = "\n".join(
        [
            f"# Cost of the dictionary bridge ({results['date']})",
            "",
            f"Command: `{results['command']}` on {results['machine']}.",
            "",
            "| what | time |",
            "|---|---|",
            f"| load CC-CEDICT, fresh process (median of {args.runs}) | "
            f"{results['dictionary_load_s']['median']} s |",
            f"| translate one Chinese question (median of {len(chinese)}) | {translate_ms} ms |",
            f"| score a translation over 100 candidate texts | {share_ms} ms |",
            f"| warm hybrid search, Chinese question, without the bridge | {without} ms |",
            f"| warm hybrid search, Chinese question, with the bridge | {with_bridge} ms "
            f"({results['ratio_with_to_without']}x) |",
            "",
        ]
    )
    args.out.with_suffix(".md").write_text(md, encoding="utf-8")
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
