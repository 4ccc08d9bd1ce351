"""How the cost of hostile inputs grows with their size: chunking one long line, and walking
and checking a deep folder tree. Linear code doubles its time when the input doubles; the
ratios printed here (time at size N divided by time at size N/10 or N/2) are what to read,
not the seconds (the development machine is shared).

    python benchmarks/hostile_scaling.py   # prints a table; writes results/hostile_scaling.md

The "before" column runs the pre-fix algorithms (kept below only for this comparison) on the
same inputs in the same run, on the smaller sizes only: at 30 MB the old chunker took ~65 s.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mempalace_cli.miners.chunking import chunk_text  # noqa: E402
from mempalace_cli.miners.files import walk  # noqa: E402

_SPACE = re.compile(r"\s")


def old_split_long_line(line: str, limit: int = 800) -> list[str]:
    """The chunker's long-line split before the fix: it re-sliced the rest of the line per piece."""
    pieces, rest = [], line
    while len(rest) > limit:
        cut = -1
        for m in _SPACE.finditer(rest, 0, limit):
            cut = m.end()
        if cut <= limit // 4:
            cut = limit
        pieces.append(rest[:cut])
        rest = rest[cut:]
    if rest:
        pieces.append(rest)
    return pieces


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def deep_tree(base: Path, depth: int) -> Path:
    here = base
    for _ in range(depth):
        here = here / "d"
        here.mkdir()
    (here / "bottom.md").write_text("bottom\n")
    (base / ".gitignore").write_text("*.log\n")
    return here


def remove_deep(top: Path) -> None:
    stack = [top]
    while stack:
        here = stack[-1]
        entries = list(os.scandir(here))
        dirs = [Path(e.path) for e in entries if e.is_dir(follow_symlinks=False)]
        for e in entries:
            if not e.is_dir(follow_symlinks=False):
                os.unlink(e.path)
        if dirs:
            stack.extend(dirs)
        else:
            os.rmdir(here)
            stack.pop()


def main() -> None:
    rows = ["| input | size | now (s) | before (s) |", "|---|---|---|---|"]
    line = "lorem ipsum dolor sit amet " * 1_200_000
    now: dict[int, float] = {}
    for mb in (3, 30):
        text = line[: mb * 1_000_000]
        now[mb] = timed(lambda text=text: chunk_text(text))
        before = timed(lambda text=text: old_split_long_line(text)) if mb <= 3 else None
        rows.append(
            f"| one line | {mb} MB | {now[mb]:.2f} | {f'{before:.2f}' if before else 'not run'} |"
        )
    ratio_chunk = now[30] / now[3]
    walked: dict[int, float] = {}
    for depth in (750, 1500):
        with tempfile.TemporaryDirectory() as tmp:
            base = Path(tmp) / "t"
            base.mkdir()
            deep_tree(base, depth)
            walked[depth] = timed(lambda base=base: list(walk(base)))
            remove_deep(base)
        rows.append(f"| folder depth | {depth} | {walked[depth]:.2f} | - |")
    ratio_walk = walked[1500] / walked[750]
    rows.append("")
    rows.append(f"chunking 30 MB / 3 MB: {ratio_chunk:.1f}x (linear: 10x)")
    rows.append(
        f"walking depth 1500 / 750: {ratio_walk:.1f}x. Each folder's path, checked against the"
    )
    rows.append("gitignore rules, is itself as long as the depth: a single chain is O(depth^2)")
    rows.append("characters in all, so 4x per doubling is what a walker that checks paths costs.")
    rows.append("Before the fix the check was O(depth^3) (the issue measured > 5 min at 1,500).")
    rows.append('"before" for chunking is the pre-fix long-line split alone, on the same input.')
    out = "\n".join(rows)
    print(out)
    results = Path(__file__).resolve().parent / "results" / "hostile_scaling.md"
    results.write_text(
        "# Hostile-input scaling\n\n`python benchmarks/hostile_scaling.py`\n\n" + out + "\n"
    )


if __name__ == "__main__":
    main()
