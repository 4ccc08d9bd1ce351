"""`mempalace mine DIR --watch`: mine once, then one line per batch until Ctrl+C / SIGTERM."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mempalace_cli.cli import mining  # each other's: import the module
from mempalace_cli.cli.env import Env, markup
from mempalace_cli.cli.mine_progress import MineProgress, stop_on_ctrl_c
from mempalace_cli.cli.secret_lines import batch_note
from mempalace_cli.cli.words import cli_words
from mempalace_cli.common.errors import MemPalaceError
from mempalace_cli.service.watch_loop import FolderWatcher, stop_on_signals

if TYPE_CHECKING:
    from mempalace_cli.service.mine_common import ConfirmMovesFn


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
        f"+{drawers['added']} -{drawers['removed']}{reused}{batch_note(report)}; "
        f"{report['elapsed_ms']} ms{rescan}"
    )


def watch_folder(
    env: Env,
    directory: Path,
    wing: str | None,
    agent: str | None,
    mode: str,
    poll: bool,
    json_output: bool,
    progress: MineProgress | None = None,
    confirm: ConfirmMovesFn | None = None,
    keep_secrets: bool = False,
) -> None:
    """Mine once (with `progress`; `confirm` is asked before drawers move out of another
    wing or mode), then watch. Ctrl+C during the first pass raises KeyboardInterrupt, as in
    `mine`; while watching, it stops after the batch in flight."""

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
            env.err.print(
                markup("[bold red]Error:[/] {} Retrying shortly.", cli_words(exc.message)),
                highlight=False,
            )
            if exc.hint:
                env.err.print(markup("[dim]Hint:[/] {}", cli_words(exc.hint)), highlight=False)

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
        keep_secrets=keep_secrets,
    )
    # Observe first, so nothing saved during the first pass is missed.
    kind = watcher.start()
    if progress is None:
        progress = MineProgress(mining.progress_console(env, json_output))
    try:
        try:
            with stop_on_ctrl_c(progress):
                report = palace.mine(
                    directory,
                    wing=wing,
                    agent=agent,
                    mode=mode,
                    progress=progress,
                    confirm_moves=confirm,
                    keep_secrets=keep_secrets,
                )
        finally:
            progress.stop()
    except BaseException:
        watcher.close()
        raise
    if json_output:
        _json_line({"event": "mine", **report, "observer": kind})
    else:
        mining.render_mine_report(env, report)
        env.err.print(
            markup("Watching {} ({}). Ctrl+C stops after the batch in flight.", watcher.root, kind),
            highlight=False,
        )
    with stop_on_signals(watcher):
        batches = watcher.run()
    if json_output:
        _json_line({"event": "stopped", "batches": batches})
    else:
        env.err.print(markup("Stopped watching after {} batches.", batches), highlight=False)
