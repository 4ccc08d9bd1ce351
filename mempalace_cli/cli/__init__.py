"""The `mempalace` command line: a thin adapter over `mempalace_cli.service`.

Each command parses its arguments, calls the service and renders the plain data it returns
(rich on a terminal, one JSON document with --json). Core errors become messages and exit
statuses in one place: `PalaceGroup.invoke`.
"""

from __future__ import annotations

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
    show_notices,
)


class PalaceGroup(TyperGroup):
    """Runs the command; maps MemPalaceError (and, with --json, usage errors) to output and an
    exit status, so no user error ever shows a traceback."""

    def invoke(self, ctx: typer.Context) -> Any:
        as_json = "--json" in [*getattr(ctx, "_protected_args", []), *ctx.args]
        try:
            return super().invoke(ctx)
        except errors.MemPalaceError as exc:
            raise typer.Exit(report_error(exc, as_json)) from None
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
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Show the version and exit."
    ),
) -> None:
    show_notices()
    env = get_env(ctx)
    env.palace_option = palace
    env.chroma_url = chroma_url


def _register() -> None:
    from mempalace_cli.cli import diary, kg, mining, reembed, search, serve, traverse, wakeup

    mining.register(app)
    search.register(app)
    serve.register(app)
    wakeup.register(app)
    kg.register(app)
    diary.register(app)
    traverse.register(app)
    reembed.register(app)


_register()


def main() -> None:
    app(prog_name="mempalace")


__all__ = ["Env", "app", "main"]
