"""`mempalace identity`: show or set the identity text (wake-up's L0)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from mempalace_cli.cli.env import get_env, markup, print_json
from mempalace_cli.cli.options import json_option, option
from mempalace_cli.common.errors import NotFoundError


def identity(
    ctx: typer.Context,
    set_from: str = option(
        "--set",
        "FILE",
        "Store the text of FILE (- for standard input) as the identity: on the Chroma "
        "server for a server palace (every machine reads it), else in $MEMPALACE_HOME.",
    ),
    json_output: bool = json_option("Print one JSON document."),
) -> None:
    """Show the identity text wake-up starts with, or set it with --set FILE.

    Example: mempalace identity --set identity.txt
    """
    env = get_env(ctx)
    palace = env.palace()
    if set_from is not None:
        if set_from == "-":
            text = sys.stdin.read()
        else:
            path = Path(set_from).expanduser()
            if not path.is_file():
                raise NotFoundError(f"No file at {path}; the identity was not changed.")
            text = path.read_text(encoding="utf-8")
        result = palace.set_identity(text)
        if json_output:
            print_json(result)
        else:
            env.out.print(markup("Identity stored in {}.", result["where"]), highlight=False)
        return
    result = palace.identity()
    if json_output:
        print_json(result)
    elif result["text"] is None:
        env.out.print(
            markup("No identity yet ({}). Set one: mempalace identity --set FILE", result["where"]),
            highlight=False,
        )
    else:
        env.out.print(markup("[dim]{}[/]\n{}", result["where"], result["text"]), highlight=False)


def register(app: typer.Typer) -> None:
    app.command()(identity)
