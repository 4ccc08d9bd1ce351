"""A warm search now against the same search at an earlier commit (issue 27's budget: "the warm
search cost stays within 10 % of today's", today being the commit the issue was filed on).

    python benchmarks/search_against.py PALACE [--commit 8015749] [--pairs 6] [--rounds 4]
                                        [--all-chunks] [--json OUT]

The earlier commit's tree is taken with `git archive` into a temporary folder. Each pair runs
`benchmarks/search_profile.py --rounds R` twice in fresh processes, once with this checkout and
once with that tree (each its own code and its own search_profile.py), each on its own copy of
PALACE (a version may add catalogue indexes to a palace it opens), which goes first alternating
pair by pair. The figure is the whole search's p50 (wall and CPU), now / then, per pair and
the median over pairs.

With `--all-chunks` both copies are first made a palace of chats: every drawer a part of a
20-part conversation (fusion_search_cost.py's `all_chunks`), the case where reading a turn with
its neighbours (fusion.with_neighbours) runs for every candidate.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

FILED_ON = "8015749"  # main when issue 27 was filed (2026-12-03 07:35)


def profile(tree: Path, palace: Path, rounds: int, out: Path) -> dict[str, float]:
    """One fresh-process run of `tree`'s search_profile.py on `palace`: the whole search's p50."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    subprocess.run(
        [sys.executable, "benchmarks/search_profile.py", str(palace), "--rounds", str(rounds)]
        + ["--json", str(out)],
        cwd=tree,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    whole = json.loads(out.read_text(encoding="utf-8"))["now"]["whole"]
    return {"wall": whole["wall_ms_p50"], "cpu": whole["cpu_ms_p50"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("palace", type=Path)
    ap.add_argument("--commit", default=FILED_ON, help=f"the earlier commit (default {FILED_ON})")
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=4, help="search_profile.py rounds per run")
    ap.add_argument("--all-chunks", action="store_true", help="on a palace of chats (see above)")
    ap.add_argument("--json", type=Path, help="also write the result here")
    args = ap.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="mp-search-against-"))
    try:
        then_tree = work / "then"
        then_tree.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", args.commit], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(then_tree)], input=archive, check=True)
        palace = args.palace
        if args.all_chunks:
            from fusion_search_cost import all_chunks

            palace = all_chunks(args.palace, work)
        trees = {"now": REPO, "then": then_tree}
        copies = {}
        for name in trees:
            copies[name] = work / f"palace-{name}"
            shutil.copytree(palace, copies[name])
        pairs: list[dict[str, Any]] = []
        for n in range(args.pairs):
            order = ["now", "then"] if n % 2 == 0 else ["then", "now"]
            got = {v: profile(trees[v], copies[v], args.rounds, work / f"{v}.json") for v in order}
            pair = {
                **{f"{v}_{k}_ms": got[v][k] for v in got for k in ("wall", "cpu")},
                "wall_ratio": round(got["now"]["wall"] / got["then"]["wall"], 3),
                "cpu_ratio": round(got["now"]["cpu"] / got["then"]["cpu"], 3),
            }
            pairs.append(pair)
            print(
                f"pair {n + 1}: now {got['now']['cpu']:.2f} ms CPU, then {got['then']['cpu']:.2f}"
                f" ms CPU: {pair['cpu_ratio']:.3f} (wall {pair['wall_ratio']:.3f})",
                flush=True,
            )
        wall = statistics.median(p["wall_ratio"] for p in pairs)
        cpu = statistics.median(p["cpu_ratio"] for p in pairs)
        print(f"whole search p50, now / {args.commit}, median of {len(pairs)} pairs: ")
        print(f"  CPU {cpu:.3f}, wall {wall:.3f}")
        if args.json:
            result = {
                "command": "python benchmarks/search_against.py " + " ".join(argv or sys.argv[1:]),
                "commit": args.commit,
                "every_drawer_a_chunk": args.all_chunks,
                "rounds_per_run": args.rounds,
                "load": "{:.1f} / {:.1f} / {:.1f}".format(*os.getloadavg()),
                "median_cpu_ratio": cpu,
                "median_wall_ratio": wall,
                "pairs": pairs,
            }
            args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
