"""Mining memory and speed against MemPalace 3.11, alone (perf.py's mining step, nothing else).

    python3 -m venv /tmp/peer-venv && /tmp/peer-venv/bin/pip install mempalace==3.11.0
    python benchmarks/mine_memory.py --peer-venv /tmp/peer-venv

Same corpus as perf.py (a copy of an installed package's source, default `rich`, plus
examples/notes), same weights (perf.py seeds MemPalace's model cache with ours), each tool's
`mine` in its own process; peak RSS is that process' ru_maxrss. Tools alternate, --rounds
times, so that both see the same machine load; the ratios use the medians. With
--without-release, our miner runs a second time with MEMPALACE_EMBED_RELEASE=0 (onnxruntime's
memory arena kept, as before), to show what releasing the buffers buys in the same run.
Writes benchmarks/results/mine_memory.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from perf import (  # noqa: E402
    REPO,
    Ours,
    Peer,
    first_and_re_mine,
    make_corpus,
    seed_chroma_model_cache,
)
from scale import load  # noqa: E402


def one(tool: Any, work: Path, corpus: Path, tag: str) -> dict[str, Any]:
    palace, copy = work / f"palace-{tag}", work / f"corpus-{tag}"
    shutil.copytree(corpus, copy)
    m = first_and_re_mine(tool, palace, copy)
    drawers = (
        tool.count(palace)
        if isinstance(tool, Peer)
        else json.loads(m["first"]["stdout"])["drawers"]["added"]
    )
    shutil.rmtree(palace, ignore_errors=True)
    shutil.rmtree(copy, ignore_errors=True)
    return {
        "drawers": drawers,
        "seconds": m["first"]["seconds"],
        "drawers_per_s": round(drawers / m["first"]["seconds"], 2),
        "peak_rss_mib": m["first"]["peak_rss_mib"],
        "load": load(),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--peer-venv", type=Path, default=Path("/tmp/peer-venv"))
    ap.add_argument("--package", default="rich")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument(
        "--without-release", action="store_true", help="also our MiniLM miner with the arena kept"
    )
    ap.add_argument(
        "--tools",
        default="ours,ours-minilm,peer",
        help="which to run: ours (default model), ours-minilm, peer "
        "(two invocations may run side by side under the same load)",
    )
    ap.add_argument(
        "--out", type=Path, default=REPO / "benchmarks" / "results" / "mine_memory.json"
    )
    args = ap.parse_args(argv)
    started = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="mp-minemem-"))
    try:
        corpus = work / "corpus"
        results: dict[str, Any] = {
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": f"{os.cpu_count()} cores",
            "corpus": make_corpus(corpus, args.package),
            "runs": {},
        }
        (work / "our-home").mkdir()
        # The peer embeds with all-MiniLM-L6-v2; our new palaces default to USE multilingual.
        # "ours, MiniLM" runs the same weights as the peer, so the ratio compares like with like.
        (work / "our-minilm-home").mkdir()
        (work / "our-minilm-home" / "config.toml").write_text(
            'embedding_model = "all-MiniLM-L6-v2"\n', encoding="utf-8"
        )
        seed_chroma_model_cache(work / "peer-home")
        ours = Ours(work / "our-home")
        kept = Ours(work / "our-minilm-home")
        kept.env = {**kept.env, "MEMPALACE_EMBED_RELEASE": "0"}
        wanted = args.tools.split(",")
        tools: list[tuple[str, Any]] = [("ours", ours)] if "ours" in wanted else []
        if "ours-minilm" in wanted:
            tools.append(("ours, MiniLM", Ours(work / "our-minilm-home")))
        if args.without_release:
            tools.append(("ours, arena kept", kept))
        if "peer" in wanted:
            tools.append(("MemPalace 3.11.0", Peer(args.peer_venv, work / "peer-home")))
        for r in range(args.rounds):
            for name, tool in tools:
                print(f"round {r + 1}: {name} ...", file=sys.stderr, flush=True)
                got = one(tool, work, corpus, f"{r}-{len(results['runs'].get(name, []))}")
                results["runs"].setdefault(name, []).append(got)
                print(json.dumps(got), file=sys.stderr, flush=True)
        med = {
            name: {
                k: statistics.median(run[k] for run in runs)
                for k in ("drawers_per_s", "peak_rss_mib", "seconds")
            }
            for name, runs in results["runs"].items()
        }
        results["median"] = med
        peer = med.get("MemPalace 3.11.0")
        results["ratios_vs_mempalace"] = (
            {}
            if peer is None
            else {
                name: {
                    "peak_rss": round(m["peak_rss_mib"] / peer["peak_rss_mib"], 3),
                    "drawers_per_s": round(m["drawers_per_s"] / peer["drawers_per_s"], 3),
                }
                for name, m in med.items()
            }
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results["wall_s"] = round(time.perf_counter() - started, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    args.out.with_suffix(".md").write_text(markdown(results), encoding="utf-8")
    print(markdown(results))
    return 0


def markdown(r: dict[str, Any]) -> str:
    c = r["corpus"]
    lines = [
        f"Date: {r['date']}. Machine: {r['machine']}. Wall time: {r['wall_s'] / 60:.1f} min. "
        f"Corpus: {c['package']} + examples/notes, {c['files']} files, {c['bytes'] / 1e6:.2f} MB.",
        "",
        "| tool | drawers | drawers/s (median) | peak RSS MiB (median) | RSS / MemPalace | "
        "drawers/s / MemPalace | load per run |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, m in r["median"].items():
        runs = r["runs"][name]
        q = r["ratios_vs_mempalace"].get(name, {"peak_rss": "-", "drawers_per_s": "-"})
        lines.append(
            f"| {name} | {runs[0]['drawers']} | {m['drawers_per_s']} | {m['peak_rss_mib']} | "
            f"{q['peak_rss']} | {q['drawers_per_s']} | "
            + "; ".join(run["load"] for run in runs)
            + " |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
