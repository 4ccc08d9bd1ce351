"""`mempalace diary`: an agent's private diary across sessions."""

from __future__ import annotations

import shlex
import sys

import typer

from mempalace_cli.cli.env import (
    CONTEXT_SETTINGS,
    JSON_HELP,
    get_env,
    json_option,
    markup,
    print_json,
)

diary_app = typer.Typer(
    help="An agent's diary: entries are drawers in wing_<agent> / diary, searchable too.\n\n"
    'Example: mempalace diary write claude "Shipped the Clerk cutover." && '
    "mempalace diary read claude",
    context_settings=CONTEXT_SETTINGS,
    no_args_is_help=True,
)


@diary_app.command("write")
def write(
    ctx: typer.Context,
    agent: str = typer.Argument(..., metavar="AGENT", help="Whose diary, e.g. claude."),
    text: str = typer.Argument(
        ..., metavar="TEXT", help="The entry; - reads it from standard input."
    ),
    topic: str = typer.Option(
        None, "--topic", "-t", metavar="TOPIC", help="A topic (default: general)."
    ),
    json_output: bool = json_option(JSON_HELP),
) -> None:
    """Add an entry to AGENT's diary.

    Example: mempalace diary write claude "Moved auth to Clerk; watch the webhooks." -t auth
    """
    env = get_env(ctx)
    content = sys.stdin.read().rstrip("\n") if text == "-" else text
    result = env.palace().diary_write(agent, content, topic=topic)
    if json_output:
        print_json(result)
        return
    env.out.print(
        markup(
            "Wrote to {}'s diary ({} / diary, topic {}) at {}.",
            result["agent"],
            result["wing"],
            result["topic"],
            result["timestamp"],
        ),
        highlight=False,
    )
    if result.get("secrets_redacted"):
        n = result["secrets_redacted"]
        env.out.print(
            f"{n} secret{'s' if n != 1 else ''} in the entry replaced by [REDACTED:kind]: "
            "secrets never enter the palace.",
            highlight=False,
            markup=False,
        )


@diary_app.command("read")
def read(
    ctx: typer.Context,
    agent: str = typer.Argument(..., metavar="AGENT", help="Whose diary."),
    last: int = typer.Option(
        10, "--last", "-n", metavar="N", min=1, max=1000, help="How many entries."
    ),
    json_output: bool = json_option(JSON_HELP),
) -> None:
    """Show AGENT's latest diary entries, newest first.

    Example: mempalace diary read claude --last 5
    """
    env = get_env(ctx)
    result = env.palace().diary_read(agent, last=last)
    if json_output:
        print_json(result)
        return
    if not result["entries"]:
        env.out.print(
            markup(
                "{}'s diary is empty. Write with: mempalace diary write {} TEXT",
                result["agent"],
                shlex.quote(result["agent"]),
            ),
            highlight=False,
        )
        return
    shown = len(result["entries"])
    env.out.print(
        markup(
            "[bold]{}[/]'s diary: {} of {} entries, newest first",
            result["agent"],
            shown,
            result["total"],
        ),
        highlight=False,
    )
    for entry in result["entries"]:
        env.out.print(
            markup("\n[cyan]{}[/]  [dim]{}[/]", entry["timestamp"], entry["topic"] or ""),
            highlight=False,
        )
        env.out.print(markup("{}", entry["content"]), highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(diary_app, name="diary")
