"""What scoring long drawers by their passages, or reading a drawer with its neighbours, costs a
warm search (issue 27).

    python benchmarks/fusion_search_cost.py PALACE [--rounds 5] [--long 200] [--json OUT]
    python benchmarks/fusion_search_cost.py PALACE --neighbours [--all-chunks] [--json OUT]

One long-lived process opens PALACE the way search_profile.py does (the vector index kept in
memory, `Palace.search` in hybrid mode over scale.py's queries) and alternates rounds between

- **before**: passage scoring switched off in this process (no passage lookup in the exact
  rescoring, no distinct-drawer pool, no passages in the in-memory path): the search as it was
  before passage vectors, on a copy of the palace without any passage vectors;
- **after**: the search as it ships, on the palace as it is.

With `--long N` both copies first get N long drawers (LongMemEval-S dev sessions, user turns,
longer than PASSAGES_FROM; ../shared/bench) filed through `Palace.add_drawers` with the palace's
real model, so that the "after" copy holds their passage vectors and the "before" copy the
same drawers without them. Without it the palace is measured as it is (before and after then
search the same drawers; a palace of mined chunks has no passages). Prints p50 per stage (wall
and CPU ms) for both, and whether both return the same hits when the palace has no passages.

With `--neighbours` it compares reading a drawer with its neighbours instead (fusion.py
with_neighbours; before = switched off in this process, same palace), and with `--all-chunks`
on a copy in which every drawer is a chunk of a 20-chunk file (every candidate has neighbours).
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from scale import QUERIES  # noqa: E402
from search_profile import Stages, show, summarise, timed_round  # noqa: E402

BENCH = REPO.parent / "shared" / "bench"


def passages_off(enable: bool) -> None:
    """Switch passage scoring off (the search as before passage vectors) or back on."""
    from mempalace_cli.service import searching
    from mempalace_cli.storage import vector_index

    saved = "_passage_functions"
    if not hasattr(vector_index, saved):
        setattr(
            vector_index,
            saved,
            (vector_index.closest_passages, vector_index._distinct_pool, searching.unit_passages),
        )
    closest, pool, units = getattr(vector_index, saved)
    if enable:
        vector_index.closest_passages = lambda *a, **k: None  # type: ignore[assignment]
        vector_index._distinct_pool = lambda scores, rowids, best, n: best  # type: ignore[assignment]
        searching.unit_passages = lambda *a, **k: None  # type: ignore[assignment]
    else:
        vector_index.closest_passages = closest  # type: ignore[assignment]
        vector_index._distinct_pool = pool  # type: ignore[assignment]
        searching.unit_passages = units  # type: ignore[assignment]


def neighbours_off(off: bool) -> None:
    """Switch reading a drawer with its neighbours (fusion.with_neighbours) off in this
    process (the search as before it), or back on."""
    from mempalace_cli.search import fusion

    saved = "_shipped_use"
    if not hasattr(fusion, saved):
        setattr(fusion, saved, fusion.BY_MODEL[fusion.USE])
    shipped = getattr(fusion, saved)
    fusion.BY_MODEL[fusion.USE] = shipped.with_(neighbour_weight=0.0) if off else shipped


def all_chunks(palace: Path, work: Path, per_file: int = 20) -> Path:
    """A copy of `palace` in which every drawer is a part of a conversation of `per_file` chunks
    (the worst case for the neighbour step: every candidate has neighbours)."""
    from mempalace_cli.service import open_palace

    copy = work / "chunks"
    shutil.copytree(palace, copy)
    p = open_palace(str(copy))
    with p.catalog.transaction() as conn:
        conn.execute(
            "UPDATE drawers SET source_file = 'chat-' || (rowid / ?) || '.txt', "
            "chunk_index = rowid % ?, "
            "metadata = json_set(metadata, '$.ingest_mode', 'convos')",
            (per_file, per_file),
        )
    p.close()
    return copy


def long_sessions(n: int) -> list[str]:
    """The first `n` LongMemEval-S dev sessions (user turns) longer than PASSAGES_FROM."""
    from mempalace_cli.storage.passage_vectors import PASSAGES_FROM, text_size

    with lzma.open(BENCH / "longmemeval_s_dev50.json.xz", "rt", encoding="utf-8") as f:
        questions = json.load(f)
    out: list[str] = []
    for q in questions:
        for session in q["haystack_sessions"]:
            text = "\n".join(t["content"] for t in session if t["role"] == "user")
            if text_size(text) > PASSAGES_FROM and text not in out:
                out.append(text)
                if len(out) == n:
                    return out
    return out


def copies(palace: Path, n_long: int, work: Path) -> tuple[Path, Path]:
    """(before, after): copies of `palace` with the same `n_long` long drawers added, the
    "before" one without passage vectors (and its vector index rebuilt without them)."""
    from mempalace_cli.service import open_palace

    after = work / "after"
    shutil.copytree(palace, after)
    p = open_palace(str(after))
    texts = long_sessions(n_long)
    p.add_drawers([{"wing": "long", "room": "sessions", "content": t} for t in texts])
    held = p.catalog.conn.execute("SELECT count(*) FROM passages").fetchone()[0]
    print(f"{len(texts)} long drawers added, {held} passage vectors", file=sys.stderr)
    p.close()
    before = work / "before"
    shutil.copytree(after, before)
    p = open_palace(str(before))
    with p.catalog.transaction() as conn:
        conn.execute("DELETE FROM passages")
    shutil.rmtree(p.searching.vector_index().dir, ignore_errors=True)
    p.searching.vector_index().current()  # rebuilt without passage rows
    p.close()
    return before, after


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("palace", type=Path)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--long", type=int, default=0, help="long drawers to add to both copies")
    ap.add_argument("--json", type=Path, help="also write the summaries here")
    ap.add_argument(
        "--neighbours",
        action="store_true",
        help="compare the neighbour step instead (before = a drawer not read with its "
        "neighbours, fusion.with_neighbours, switched off in this process; same palace)",
    )
    ap.add_argument(
        "--all-chunks",
        action="store_true",
        help="with --neighbours: on a copy of the palace in which every drawer is a chunk of a "
        "20-chunk file (every candidate has neighbours)",
    )
    args = ap.parse_args(argv)
    switch = neighbours_off if args.neighbours else passages_off

    from mempalace_cli.service import open_palace

    work = Path(tempfile.mkdtemp(prefix="mp-passage-cost-"))
    try:
        if args.long:
            before_path, after_path = copies(args.palace, args.long, work)
        elif args.neighbours and args.all_chunks:
            before_path = after_path = all_chunks(args.palace, work)
        else:
            before_path = after_path = args.palace
        palaces = {"before": open_palace(str(before_path)), "after": open_palace(str(after_path))}
        for name, p in palaces.items():
            switch(name == "before")
            p.searching.vector_index().keep_in_memory()
            for q in QUERIES[:3]:
                p.search(q)
        stages = Stages()
        runs: dict[str, list[dict[str, Any]]] = {v: [] for v in palaces}
        for n in range(args.rounds):  # alternating, and which goes first alternates too
            order = list(palaces.items())
            for name, p in order if n % 2 == 0 else order[::-1]:
                switch(name == "before")
                runs[name] += timed_round(p, "hybrid", stages)
        switch(False)
        same = None
        if not args.long:
            found = {}
            for name, p in palaces.items():
                switch(name == "before")
                found[name] = [p.search(q)["results"] for q in QUERIES]
            switch(False)
            same = found["before"] == found["after"]
        drawers = palaces["after"].catalog.count()
        print(f"{drawers:,} drawers, {args.rounds} rounds of {len(QUERIES)} queries, alternating")
        summaries = {v: summarise(r) for v, r in runs.items()}
        for name, summary in summaries.items():
            show(f"{name}:", summary)
        whole = {v: statistics.median(r["whole"][0] for r in runs[v]) for v in runs}
        cpu = {v: statistics.median(r["whole"][1] for r in runs[v]) for v in runs}
        ratio, cpu_ratio = whole["after"] / whole["before"], cpu["after"] / cpu["before"]
        print(f"whole search p50, after / before: wall {ratio:.3f}, CPU {cpu_ratio:.3f}")
        if same is not None:
            print(f"same results before and after: {same}")
        if args.json:
            args.json.write_text(
                json.dumps(
                    {
                        "command": "python benchmarks/fusion_search_cost.py "
                        + " ".join(argv or sys.argv[1:]),
                        "drawers": drawers,
                        "long_drawers_added": args.long,
                        "compared": "neighbour step" if args.neighbours else "passages",
                        "every_drawer_a_chunk": bool(args.all_chunks),
                        "rounds": args.rounds,
                        "load": "{:.1f} / {:.1f} / {:.1f}".format(*os.getloadavg()),
                        "whole_p50_after_over_before": round(ratio, 3),
                        "whole_cpu_p50_after_over_before": round(cpu_ratio, 3),
                        "same_results": same,
                        **summaries,
                    },
                    indent=2,
                )
                + "\n",
                encoding="utf-8",
            )
        for p in palaces.values():
            p.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
