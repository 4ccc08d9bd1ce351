"""`mempalace diary`: an agent's private diary across sessions."""

from __future__ import annotations

import shlex
import sys

import typer

from mempalace_cli.cli.env import get_env, markup, print_json
from mempalace_cli.cli.options import argument, command_group, json_option, option
from mempalace_cli.cli.secret_lines import say_redacted

diary_app = command_group(
    help="An agent's diary: entries are drawers in wing_<agent> / diary, searchable too.\n\n"
    'Example: mempalace diary write claude "Shipped the Clerk cutover." && '
    "mempalace diary read claude"
)


@diary_app.command("write")
def write(
    ctx: typer.Context,
    agent: str = argument("AGENT", "Whose diary, e.g. claude."),
    text: str = argument("TEXT", "The entry; - reads it from standard input."),
    topic: str = option("--topic", "TOPIC", "A topic (default: general).", "-t"),
    json_output: bool = json_option(),
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
        say_redacted(env, f"{n} secret{'s' if n != 1 else ''} in the entry")


@diary_app.command("read")
def read(
    ctx: typer.Context,
    agent: str = argument("AGENT", "Whose diary."),
    last: int = option("--last", "N", "How many entries.", "-n", default=10, min=1, max=1000),
    json_output: bool = json_option(),
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
