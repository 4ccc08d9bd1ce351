"""Palace graph at scale: build, traverse, tunnels, stats and export over N drawers.

The graph is built from drawer metadata in the catalogue only, so the benchmark fills a
temporary palace's catalogue with N synthetic drawer rows directly (no embedding needed) and
times each graph call through the real service, as the CLI and MCP server call it.

    python benchmarks/graph_bench.py                 # 100,000 drawers
    python benchmarks/graph_bench.py --drawers 20000 --wings 10 --rooms 200 --json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mempalace_cli.common.config import resolve_settings
from mempalace_cli.service import Palace
from mempalace_cli.storage.catalog import Catalog


def fill_catalogue(palace: Path, drawers: int, wings: int, rooms: int, seed: int) -> None:
    """N drawer rows spread over `wings` wings, each wing holding a random subset of `rooms`
    room names, so many names are shared (tunnels)."""
    rng = random.Random(seed)
    room_names = [f"room_{i:04d}" for i in range(rooms)]
    per_wing = max(1, rooms // 10)
    layout = [(f"wing_{w:03d}", rng.sample(room_names, per_wing)) for w in range(wings)]
    catalog = Catalog(palace)
    with catalog.transaction() as conn:
        rows = []
        for i in range(drawers):
            wing, wing_rooms = layout[i % wings]
            room = wing_rooms[rng.randrange(len(wing_rooms))]
            rows.append(
                (
                    f"drawer_{wing}_{room}_{i:016x}",
                    wing,
                    room,
                    f"notes/{i}.md",
                    0,
                    "2026-01-01T00:00:00+00:00",
                    f"drawer {i}",
                    "{}",
                )
            )
        conn.executemany(
            "INSERT INTO drawers(id, wing, room, source_file, chunk_index, filed_at, text, "
            "metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
    catalog.close()


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    """(first call, best of `repeat`) in milliseconds, and the last result."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - start) * 1000)
    return round(times[0], 1), round(min(times), 1), result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--drawers", type=int, default=100_000)
    parser.add_argument("--wings", type=int, default=40)
    parser.add_argument("--rooms", type=int, default=600)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="Print one JSON document.")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="mempalace-graph-bench-") as tmp:
        palace_dir = Path(tmp) / "palace"
        start = time.perf_counter()
        fill_catalogue(palace_dir, args.drawers, args.wings, args.rooms, args.seed)
        fill_s = time.perf_counter() - start
        settings = resolve_settings(palace=str(palace_dir), home=Path(tmp) / "home")
        palace = Palace(settings)
        stats = palace.graph_stats()
        start_room = stats["top_tunnels"][0]["room"]
        calls: dict[str, Callable[[], Any]] = {
            "build graph": palace.navigation.palace_graph,
            "graph_stats": palace.graph_stats,
            "traverse (2 hops)": lambda: palace.traverse(start_room, max_hops=2),
            "find_tunnels": palace.find_tunnels,
            "export dot": lambda: palace.export_graph("dot"),
            "export mermaid": lambda: palace.export_graph("mermaid"),
        }
        timings = {}
        for name, fn in calls.items():
            first, best, result = timed(fn, args.repeat)
            timings[name] = {"first_ms": first, "best_ms": best}
            if name.startswith("traverse"):
                timings[name]["rooms_reached"] = result["count"]
        palace.close()
        # End to end: a fresh `mempalace traverse` process, start-up included.
        cli = [sys.executable, "-m", "mempalace_cli", "--palace", str(palace_dir), "traverse"]
        env = {**os.environ, "MEMPALACE_HOME": str(Path(tmp) / "home")}
        for name, extra in (("cli traverse", [start_room]), ("cli --stats", ["--stats"])):
            first, best, _ = timed(
                lambda extra=extra: subprocess.run(
                    [*cli, *extra, "--json"], env=env, check=True, capture_output=True
                ),
                args.repeat,
            )
            timings[name] = {"first_ms": first, "best_ms": best}
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("chromadb", "onnxruntime"))

    report = {
        "drawers": args.drawers,
        "wings": stats["wings"],
        "rooms": stats["rooms"],
        "tunnels": stats["tunnels"],
        "edges": stats["edges"],
        "catalogue_fill_s": round(fill_s, 2),
        "timings": timings,
        "heavy_modules_loaded": heavy,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(
        f"palace graph over {args.drawers:,} drawers: {stats['wings']} wings, "
        f"{stats['rooms']} rooms, {stats['tunnels']} tunnels, {stats['edges']} tunnel edges"
    )
    print(f"(synthetic catalogue filled in {fill_s:.1f} s; best of {args.repeat} runs)")
    for name, t in timings.items():
        print(f"  {name:<18} first {t['first_ms']:>7.1f} ms   best {t['best_ms']:>7.1f} ms")
    print(f"chromadb/onnxruntime loaded: {', '.join(heavy) or 'no'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
