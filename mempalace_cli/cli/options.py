"""How a command declares what it takes: its sub-command group, options, flags, arguments and
--json, each written once here so every command reads them the same way.

    wing: str = option("--wing", "WING", "Only this wing."),
    dry_run: bool = flag("--dry-run", "Write nothing."),
    json_output: bool = json_option(),
"""

from __future__ import annotations

from typing import Any

import typer

from mempalace_cli.cli.env import CONTEXT_SETTINGS, get_env

JSON_HELP = "Print one JSON document on stdout instead of text (also accepted before the command)."


def command_group(help: str) -> typer.Typer:
    """A group of sub-commands (`mempalace kg ...`): -h works, and no sub-command shows help."""
    return typer.Typer(help=help, context_settings=CONTEXT_SETTINGS, no_args_is_help=True)


def option(
    name: str, metavar: str, help: str, *aliases: str, default: Any = None, **kw: Any
) -> Any:
    """An option taking a value, None unless given: option("--wing", "WING", "Only this wing.").
    Other names follow the help; typer.Option's other settings go by name."""
    return typer.Option(default, name, *aliases, metavar=metavar, help=help, **kw)


def flag(name: str, help: str, *aliases: str, **kw: Any) -> Any:
    """An on/off option, off unless given: flag("--dry-run", "Write nothing.")."""
    return typer.Option(False, name, *aliases, help=help, **kw)


def argument(metavar: str, help: str, default: Any = ..., **kw: Any) -> Any:
    """A command's argument, required unless given a default: argument("PATH", "The folder.")."""
    return typer.Argument(default, metavar=metavar, help=help, **kw)


def _json_or_global(ctx: typer.Context, value: bool) -> bool:
    return bool(value) or get_env(ctx).json


def json_option(help: str = JSON_HELP) -> Any:
    """Every command's --json; true as well when --json came before the sub-command."""
    return typer.Option(False, "--json", help=help, callback=_json_or_global)
