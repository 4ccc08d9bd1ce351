"""`mempalace init` and `mempalace mine`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from mempalace_cli.cli.env import JSON_HELP, Env, get_env, json_option, print_json
from mempalace_cli.errors import InvalidInputError


def init(
    ctx: typer.Context,
    directory: Path = typer.Argument(..., help="The folder to file into the palace."),
    wing: str = typer.Option(None, "--wing", help="Wing name (default: the folder's name)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Overwrite an existing mempalace.toml."),
    json_output: bool = json_option(JSON_HELP),
) -> None:
    """Detect rooms from DIRECTORY's layout, write DIRECTORY/mempalace.toml, create the palace."""
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
        table = Table("room", "keywords", box=None, pad_edge=False)
        for room in result["rooms"]:
            table.add_row(room["name"], ", ".join(room["keywords"]))
        out.print(table)
    else:
        out.print("No sub-folders found: every file will go to the room [cyan]general[/].")
    verb = "Created" if result["palace_created"] else "Using"
    out.print(f"{verb} the palace at {result['palace_path']}")
    out.print(f"Next: [bold]{result['next_step']}[/]")


class _MineProgress:
    """A rich progress bar on stderr, fed by the service's progress events."""

    def __init__(self, env: Env) -> None:
        self.progress = Progress(
            TextColumn("[bold]mining[/]"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("chunks"),
            TimeElapsedColumn(),
            TextColumn("{task.fields[current]}"),
            console=env.err,
            transient=True,
        )
        self.task: Any = None
        self.reading: Any = None  # an indeterminate bar while big files are read

    def __call__(self, event: str, data: dict[str, Any]) -> None:
        if event == "scan":
            if self.reading is None:
                self.progress.start()
                self.reading = self.progress.add_task("read", total=None, current="")
            self.progress.update(self.reading, current=f"reading {data['path'][-40:]}")
        elif event == "plan" and data["chunks"]:
            if self.reading is not None:
                self.progress.remove_task(self.reading)
            self.progress.start()
            self.task = self.progress.add_task("mine", total=data["chunks"], current="")
        elif event == "embedded" and self.task is not None:
            self.progress.advance(self.task, data["chunks"])
        elif event == "file" and self.task is not None:
            self.progress.update(self.task, current=data["path"][-40:])

    def stop(self) -> None:
        if self.task is not None or self.reading is not None:
            self.progress.stop()


def mine(
    ctx: typer.Context,
    directory: Path = typer.Argument(..., help="The folder to mine."),
    wing: str = typer.Option(None, "--wing", help="Wing to file into (default: from init)."),
    agent: str = typer.Option(None, "--agent", help="Recorded as added_by on each drawer."),
    mode: str = typer.Option(
        "projects", "--mode", help="What the folder holds: projects (files) or convos (chat logs)."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show what would change; write nothing."),
    limit: int = typer.Option(None, "--limit", min=1, help="Look at no more than N files."),
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
    and the drawers of deleted files are removed. With --watch, one line (or, with --json,
    one JSON line) per batch of changes follows.
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
    bar = _MineProgress(env) if env.err.is_terminal and not json_output else None
    try:
        report = env.palace().mine(
            directory,
            wing=wing,
            agent=agent,
            mode=mode,
            dry_run=dry_run,
            limit=limit,
            progress=bar,
        )
    finally:
        if bar:
            bar.stop()
    if json_output:
        print_json(report)
        return
    render_mine_report(env, report)


def render_mine_report(env: Env, report: dict[str, Any]) -> None:
    out = env.out
    files, drawers = report["files"], report["drawers"]
    title = "Dry run: nothing was written." if report["dry_run"] else "Mined"
    out.print(f"[bold]{title}[/] {report['directory']} into wing [cyan]{report['wing']}[/]")
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("files mined", str(files["mined"]))
    table.add_row("files unchanged", str(files["unchanged"]))
    table.add_row("files removed", str(files["removed"]))
    table.add_row("files skipped", str(files["skipped"]))
    table.add_row("drawers added", str(drawers["added"]))
    table.add_row("drawers removed", str(drawers["removed"]))
    table.add_row("elapsed", f"{report['elapsed_seconds']:.1f} s")
    out.print(table)
    if report["skipped"]:
        out.print("[dim]Skipped:[/]")
        for item in report["skipped"][:20]:
            out.print(f"  {item['file']}: {item['reason']}", highlight=False)
        if len(report["skipped"]) > 20:
            out.print(f"  ... and {len(report['skipped']) - 20} more (see --json)")
    if report["limited"]:
        out.print("[dim]--limit reached: files beyond it were not looked at, nothing removed.[/]")


def register(app: typer.Typer) -> None:
    app.command()(init)
    app.command()(mine)
