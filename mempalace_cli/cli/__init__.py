"""The `mempalace` command line: a thin adapter over `mempalace_cli.service`.

Each command parses its arguments, calls the service and renders the plain data it returns
(rich on a terminal, one JSON document with --json). Core errors become messages and exit
statuses in one place: `PalaceGroup.invoke`.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import typer
from typer._click.exceptions import UsageError
from typer.core import TyperGroup

from mempalace_cli import __version__, errors
from mempalace_cli.cli.env import (
    EXIT_USAGE,
    Env,
    get_env,
    print_json,
    report_error,
    show_core_notes,
)


class PalaceGroup(TyperGroup):
    """Runs the command; maps MemPalaceError (and, with --json, usage errors) to output and an
    exit status, so no user error ever shows a traceback."""

    def invoke(self, ctx: typer.Context) -> Any:
        as_json = "--json" in [*getattr(ctx, "_protected_args", []), *ctx.args]
        show_core_notes()
        try:
            reject_undecodable_text(ctx)
            return super().invoke(ctx)
        except errors.MemPalaceError as exc:
            raise typer.Exit(report_error(exc, as_json)) from None
        except OSError as exc:  # disk full, permission denied, not a directory: say which
            mapped = errors.from_os_error(exc, exc.filename or "the palace", "finish the command")
            raise typer.Exit(report_error(mapped, as_json)) from None
        except sqlite3.OperationalError as exc:
            storage = errors.from_sqlite_error(exc, _palace_path(ctx))
            if storage is None:
                raise
            raise typer.Exit(report_error(storage, as_json)) from None
        except UsageError as exc:
            if not as_json:
                raise
            print_json({"error": {"message": exc.format_message(), "hint": None, "kind": "usage"}})
            raise typer.Exit(EXIT_USAGE) from None
        finally:
            # Close the palace's database handles when the command ends, not at interpreter
            # exit: CliRunner runs many commands in one process.
            env = ctx.obj
            if isinstance(env, Env) and env._palace is not None:
                env._palace.close()
                env._palace = None


def _palace_path(ctx: typer.Context) -> str:
    env = ctx.obj
    if isinstance(env, Env) and env._palace is not None:
        return str(env._palace.path / "mempalace_index.sqlite3")
    return "the palace"


def reject_undecodable_text(ctx: typer.Context) -> None:
    """Every argument must be valid UTF-8: text (queries, names, content) and paths alike,
    since the palace records paths as UTF-8 text. Linux allows other bytes, and Python
    carries them as surrogate escapes, which would fail deep inside a write."""
    raw = [*getattr(ctx, "_protected_args", []), *ctx.args]
    raw += [str(v) for v in ctx.params.values() if isinstance(v, str)]
    bad = next((a for a in raw if _undecodable(a)), None)
    if bad is None:
        return
    shown = bad.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    raise errors.InvalidInputError(
        f"The argument {shown!r} is not valid UTF-8 (a byte shown as \\x..).",
        hint="Pass text and paths as UTF-8: check the terminal's locale or the script that "
        "built the command line; rename a folder whose name is not UTF-8.",
    )


def _undecodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


app = typer.Typer(
    cls=PalaceGroup,
    name="mempalace",
    help="A local-first memory palace for AI agents: file notes, code and chats verbatim, "
    "then search them, keep facts with a history, and serve it all over MCP.",
    no_args_is_help=True,
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


def _register() -> None:
    from mempalace_cli.cli import (
        diary,
        identity,
        kg,
        migrate,
        mining,
        search,
        serve,
        traverse,
        wakeup,
    )

    mining.register(app)
    search.register(app)
    serve.register(app)
    wakeup.register(app)
    kg.register(app)
    diary.register(app)
    traverse.register(app)
    migrate.register(app)
    identity.register(app)


_register()


def main() -> None:
    app(prog_name="mempalace")


__all__ = ["Env", "app", "main"]
