"""`mempalace init` and `mempalace mine`."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from mempalace_cli.cli.env import EXIT_INTERRUPTED, Env, escape, get_env, markup, print_json
from mempalace_cli.cli.mine_progress import MineProgress, stop_on_ctrl_c
from mempalace_cli.cli.options import argument, flag, json_option, option
from mempalace_cli.cli.secret_lines import KEEP_SECRETS_HELP, render_secrets
from mempalace_cli.cli.tables import make_table
from mempalace_cli.cli.watching import watch_folder
from mempalace_cli.common.errors import InvalidInputError
from mempalace_cli.common.lazy import lazy
from mempalace_cli.service.mine_common import MoveDeclined, describe_displaced

if TYPE_CHECKING:
    from rich.console import Console

    from mempalace_cli.cli.mine_progress import MineProgress
    from mempalace_cli.service.mine_common import ConfirmMovesFn

rich_console = lazy("rich.console")
rich_table = lazy("rich.table")


def init(
    ctx: typer.Context,
    directory: Path = argument("DIRECTORY", "The folder to file into the palace."),
    wing: str = option("--wing", "WING", "Wing name (default: the folder's name)."),
    yes: bool = flag("--yes", "Overwrite an existing mempalace.toml.", "-y"),
    json_output: bool = json_option(),
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
        out.print(markup("Wrote [bold]{}[/]", result["project_file"]))
    else:
        out.print(
            markup(
                "Kept the existing [bold]{}[/] (pass --yes to replace it).", result["project_file"]
            )
        )
    out.print(markup("Wing: [cyan]{}[/]", result["wing"]))
    if result["rooms"]:
        table = make_table("room", "keywords")
        for room in result["rooms"]:
            table.add_row(markup("{}", room["name"]), markup("{}", ", ".join(room["keywords"])))
        out.print(table)
    else:
        out.print("No sub-folders found: every file will go to the room [cyan]general[/].")
    verb = "Created" if result["palace_created"] else "Using"
    out.print(markup("{} the palace at {}", verb, result["palace_path"]))
    out.print(markup("Next: [bold]{}[/]", for_this_palace(env, result["next_step"])))


def mine(
    ctx: typer.Context,
    directory: Path = argument("PATH", "The folder to mine, or one file of it."),
    wing: str = option("--wing", "WING", "Wing to file into (default: from init)."),
    agent: str = option("--agent", "NAME", "Recorded as added_by on each drawer."),
    mode: str = option(
        "--mode",
        "projects|convos",
        "What the folder holds: projects (files) or convos (chat logs).",
        default="projects",
    ),
    dry_run: bool = flag(
        "--dry-run",
        "List each file it would add, change, skip (with the reason) or remove; write nothing.",
    ),
    limit: int = option("--limit", "N", "Look at no more than N files.", min=1),
    watch: bool = flag("--watch", "Then keep the palace in step with DIRECTORY until Ctrl+C."),
    poll: bool = flag("--poll", "With --watch: poll for changes instead of using inotify."),
    yes: bool = flag(
        "--yes",
        "Move drawers out of the wing or mode the folder was mined into before without "
        "asking (needed off a terminal).",
        "-y",
    ),
    keep_secrets: bool = flag("--keep-secrets", KEEP_SECRETS_HELP),
    json_output: bool = json_option(),
) -> None:
    """File every text, code and document file of a folder (or one file) into the palace.

    Incremental: unchanged files are skipped without embedding, changed files are replaced,
    and the drawers of deleted files are removed. One file is mined into the wing its folder
    is mined into (its mempalace.toml's, else the folder's name), and only its own drawers
    change. Re-mining into another --wing or --mode moves the drawers filed before: it says so
    and asks first (off a terminal it needs --yes). On a terminal, progress shows files and
    drawers with a rate and an ETA; Ctrl+C keeps what was filed (exit status 130) and prints
    the command that resumes. With --watch, one line (or, with --json, one JSON line) per batch
    of changes follows.

    Example: mempalace mine ~/notes --dry-run
    """
    env = get_env(ctx)
    if poll and not watch:
        raise InvalidInputError("--poll only applies to --watch.", hint="Add --watch.")
    if watch and (dry_run or limit):
        raise InvalidInputError("--watch can't be combined with --dry-run or --limit.")
    if watch and directory.expanduser().is_file():
        raise InvalidInputError(
            f"--watch watches a folder, and {directory} is a file.",
            hint="Watch its folder, or mine the file alone without --watch.",
        )
    options = _flags(
        ("--wing", wing), ("--agent", agent), ("--mode", None if mode == "projects" else mode),
        ("--limit", limit), ("--dry-run", dry_run), ("--watch", watch), ("--poll", poll),
        ("--yes", yes), ("--keep-secrets", keep_secrets), ("--json", json_output),
    )  # fmt: skip
    resume = resume_command(env, directory, options)
    # Imported here: rich is slow to import (see Env), and the service with it.

    progress = MineProgress(progress_console(env, json_output))
    confirm = move_confirmation(env, yes, json_output)
    try:
        if watch:
            watch_folder(
                env, directory, wing, agent, mode, poll, json_output, progress, confirm,
                keep_secrets=keep_secrets,
            )  # fmt: skip
            return
        with stop_on_ctrl_c(progress):
            report = env.palace().mine(
                directory,
                wing=wing,
                agent=agent,
                mode=mode,
                dry_run=dry_run,
                limit=limit,
                progress=progress,
                confirm_moves=confirm,
                keep_secrets=keep_secrets,
            )
    except KeyboardInterrupt:
        progress.stop()
        report_interrupted(progress, resume, json_output)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except MoveDeclined:
        progress.stop()
        env.out.print("Nothing was mined: the drawers stay where they were.", highlight=False)
        return
    finally:
        progress.stop()
    if json_output:
        print_json(report)
        return
    render_mine_report(env, report)


def _flags(*pairs: tuple[str, Any]) -> list[str]:
    """Command-line words for the options given: a flag for True, flag and value otherwise."""
    words: list[str] = []
    for name, value in pairs:
        if value is True:
            words.append(name)
        elif value is not None and value is not False:
            words += [name, str(value)]
    return words


def _palace_flags(env: Env) -> list[str]:
    """The global options that chose this palace (and --quiet), as given."""
    return _flags(
        ("--palace", env.palace_option),
        ("--chroma-url", env.chroma_url),
        ("--chroma-token", env.chroma_token),
        ("--chroma-ca-file", env.chroma_ca_file),
        ("--chroma-database", env.chroma_database),
        ("--quiet", env.quiet),
    )


def resume_command(env: Env, directory: Path, options: list[str]) -> str:
    """The command that carries on an interrupted `mine`, shell-quoted and ready to paste: the
    same palace options (where the drawers went), the same folder and options."""
    return shlex.join(["mempalace", *_palace_flags(env), "mine", str(directory), *options])


_SUGGESTED = re.compile(r"\bmempalace (?=(?:mine|search|status|init)\b)")


def for_this_palace(env: Env, text: str) -> str:
    """`text` with every suggested `mempalace mine|search|status|init ...` command aimed at
    the palace this one used: following a "Next:" line must not file into the default palace."""
    flags = [f for f in _palace_flags(env) if f != "--quiet"]
    if not flags:
        return text
    return _SUGGESTED.sub(lambda _: "mempalace " + shlex.join(flags) + " ", text)


def report_interrupted(progress: MineProgress, resume: str, json_output: bool) -> None:
    message = progress.interrupted_message(resume)
    if json_output:
        tally = progress.tally
        kept = {"files": tally.files_filed, "drawers": tally.drawers_filed}
        what, hint = message.split("\n", 1)
        print_json({"error": {"message": what, "hint": hint, "kind": "interrupted"},
                    "kept": kept})  # fmt: skip
    else:
        # Plain text: a folder named like markup ("[notes]") is printed as it is.
        console = rich_console.Console(stderr=True, soft_wrap=True, emoji=False)
        console.print(message, highlight=False, markup=False)


def move_confirmation(env: Env, yes: bool, json_output: bool) -> ConfirmMovesFn:
    """Asked by the service before drawers move out of another wing or mode: yes with --yes;
    on a terminal, the person says; otherwise the run is refused, saying what to do."""

    def confirm(move: dict[str, Any]) -> bool:
        if yes:
            return True
        what = describe_displaced(move["displaced"], move["wing"], move["mode"])
        text = f"Mining {move['directory']} moves what was filed from it before: {what}."
        if json_output or not env.interactive:
            first = move["displaced"][0]
            keep = (
                f"--wing {first['wing']}"
                if first["wing"] != move["wing"]
                else f"--mode {first['mode']}"
            )
            raise InvalidInputError(
                f"{text} Nothing was mined: moving them needs confirmation.",
                hint=f"Add --yes to move them, or mine with {keep} to keep them where they are "
                "(--dry-run lists each file).",
            )
        env.err.print(escape(text), highlight=False, soft_wrap=True)
        return typer.confirm("Move them?", default=False)

    return confirm


def progress_console(env: Env, json_output: bool) -> Console | None:
    """Where progress is drawn: stderr when it is a terminal, unless --json or --quiet."""
    if json_output or env.quiet or not env.err.is_terminal:
        return None
    return env.err


def render_mine_report(env: Env, report: dict[str, Any]) -> None:
    out = env.out
    files, drawers = report["files"], report["drawers"]
    title, wing = "Dry run: nothing was written." if report["dry_run"] else "Mined", report["wing"]
    out.print(markup("[bold]{}[/] {} into wing [cyan]{}[/]", title, report["directory"], wing))
    table = rich_table.Table(box=None, show_header=False, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    would = "to " if report["dry_run"] else ""
    table.add_row("files to mine" if would else "files mined", str(files["mined"]))
    table.add_row("files unchanged", str(files["unchanged"]))
    table.add_row("files to remove" if would else "files removed", str(files["removed"]))
    table.add_row("files skipped", str(files["skipped"]))
    for key, verb in (("added", "add"), ("replaced", "replace"), ("removed", "remove")):
        table.add_row("drawers " + (would + verb if would else key), str(drawers.get(key, 0)))
    table.add_row("drawers unchanged", str(drawers.get("unchanged", 0)))
    table.add_row("elapsed", markup("{:.1f} s", report["elapsed_seconds"]))
    if "plan" in report:
        render_plan(env, report["plan"])
    out.print(table)
    if report.get("displaced"):
        what = describe_displaced(report["displaced"], report["wing"], report["mode"])
        verb = "Would move" if report["dry_run"] else "Moved"
        out.print(markup("{} {}.", verb, what), highlight=False, soft_wrap=True)
    if report.get("hint"):
        note = for_this_palace(env, report["hint"])
        env.err.print(markup("[bold]Note:[/] {}", note), highlight=False, soft_wrap=True)
    if report["skipped"] and "plan" not in report:
        out.print("[dim]Skipped:[/]")
        for item in report["skipped"][:20]:
            out.print(markup("  {}: {}", item["file"], item["reason"]), highlight=False)
        if len(report["skipped"]) > 20:
            out.print(markup("  ... and {} more (see --json)", len(report["skipped"]) - 20))
    render_secrets(env, report)
    if report["limited"]:
        out.print("[dim]--limit reached: files beyond it were not looked at, nothing removed.[/]")


ACTION_STYLE = {"add": "green", "change": "yellow", "skip": "dim", "remove": "red"}


def render_plan(env: Env, plan: list[dict[str, Any]]) -> None:
    """One line per file: action, path (relative to the folder), drawers and the reason."""
    for entry in plan:
        action = entry["action"]
        count = entry["drawers"]
        drawers = f"{count} drawer{'' if count == 1 else 's'}, " if action != "skip" else ""
        style = ACTION_STYLE.get(action, "")
        env.out.print(
            markup(
                "  [" + style + "]{:<6}[/]  {}  [dim]({}{})[/]",
                action,
                entry["file"],
                drawers,
                entry["reason"],
            ),
            highlight=False,
            soft_wrap=True,
        )
    if not plan:
        env.out.print("  Nothing to add, change or remove.")


def register(app: typer.Typer) -> None:
    app.command()(init)
    app.command()(mine)
