"""The `mempalace` command line: a thin adapter over `mempalace_cli.service`.

Each command parses its arguments, calls the service and renders the plain data it returns
(rich on a terminal, one JSON document with --json). Every error, the core's or a usage error
from Typer/Click, becomes a message and an exit status in one place, `env.report_error`, called
from `PalaceGroup.invoke` (the core's errors) and `PalaceGroup.main` (usage errors).

Each command lives in a module of this package with a `register(app)`, listed in `COMMANDS`;
the module is imported only when its command runs, so `mempalace --help` and `kg` load none of
the others (docs/architecture.md, "Imports and start-up cost").

May import: everything below it (`mcp` and `serving` to start a server, `service`,
and the layers under the service for rendering). Nothing imports the CLI.
"""

from __future__ import annotations

import importlib
import os
import sqlite3
import sys
from collections.abc import Sequence
from typing import Any

import typer
import typer.main
from typer._click.core import Command, Context, HelpFormatter
from typer._click.exceptions import ClickException
from typer.core import TyperCommand, TyperGroup
from typer.exceptions import Abort

from mempalace_cli import __version__
from mempalace_cli.cli.env import (
    CONTEXT_SETTINGS,
    EXIT_BROKEN_PIPE,
    Env,
    get_env,
    make_console,
    model_build_notice,
    report_error,
    show_core_notes,
    usage_problem,
)
from mempalace_cli.cli.global_options import hoist_global_options, wants_json
from mempalace_cli.cli.help_format import install as install_readable_help
from mempalace_cli.common import errors
from mempalace_cli.common.textsafe import is_clean
from mempalace_cli.embedders import cache as model_cache

install_readable_help()


class Listed(TyperCommand):
    """A command known by its name and help line until it is used: what `mempalace --help`
    lists, and what suggestions for a mistyped command are chosen from."""

    def __init__(self, name: str, module: str, summary: str) -> None:
        super().__init__(name, help=summary)
        self.module = module


class PalaceGroup(TyperGroup):
    """Runs the command; maps MemPalaceError and usage errors to output and an exit status, so
    no user error ever shows a traceback. Global options are accepted anywhere: before the
    command, after it, between a group and its sub-command (`hoist_global_options`).

    Commands load on use: the group starts with a `Listed` stand-in per entry of `COMMANDS`,
    and the first time a command is looked up to run (or to print its own help) its module is
    imported and its real commands take the stand-ins' places."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.listing = False
        for name, (module, summary) in COMMANDS.items():
            self.commands.setdefault(name, Listed(name, module, summary))

    def load(self, module: str) -> None:
        """Import mempalace_cli.cli.<module> and put the commands it declares in place."""
        declared = typer.Typer(
            rich_markup_mode="rich", context_settings=CONTEXT_SETTINGS, add_completion=False
        )
        importlib.import_module(f"mempalace_cli.cli.{module}").register(declared)
        self.commands.update(typer.main.get_group(declared).commands)

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        command = self.commands.get(cmd_name)
        if isinstance(command, Listed) and not self.listing:
            self.load(command.module)
            command = self.commands.get(cmd_name)
        return command

    def format_help(self, ctx: Context, formatter: HelpFormatter) -> None:
        """The root's help lists every command from its stand-in, importing none of them."""
        self.listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self.listing = False

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Usage errors (unknown command or option, missing argument, bad value), wherever
        Click finds them, are reported like the core's errors: "Error: ... / Hint: ...", or
        JSON with --json, exit status 2."""
        argv = list(sys.argv[1:] if args is None else args)
        try:
            rv = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
        except ClickException as exc:
            if not standalone_mode:
                raise
            if type(exc).__name__ != "NoArgsIsHelpError":  # that one has printed the help
                report_error(usage_problem(exc), wants_json(argv))
            sys.exit(exc.exit_code)
        except Abort:
            if not standalone_mode:
                raise
            make_console(stderr=True).print("Aborted.", highlight=False)
            sys.exit(1)
        if not standalone_mode:
            return rv
        # Not standalone, Typer returns the status of a typer.Exit, else the command's value.
        sys.exit(rv if isinstance(rv, int) and not isinstance(rv, bool) else 0)

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, hoist_global_options(args))

    def invoke(self, ctx: typer.Context) -> Any:
        def as_json() -> bool:  # --json anywhere: hoisted to this group's own option
            return bool(ctx.params.get("json_output"))

        show_core_notes()
        stop_notice = model_cache.on_build(model_build_notice(get_env(ctx)))
        try:
            reject_undecodable_text(ctx)
            return super().invoke(ctx)
        except errors.MemPalaceError as exc:
            raise typer.Exit(report_error(exc, as_json())) from None
        except BrokenPipeError:
            # The reader went away (`mempalace search ... | head -1`): stop quietly, as `cat`
            # does, with the shell's status for SIGPIPE; nothing more can reach the pipe.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(EXIT_BROKEN_PIPE) from None
        except (OSError, sqlite3.Error) as exc:  # disk full, permission denied...: say which
            mapped = errors.as_palace_error(exc, _palace_path(ctx))  # the MCP server's table too
            if mapped is None:
                raise
            raise typer.Exit(report_error(mapped, as_json())) from None
        finally:
            stop_notice()
            # Close the palace's database handles when the command ends, not at interpreter
            # exit: CliRunner runs many commands in one process.
            env = ctx.obj
            if isinstance(env, Env) and env._palace is not None:
                env._palace.close()
                env._palace = None


def _palace_path(ctx: typer.Context) -> str:
    env = ctx.obj
    if isinstance(env, Env) and env._palace is not None:
        return str(env._palace.index_dir / "mempalace_index.sqlite3")
    return "the palace"


def reject_undecodable_text(ctx: typer.Context) -> None:
    """Every argument must be valid UTF-8: text (queries, names, content) and paths alike,
    since the palace records paths as UTF-8 text. Linux allows other bytes, and Python
    carries them as surrogate escapes, which would fail deep inside a write."""
    raw = [*getattr(ctx, "_protected_args", []), *ctx.args]
    raw += [str(v) for v in ctx.params.values() if isinstance(v, str)]
    bad = next((a for a in raw if not is_clean(a)), None)
    if bad is None:
        return
    shown = bad.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    raise errors.InvalidInputError(
        f"The argument {shown!r} is not valid UTF-8 (a byte shown as \\x..).",
        hint="Pass text and paths as UTF-8: check the terminal's locale or the script that "
        "built the command line; rename a folder whose name is not UTF-8.",
    )


app = typer.Typer(
    cls=PalaceGroup,
    name="mempalace",
    help="A local-first memory palace for AI agents: file notes, code and chats verbatim, "
    "then search them, keep facts with a history, and serve it all over MCP.\n\n"
    "Global options (--palace, --chroma-url, --json, --quiet) work anywhere on the command "
    "line: before or after the command, or between kg/diary and its sub-command.\n\n"
    'Example: mempalace init ~/notes && mempalace mine ~/notes && mempalace search "why X?"',
    no_args_is_help=True,
    context_settings=CONTEXT_SETTINGS,
    add_completion=False,
    rich_markup_mode="rich",
    pretty_exceptions_show_locals=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"mempalace-cli {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    palace: str = typer.Option(
        None,
        "--palace",
        metavar="PATH",
        help="Palace directory (default: $MEMPALACE_PALACE, palace_path in config.toml, "
        "or $MEMPALACE_HOME/palace).",
    ),
    chroma_url: str = typer.Option(
        None,
        "--chroma-url",
        metavar="URL",
        help="Keep drawers in a Chroma server (http://host:port) instead of the palace folder.",
    ),
    chroma_token: str = typer.Option(
        None,
        "--chroma-token",
        metavar="TOKEN",
        help="Bearer token for the Chroma server (prefer $MEMPALACE_CHROMA_TOKEN or "
        "chroma_token in config.toml: a flag shows in the process list).",
    ),
    chroma_ca_file: str = typer.Option(
        None,
        "--chroma-ca-file",
        metavar="PEM",
        help="CA bundle that signed an https Chroma server's certificate "
        "($MEMPALACE_CHROMA_CA_FILE, chroma_ca_file).",
    ),
    chroma_database: str = typer.Option(
        None,
        "--chroma-database",
        metavar="NAME",
        help="Database on the Chroma server that holds this palace, created on first use "
        "($MEMPALACE_CHROMA_DATABASE, chroma_database; default: default_database).",
    ),
    json_output: bool = typer.Option(
        False, "--json", help="Print one JSON document on stdout (errors too), for scripts."
    ),
    quiet: bool = typer.Option(
        False, "--quiet", "-q", help="No progress bars or notes on stderr; results and errors only."
    ),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Show the version and exit."
    ),
) -> None:
    env = get_env(ctx)
    env.palace_option = palace
    env.chroma_url = chroma_url
    env.chroma_token = chroma_token
    env.chroma_ca_file = chroma_ca_file
    env.chroma_database = chroma_database
    env.json = json_output
    env.set_quiet(quiet)


# Every command: the module under mempalace_cli/cli/ that declares it (in its `register`) and
# the line `mempalace --help` lists it with. A command's module is imported only when that
# command runs or shows its own help, so each module imports what it needs at its top and
# `mempalace --help` or `kg` never pays for the others (tests/test_cli_import_cost.py). The
# order is the help's; tests/test_cli_options.py checks each line against the command's help.
COMMANDS: dict[str, tuple[str, str]] = {
    "init": (
        "mining",
        "Detect rooms from DIRECTORY's layout, write DIRECTORY/mempalace.toml, create the palace.",
    ),
    "mine": (
        "mining",
        "File every text, code and document file of a folder (or one file) into the palace.",
    ),
    "search": ("search", "Find the drawers that best answer QUERY (lexical + semantic ranking)."),
    "status": (
        "search",
        "Show the palace: where it is, how many drawers, and drawers per wing and room.",
    ),
    "show": (
        "drawers",
        "Print one drawer whole, with its metadata and its neighbours in its file.",
    ),
    "drawers": (
        "drawers",
        "List drawers, newest first: id, wing and room, source, date and the start of the text.",
    ),
    "forget": (
        "drawers",
        "Remove drawers: by id, by source file or folder, or a whole wing or room.",
    ),
    "serve-mcp": ("serve", "Serve the palace to AI agents over MCP (the Model Context Protocol)."),
    "mcp-config": (
        "mcp_config",
        "Print the exact command or config snippet that connects an MCP client to this palace.",
    ),
    "wake-up": (
        "wakeup",
        "Print identity (L0), the essential story (L1) and the memory protocol, within a budget.",
    ),
    "traverse": (
        "traverse",
        "Walk the palace graph from ROOM; show tunnels between wings, stats, or export it.",
    ),
    "reembed": ("reembed", "Embed every drawer again with MODEL and switch the palace to it."),
    "models": (
        "reembed",
        "List the embedding models, and which one this palace and new palaces use.",
    ),
    "migrate": (
        "migrate",
        "Copy drawers (with their vectors, no re-embedding), facts, diaries "
        "and identity between the palace folder and a Chroma server; run it again to "
        "resume; verified at the end.",
    ),
    "identity": (
        "identity",
        "Show the identity text wake-up starts with, or set it with --set FILE.",
    ),
    "activity": ("activity", "Show the MCP calls AI clients made to this palace, newest first."),
    "rules": (
        "hooks",
        "Print the memory protocol as a block for an agent's instruction file, or write it in.",
    ),
    "split": (
        "hooks",
        "Split transcript files that hold several sessions (Claude Code or Codex "
        "JSONL run together, or a terminal dump of many Claude Code runs) into one file "
        "per session.",
    ),
    "audit": (
        "hooks",
        "Score how well the palace is organised (0-100) and say what to fix, "
        "each with the command that fixes it: flat wings, one-drawer rooms, drawers of "
        "deleted files, copies, names spelled two ways, one-off fact predicates, diaries "
        "apart from their projects.",
    ),
    "ui": (
        "ui",
        "See the palace in a web browser: its map, search, drawers, facts, diaries, "
        "health and what AI agents did.",
    ),
    "kg": ("kg", "Facts with a history: who owns what, since when, and until when."),
    "diary": (
        "diary",
        "An agent's diary: entries are drawers in wing_<agent> / diary, searchable too.",
    ),
    "tunnels": (
        "tunnels",
        "Explicit tunnels: links you make between two rooms (or two "
        "drawers), walked by `mempalace traverse`.",
    ),
    "hallways": (
        "tunnels",
        "Hallways: rooms linked through the knowledge-graph entities "
        "(people, projects, tools) they share.",
    ),
    "log": (
        "coordination",
        "The coordination log: events agents hand work through (append, list, wait, ack).",
    ),
    "task": ("coordination", "Tasks handed between agents through the coordination log."),
    "artifact": (
        "coordination",
        "Exact text handed over through the palace (a patch, a file, a log), by id.",
    ),
    "hook": (
        "hooks",
        "Claude Code and Codex hooks: file each session's transcript into the "
        "palace when it stops, ends or is about to be compacted, once however often they "
        "run.",
    ),
}


def command_tree() -> PalaceGroup:
    """The whole command line as click objects, every command loaded: for tests and the
    README's generated tables, which walk it."""
    root = typer.main.get_command(app)
    assert isinstance(root, PalaceGroup)
    for module in dict.fromkeys(module for module, _ in COMMANDS.values()):
        root.load(module)
    return root


def main() -> None:
    app(prog_name="mempalace")


__all__ = ["Env", "app", "main"]
