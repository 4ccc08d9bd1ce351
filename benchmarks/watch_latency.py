"""Watch mode: how long from "file saved" to "searchable"?

Starts `mempalace mine DIR --watch --json` on a copy of examples/notes in a temporary palace,
then saves new notes one at a time and polls `Palace.search` in this process (a second
process, as an agent's MCP server would be) until each note's unique word is found.

    python benchmarks/watch_latency.py                # inotify, 10 saves
    python benchmarks/watch_latency.py --poll --saves 5 --json

The latency includes the watcher's debounce (0.5 s quiet per path), re-mining the file
(embedding its chunks) and the searching process noticing the write.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--saves", type=int, default=10, help="notes to save, one at a time")
    ap.add_argument("--poll", action="store_true", help="watch with the polling observer")
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    args = ap.parse_args()

    from mempalace_cli.common.config import resolve_settings
    from mempalace_cli.embedders.base import get_embedder
    from mempalace_cli.service import Palace

    get_embedder().ensure_loaded()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        folder, palace, home = base / "notes", base / "palace", base / "home"
        home.mkdir()
        shutil.copytree(REPO / "examples" / "notes", folder)
        env = {**os.environ, "MEMPALACE_HOME": str(home)}
        cmd = [
            sys.executable,
            "-m",
            "mempalace_cli",
            "--palace",
            str(palace),
            "mine",
            str(folder),
            "--watch",
            "--json",
            *(["--poll"] if args.poll else []),
        ]
        proc = subprocess.Popen(
            cmd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        lines: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(
            target=lambda: [lines.put(json.loads(x)) for x in proc.stdout], daemon=True
        ).start()
        first = lines.get(timeout=300)
        reader = Palace(resolve_settings(str(palace)))
        latencies: list[float] = []
        try:
            for i in range(args.saves):
                word = f"zyx{i:03d}quokka"
                note = folder / "inbox-latency" / f"note-{i}.md"
                note.parent.mkdir(exist_ok=True)
                time.sleep(1.0)  # let the previous batch settle
                saved = time.perf_counter()
                note.write_text(f"# Latency note {i}\n\nThe {word} ticket is ready for review.\n")
                while True:
                    hits = reader.search(f"{word} ticket", limit=3)["results"]
                    if any(h["source_file"] == str(note) for h in hits):
                        break
                    if time.perf_counter() - saved > 30:
                        raise SystemExit(f"note {i} not searchable after 30 s")
                    time.sleep(0.02)
                latencies.append(time.perf_counter() - saved)
        finally:
            reader.close()
            proc.terminate()
            proc.wait(timeout=30)
    result = {
        "observer": first.get("observer"),
        "saves": len(latencies),
        "median_s": round(statistics.median(latencies), 3),
        "max_s": round(max(latencies), 3),
        "min_s": round(min(latencies), 3),
        "initial_drawers": first["drawers"]["added"],
        "cpus": os.cpu_count(),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"observer {result['observer']}: saved -> searchable over {result['saves']} saves: "
            f"median {result['median_s']:.2f} s, min {result['min_s']:.2f} s, "
            f"max {result['max_s']:.2f} s (palace of {result['initial_drawers']} drawers, "
            f"{result['cpus']} CPUs)"
        )


if __name__ == "__main__":
    main()
