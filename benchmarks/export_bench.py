"""A ChatGPT export of about 200 MB, mined end to end with `mempalace mine --mode convos`.

    python benchmarks/export_bench.py                          # 200 MB, to completion
    python benchmarks/export_bench.py --size-mb 1              # the whole protocol, small
    python benchmarks/export_bench.py --max-minutes 60         # stop the first mine after 60 min

Steps (each a fresh `mempalace` process, real model, real Chroma):
1. export_gen.py writes conversations.json (--size-mb);
2. first mine: wall time, drawers/s, peak RSS (ru_maxrss of the process), and every --sample
   seconds the process' RSS against the drawers filed so far (is memory flat as it grows?);
3. re-mine of the same export: seconds, drawers added (should be 0);
4. the export grown by 1% (same conversations first, then new ones) mined again: drawers added
   against the new exchanges the generator wrote (only those should be embedded).
With --max-minutes the first mine is interrupted (SIGINT, as Ctrl-C) when the time is up:
what it filed stays filed; steps 3-4 are then skipped and the report says so.
Writes benchmarks/results/export_<size>mb.json and .md. Never commit the export itself.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from export_gen import write_export  # noqa: E402
from scale import BENCH, load  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def drawers_in(palace: Path) -> int:
    try:
        conn = sqlite3.connect(f"file:{palace / 'mempalace_index.sqlite3'}?mode=ro", uri=True)
        try:
            return conn.execute("SELECT COUNT(*) FROM drawers").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def mine(
    palace: Path, export: Path, home: Path, max_s: float | None, sample_s: float
) -> dict[str, Any]:
    """One `mempalace mine --mode convos` process, sampled; SIGINT after max_s seconds."""
    cmd = [sys.executable, "-m", "mempalace_cli", "--palace", str(palace), "mine", str(export)]
    cmd += ["--mode", "convos", "--wing", "chats", "--json"]
    env = {**os.environ, "MEMPALACE_HOME": str(home)}
    before = drawers_in(palace)
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
    )
    out: dict[str, bytes] = {}
    threads = [
        threading.Thread(target=lambda n=n, s=s: out.__setitem__(n, s.read()))
        for n, s in (("out", proc.stdout), ("err", proc.stderr))
    ]
    for t in threads:
        t.start()
    samples: list[dict[str, float]] = []
    interrupted = False
    next_sample = sample_s
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)  # its own rusage, when it ends
        if pid:
            break
        time.sleep(0.2)
        elapsed = time.perf_counter() - t0
        if elapsed < next_sample:
            continue
        next_sample += sample_s
        samples.append(
            {
                "s": round(elapsed, 1),
                "rss_mib": round(rss_mib(proc.pid), 1),
                "drawers": drawers_in(palace) - before,
            }
        )
        print(f"  {samples[-1]}", file=sys.stderr, flush=True)
        if max_s is not None and elapsed > max_s and not interrupted:
            proc.send_signal(signal.SIGINT)
            interrupted = True
    seconds = time.perf_counter() - t0
    proc.returncode = code = os.waitstatus_to_exitcode(status)
    for t in threads:
        t.join()
    added = drawers_in(palace) - before
    report: dict[str, Any] = {}
    if code == 0:
        try:
            report = json.loads(out.get("out", b"{}") or b"{}")
        except ValueError:
            report = {}
    elif not interrupted:
        raise RuntimeError(f"mine failed ({code}): {out.get('err', b'')[-3000:].decode()}")
    peak = usage.ru_maxrss / 1024
    return {
        "seconds": round(seconds, 1),
        "drawers_added": added,
        "drawers_per_s": round(added / seconds, 2) if seconds else None,
        "peak_rss_mib": round(peak, 1),
        "completed": code == 0,
        "interrupted_after_s": round(max_s, 0) if interrupted else None,
        "report_drawers": (report.get("drawers") or {}).get("added"),
        "samples": samples,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--size-mb", type=float, default=200.0)
    ap.add_argument("--grow", type=float, default=0.01)
    ap.add_argument("--max-minutes", type=float, help="interrupt the first mine after this")
    ap.add_argument("--sample", type=float, default=10.0, help="seconds between RSS samples")
    ap.add_argument("--data", type=Path, default=BENCH)
    ap.add_argument("--work", type=Path, help="default: a temporary folder, removed after")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    started = time.perf_counter()
    work = args.work or Path(tempfile.mkdtemp(prefix="mp-export-"))
    export, palace, home = work / "export", work / "palace", work / "home"
    home.mkdir(parents=True, exist_ok=True)
    gen = write_export(export, args.size_mb, 0.0, args.data)
    print(f"export: {gen}", file=sys.stderr, flush=True)
    results: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{os.cpu_count()} cores",
        "export": gen,
        "load_at_start": load(),
    }
    max_s = args.max_minutes * 60 if args.max_minutes else None
    first = mine(palace, export, home, max_s, args.sample)
    results["first_mine"] = first
    if first["completed"]:
        results["remine_same"] = mine(palace, export, home, None, 2.0)
        grown = write_export(export, args.size_mb, args.grow, args.data)
        results["grown_export"] = grown
        results["remine_grown"] = mine(palace, export, home, None, 2.0)
        results["remine_grown"]["new_exchanges"] = grown["exchanges"] - gen["exchanges"]
    else:
        results["not_run"] = (
            "re-mine of the same and of the grown export: the first mine was stopped after "
            f"{args.max_minutes} min"
        )
    results["load_at_end"] = load()
    results["wall_s"] = round(time.perf_counter() - started, 1)
    tag = f"{args.size_mb:g}mb"
    out = args.out or REPO / "benchmarks" / "results" / f"export_{tag}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(results), encoding="utf-8")
    print(markdown(results))
    if not args.work:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return 0


def markdown(r: dict[str, Any]) -> str:
    g, f = r["export"], r["first_mine"]
    lines = [
        f"Date: {r['date']}. Machine: {r['machine']}. Wall time: {r['wall_s'] / 60:.1f} min. "
        f"Load (1/5/15 min) at start {r['load_at_start']}, at end {r['load_at_end']}.",
        "",
        f"Export: {g['bytes'] / 1e6:.1f} MB, {g['conversations']:,} conversations, "
        f"{g['exchanges']:,} exchanges ({g['text_source']}).",
        "",
        "| step | seconds | drawers added | drawers/s | peak RSS MiB |",
        "|---|---|---|---|---|",
        f"| first mine{' (stopped)' if not f['completed'] else ''} | {f['seconds']} | "
        f"{f['drawers_added']:,} | {f['drawers_per_s']} | {f['peak_rss_mib']} |",
    ]
    for key, label in (("remine_same", "re-mine, same export"), ("remine_grown", "re-mine, +1%")):
        if key in r:
            s = r[key]
            lines.append(
                f"| {label} | {s['seconds']} | {s['drawers_added']:,} | - | {s['peak_rss_mib']} |"
            )
    if "remine_grown" in r:
        lines += ["", f"New exchanges in the grown export: {r['remine_grown']['new_exchanges']}."]
    if r.get("not_run"):
        lines += ["", f"Not run: {r['not_run']}."]
    samples = f["samples"]
    if samples:
        pick = samples[:: max(1, len(samples) // 8)] + samples[-1:]
        lines += ["", "RSS while the first mine ran:", "", "| s | drawers | RSS MiB |"]
        lines += ["|---|---|---|"]
        lines += [f"| {s['s']} | {s['drawers']:,} | {s['rss_mib']} |" for s in pick]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
