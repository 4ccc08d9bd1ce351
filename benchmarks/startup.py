"""Start-up of a fresh `mempalace search ... --json` (process start to exit), with the model
cache (mempalace_cli/embedders/cache.py) off and on, in the same run, for each model.

    python benchmarks/startup.py                       # 10k drawers, both models, 10 rounds
    python benchmarks/startup.py --drawers 10000 --rounds 10 --models use,minilm

For each model the script builds a palace of --drawers drawers in a temporary folder (the
drawers' vectors come from a cheap stand-in embedder of the model's dimension, as in
scale.py; the palace records the real model, so every search embeds its query with it),
runs one search to build the vector index, then one search with the cache on to write the
cache entry (timed separately: what the first search after an install or upgrade pays), then
--rounds rounds of one search with MEMPALACE_MODEL_CACHE=0 (the old path: the model loaded
from its package) and one with the cache, alternating, each a fresh process with its own
query. Reported: wall and CPU seconds (user + system of the child, from wait4: what load on a
shared machine inflates least), p50 / p95, and peak RSS.

PYTHONDONTWRITEBYTECODE is removed from the children's environment: an installed package has
its bytecode compiled, and without it every run would compile this package's modules again.
Writes benchmarks/results/startup.json and startup.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from perf import dist  # noqa: E402
from scale import BENCH, QUERIES, StandInEmbedder, TurnPool, run_with_rss  # noqa: E402

MODELS = {"use": "use-multilingual-v3", "minilm": "all-MiniLM-L6-v2"}
BATCH = 1000


def build(work: Path, model: str, drawers: int, pool: TurnPool) -> dict[str, Any]:
    from mempalace_cli.common.config import resolve_settings
    from mempalace_cli.embedders import MODELS as REGISTRY
    from mempalace_cli.service import Palace

    home, palace = work / "home", work / "palace"
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(f'embedding_model = "{model}"\n', encoding="utf-8")
    stand_in = StandInEmbedder(REGISTRY[model].dimension)

    class StandInPalace(Palace):
        @property
        def embedder(self) -> Any:  # type: ignore[override]
            return stand_in

    os.environ["MEMPALACE_HOME"] = str(home)
    p = StandInPalace(resolve_settings(str(palace), home=home))
    rng = random.Random(drawers)
    rooms = [f"topic_{i:02d}" for i in range(24)]
    wings = ["notes", "work", "home", "research"]
    t0, seed = time.perf_counter(), 0
    while (left := drawers - p.catalog.count()) > 0:
        seed += 1
        texts = pool.exchanges(min(BATCH, left), seed=seed)
        p.add_drawers(
            [{"wing": rng.choice(wings), "room": rng.choice(rooms), "content": t} for t in texts],
            added_by="startup-bench",
        )
        print(f"  {model}: {p.catalog.count():,}/{drawers:,} drawers", file=sys.stderr, flush=True)
    p.search(QUERIES[0], mode="lexical")  # re-stamps the catalogue after Chroma was opened
    total = p.catalog.count()
    p.close()
    return {"drawers": total, "build_s": round(time.perf_counter() - t0, 1)}


def env_for(home: Path, cache: Path, on: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(MEMPALACE_HOME=str(home), MEMPALACE_CACHE_DIR=str(cache))
    env["MEMPALACE_MODEL_CACHE"] = "1" if on else "0"
    return env


def search(work: Path, env: dict[str, str], query: str) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "mempalace_cli", "--palace", str(work / "palace")]
    run = run_with_rss([*cmd, "search", query, "--json"], env)
    assert json.loads(run.pop("stdout"))["results"], query
    return run


def timing(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "wall": dist([r["seconds"] for r in runs]),
        "cpu": dist([r["cpu_s"] for r in runs]),
        "peak_rss_mib": max(r["peak_rss_mib"] for r in runs),
    }


def measure(work: Path, rounds: int) -> dict[str, Any]:
    home, cache = work / "home", work / "model-cache"
    shutil.rmtree(cache, ignore_errors=True)
    search(work, env_for(home, cache, False), QUERIES[0])  # builds the vector index
    first = search(work, env_for(home, cache, True), QUERIES[1])  # writes the cache entry
    old: list[dict[str, Any]] = []
    new: list[dict[str, Any]] = []
    for i in range(rounds):
        query = QUERIES[i % len(QUERIES)]
        order = [(False, old), (True, new)] if i % 2 == 0 else [(True, new), (False, old)]
        for on, into in order:
            into.append(search(work, env_for(home, cache, on), query))
    return {
        "cache_off": timing(old),
        "cache_on": timing(new),
        "first_search_writes_cache": first,
        "cpu_ratio_p50": round(timing(new)["cpu"]["p50"] / timing(old)["cpu"]["p50"], 3),
        "load_average": [round(x, 1) for x in os.getloadavg()],
    }


def markdown(results: dict[str, Any]) -> str:
    lines = [
        f"Machine: {results['machine']}. Date: {results['date']}. Wall time: "
        f"{results['wall_s'] / 60:.1f} min. {results['drawers']:,} drawers per palace, "
        f"{results['rounds']} rounds (one search with the cache off, one with it on, per round).",
        "",
        "| model | cache | wall s p50 / p95 | **CPU s p50** / p95 | peak RSS MiB |",
        "|---|---|---|---|---|",
    ]
    for name, r in results["models"].items():
        for label, key in (("off (old path)", "cache_off"), ("on", "cache_on")):
            t = r[key]
            lines.append(
                f"| {name} | {label} | {t['wall']['p50']:.2f} / {t['wall']['p95']:.2f} | "
                f"**{t['cpu']['p50']:.2f}** / {t['cpu']['p95']:.2f} | {t['peak_rss_mib']:.0f} |"
            )
    lines += [
        "",
        "| model | CPU on / off (p50) | first search after install (writes the cache): "
        "wall / CPU s | load average while measuring |",
        "|---|---|---|---|",
    ]
    for name, r in results["models"].items():
        f = r["first_search_writes_cache"]
        lines.append(
            f"| {name} | {r['cpu_ratio_p50']:.2f} | {f['seconds']:.2f} / {f['cpu_s']:.2f} | "
            f"{' / '.join(str(x) for x in r['load_average'])} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--drawers", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--models", default="use,minilm")
    ap.add_argument("--work", type=Path, help="keep the palaces here (reused when present)")
    ap.add_argument("--data", type=Path, default=BENCH)
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "startup.json")
    args = ap.parse_args()
    t0 = time.perf_counter()
    work_root = args.work or Path(tempfile.mkdtemp(prefix="mempalace-startup-"))
    pool = TurnPool(args.data)
    results: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, {platform.system()}",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": "python benchmarks/startup.py " + " ".join(sys.argv[1:]),
        "drawers": args.drawers,
        "rounds": args.rounds,
        "text_source": pool.source,
        "models": {},
    }
    try:
        for short in args.models.split(","):
            model = MODELS[short]
            work = work_root / f"{short}-{args.drawers}"
            if (work / "build.json").exists():
                built = json.loads((work / "build.json").read_text(encoding="utf-8"))
            else:
                shutil.rmtree(work, ignore_errors=True)
                built = build(work, model, args.drawers, pool)
                (work / "build.json").write_text(json.dumps(built), encoding="utf-8")
            print(f"measuring {model} ...", file=sys.stderr, flush=True)
            results["models"][model] = {"build": built, **measure(work, args.rounds)}
    finally:
        if args.work is None:
            shutil.rmtree(work_root, ignore_errors=True)
    results["wall_s"] = round(time.perf_counter() - t0, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    md = markdown(results)
    args.out.with_suffix(".md").write_text(md, encoding="utf-8")
    print(md)


if __name__ == "__main__":
    main()
