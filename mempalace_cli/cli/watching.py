"""`mempalace mine DIR --watch`: mine once, then one line per batch until Ctrl+C / SIGTERM."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from mempalace_cli.cli.env import Env
from mempalace_cli.errors import MemPalaceError


def _json_line(data: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def batch_line(report: dict[str, Any]) -> str:
    files, drawers = report["files"], report["drawers"]
    parts = [f"{files[k]} {k}" for k in ("mined", "moved", "removed") if files[k]]
    what = ", ".join(parts) or f"{report['paths']} paths checked, nothing changed"
    reused = (
        f" ({drawers['embeddings_reused']} vectors reused)"
        if drawers.get("embeddings_reused")
        else ""
    )
    rescan = " [full re-check]" if report.get("full_rescan") else ""
    return (
        f"{time.strftime('%H:%M:%S')}  batch {report['batch']}: {what}; drawers "
        f"+{drawers['added']} -{drawers['removed']}{reused}; {report['elapsed_ms']} ms{rescan}"
    )


def watch_folder(
    env: Env,
    directory: Path,
    wing: str | None,
    agent: str | None,
    mode: str,
    poll: bool,
    json_output: bool,
) -> None:
    from mempalace_cli.cli.mining import _MineProgress, render_mine_report
    from mempalace_cli.watch import FolderWatcher, stop_on_signals

    palace = env.palace()

    def on_batch(report: dict[str, Any]) -> None:
        if json_output:
            _json_line({"event": "batch", **report})
        else:
            env.out.print(batch_line(report), highlight=False)

    def on_start(info: dict[str, Any]) -> None:
        if json_output:  # people see the batch's line when it is done; programs see both
            _json_line({"event": "batch_start", **info})

    def on_error(exc: MemPalaceError) -> None:
        if json_output:
            _json_line({"event": "error", "error": exc.to_dict()})
        else:
            env.err.print(f"[bold red]Error:[/] {exc.message} Retrying shortly.", highlight=False)
            if exc.hint:
                env.err.print(f"[dim]Hint:[/] {exc.hint}", highlight=False)

    def on_repair(repair: dict[str, Any]) -> None:
        # The note itself goes to stderr from the core; --json also gets an event line.
        if json_output:
            _json_line({"event": "repair", **repair})

    watcher = FolderWatcher(
        palace,
        directory,
        wing=wing,
        agent=agent,
        mode=mode,
        poll=poll,
        on_batch=on_batch,
        on_error=on_error,
        on_start=on_start,
        on_repair=on_repair,
    )
    # Observe first, so nothing saved during the first pass is missed.
    kind = watcher.start()
    try:
        bar = _MineProgress(env) if env.err.is_terminal and not json_output else None
        try:
            report = palace.mine(directory, wing=wing, agent=agent, mode=mode, progress=bar)
        finally:
            if bar:
                bar.stop()
    except BaseException:
        watcher.close()
        raise
    if json_output:
        _json_line({"event": "mine", **report, "observer": kind})
    else:
        render_mine_report(env, report)
        env.err.print(
            f"Watching {watcher.root} ({kind}). Ctrl+C stops after the batch in flight.",
            highlight=False,
        )
    with stop_on_signals(watcher):
        batches = watcher.run()
    if json_output:
        _json_line({"event": "stopped", "batches": batches})
    else:
        env.err.print(f"Stopped watching after {batches} batches.", highlight=False)
