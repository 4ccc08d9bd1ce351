"""`mempalace init` and `mempalace mine`."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from mempalace_cli.cli.env import (
    EXIT_INTERRUPTED,
    JSON_HELP,
    Env,
    escape,
    get_env,
    json_option,
    print_json,
)
from mempalace_cli.errors import InvalidInputError

if TYPE_CHECKING:
    from rich.console import Console


def init(
    ctx: typer.Context,
    directory: Path = typer.Argument(
        ..., metavar="DIRECTORY", help="The folder to file into the palace."
    ),
    wing: str = typer.Option(
        None, "--wing", metavar="WING", help="Wing name (default: the folder's name)."
    ),
    yes: bool = typer.Option(False, "--yes", "-y", help="Overwrite an existing mempalace.toml."),
    json_output: bool = json_option(JSON_HELP),
) -> None:
    """Detect rooms from DIRECTORY's layout, write DIRECTORY/mempalace.toml, create the palace.

    Example: mempalace init ~/notes --wing notes
    """
    env = get_env(ctx)
    overwrite = yes
    if not yes and (directory / "mempalace.toml").exists() and env.interactive and not json_output:
        overwrite = typer.confirm(
            f"{directory / 'mempalace.toml'} exists. Replace it with freshly detected rooms?",
            default=False,
        )
    result = env.palace().init_project(directory, wing=wing, overwrite=overwrite)
    if json_output:
        print_json(result)
        return
    out = env.out
    if result["config_written"]:
        out.print(f"Wrote [bold]{result['project_file']}[/]")
    else:
        out.print(
            f"Kept the existing [bold]{result['project_file']}[/] (pass --yes to replace it)."
        )
    out.print(f"Wing: [cyan]{result['wing']}[/]")
    if result["rooms"]:
        from rich.table import Table

        table = Table("room", "keywords", box=None, pad_edge=False)
        for room in result["rooms"]:
            table.add_row(room["name"], ", ".join(room["keywords"]))
        out.print(table)
    else:
        out.print("No sub-folders found: every file will go to the room [cyan]general[/].")
    verb = "Created" if result["palace_created"] else "Using"
    out.print(f"{verb} the palace at {result['palace_path']}")
    out.print(f"Next: [bold]{result['next_step']}[/]")


def mine(
    ctx: typer.Context,
    directory: Path = typer.Argument(..., metavar="DIRECTORY", help="The folder to mine."),
    wing: str = typer.Option(
        None, "--wing", metavar="WING", help="Wing to file into (default: from init)."
    ),
    agent: str = typer.Option(
        None, "--agent", metavar="NAME", help="Recorded as added_by on each drawer."
    ),
    mode: str = typer.Option(
        "projects",
        "--mode",
        metavar="projects|convos",
        help="What the folder holds: projects (files) or convos (chat logs).",
    ),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="List each file it would add, change, skip (with the reason) or remove; "
        "write nothing.",
    ),
    limit: int = typer.Option(
        None, "--limit", metavar="N", min=1, help="Look at no more than N files."
    ),
    watch: bool = typer.Option(
        False, "--watch", help="Then keep the palace in step with DIRECTORY until Ctrl+C."
    ),
    poll: bool = typer.Option(
        False, "--poll", help="With --watch: poll for changes instead of using inotify."
    ),
    json_output: bool = json_option(JSON_HELP),
) -> None:
    """File every text, code and document file of DIRECTORY into the palace.

    Incremental: unchanged files are skipped without embedding, changed files are replaced,
    and the drawers of deleted files are removed. On a terminal, progress shows files and
    drawers with a rate and an ETA; Ctrl+C keeps what was filed (exit status 130) and the same
    command resumes. With --watch, one line (or, with --json, one JSON line) per batch of
    changes follows.

    Example: mempalace mine ~/notes --dry-run
    """
    env = get_env(ctx)
    if poll and not watch:
        raise InvalidInputError("--poll only applies to --watch.", hint="Add --watch.")
    if watch:
        if dry_run or limit:
            raise InvalidInputError("--watch can't be combined with --dry-run or --limit.")
        from mempalace_cli.cli.watching import watch_folder

        watch_folder(env, directory, wing, agent, mode, poll, json_output)
        return
    # Imported here: its columns subclass rich's, and rich is slow to import (see Env).
    from mempalace_cli.cli.mine_progress import MineProgress

    progress = MineProgress(progress_console(env, json_output))
    try:
        report = env.palace().mine(
            directory,
            wing=wing,
            agent=agent,
            mode=mode,
            dry_run=dry_run,
            limit=limit,
            progress=progress,
        )
    except KeyboardInterrupt:
        progress.stop()
        message = progress.interrupted_message(shlex.quote(str(directory)))
        if json_output:
            tally = progress.tally
            kept = {"files": tally.files_filed, "drawers": tally.drawers_filed}
            what, resume = message.split("\n", 1)
            print_json({"error": {"message": what, "hint": resume, "kind": "interrupted"},
                        "kept": kept})  # fmt: skip
        else:
            from rich.console import Console

            Console(stderr=True, soft_wrap=True).print(message, highlight=False)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    finally:
        progress.stop()
    if json_output:
        print_json(report)
        return
    render_mine_report(env, report)


def progress_console(env: Env, json_output: bool) -> Console | None:
    """Where progress is drawn: stderr when it is a terminal, unless --json or --quiet."""
    if json_output or env.quiet or not env.err.is_terminal:
        return None
    return env.err


def render_mine_report(env: Env, report: dict[str, Any]) -> None:
    from rich.table import Table

    out = env.out
    files, drawers = report["files"], report["drawers"]
    title = "Dry run: nothing was written." if report["dry_run"] else "Mined"
    out.print(f"[bold]{title}[/] {report['directory']} into wing [cyan]{report['wing']}[/]")
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    would = "to " if report["dry_run"] else ""
    table.add_row(f"files {would or ''}mine" if would else "files mined", str(files["mined"]))
    table.add_row("files unchanged", str(files["unchanged"]))
    table.add_row(f"files {would}remove" if would else "files removed", str(files["removed"]))
    table.add_row("files skipped", str(files["skipped"]))
    table.add_row(f"drawers {would}add" if would else "drawers added", str(drawers["added"]))
    table.add_row(f"drawers {would}remove" if would else "drawers removed", str(drawers["removed"]))
    table.add_row("elapsed", f"{report['elapsed_seconds']:.1f} s")
    if "plan" in report:
        render_plan(env, report["plan"])
    out.print(table)
    if report["skipped"] and "plan" not in report:
        out.print("[dim]Skipped:[/]")
        for item in report["skipped"][:20]:
            out.print(f"  {item['file']}: {item['reason']}", highlight=False)
        if len(report["skipped"]) > 20:
            out.print(f"  ... and {len(report['skipped']) - 20} more (see --json)")
    if report["limited"]:
        out.print("[dim]--limit reached: files beyond it were not looked at, nothing removed.[/]")


ACTION_STYLE = {"add": "green", "change": "yellow", "skip": "dim", "remove": "red"}


def render_plan(env: Env, plan: list[dict[str, Any]]) -> None:
    """One line per file: action, path (relative to the folder), drawers and the reason."""
    for entry in plan:
        action = entry["action"]
        count = entry["drawers"]
        drawers = f"{count} drawer{'' if count == 1 else 's'}, " if action != "skip" else ""
        env.out.print(
            f"  [{ACTION_STYLE.get(action, '')}]{action:<6}[/]  {escape(entry['file'])}"
            f"  [dim]({drawers}{escape(entry['reason'])})[/]",
            highlight=False,
            soft_wrap=True,
        )
    if not plan:
        env.out.print("  Nothing to add, change or remove.")


def register(app: typer.Typer) -> None:
    app.command()(init)
    app.command()(mine)
