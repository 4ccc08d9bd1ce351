"""MiniLM's padded-token budget per model call (embedder.BATCH_TOKENS) against peak RSS and CPU.

    python benchmarks/embed_batch_memory.py                 # budgets 4096, 2048, 1024
    python benchmarks/embed_batch_memory.py --budgets 4096,2048 --rounds 2

Each budget runs in its own process (peak RSS is that process's ru_maxrss): 600 chunks of 900
characters cut from the installed `rich` package's source, embedded 32 at a time as mining
does, after a 4-text warm-up. Budgets alternate over --rounds so both see the same load.
Writes benchmarks/results/embed_batch_memory.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, resource, sys, time
from pathlib import Path
import rich
import mempalace_cli.embedders.base as E
from mempalace_cli.embedders.base import get_embedder
E.BATCH_TOKENS = int(sys.argv[1])
texts = []
for p in sorted(Path(rich.__file__).parent.glob("*.py")):
    s = p.read_text(errors="replace")
    texts += [s[i:i + 900] for i in range(0, len(s), 900)]
texts = texts[:600]
emb = get_embedder(E.MODEL_NAME)
emb.embed(texts[:4])
t = time.process_time()
for i in range(0, len(texts), 32):
    emb.embed(texts[i:i + 32])
print(json.dumps({"budget": int(sys.argv[1]), "chunks": len(texts),
                  "cpu_s": round(time.process_time() - t, 1),
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}))
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--budgets", default="4096,2048,1024")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument(
        "--out", type=Path, default=REPO / "benchmarks" / "results" / "embed_batch_memory.json"
    )
    args = ap.parse_args(argv)
    runs = []
    for _ in range(args.rounds):
        for budget in args.budgets.split(","):
            proc = subprocess.run(
                [sys.executable, "-c", CHILD, budget], capture_output=True, text=True, check=True
            )
            runs.append(
                json.loads(proc.stdout.strip().splitlines()[-1]) | {"load": os.getloadavg()[0]}
            )
            print(json.dumps(runs[-1]), file=sys.stderr)
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "runs": runs}
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    lines = [
        f"Date: {report['date']}. One process per run; 600 chunks of 900 characters, 32 per call.",
        "",
        "| padded tokens per call | CPU s | peak RSS MiB | load |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {r['budget']} | {r['cpu_s']} | {r['peak_rss_mib']} | {r['load']:.1f} |" for r in runs
    ]
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
