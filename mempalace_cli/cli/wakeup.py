"""`mempalace wake-up`: what an agent loads at the start of a session."""

from __future__ import annotations

import typer

from mempalace_cli.cli.env import get_env, markup, print_json
from mempalace_cli.cli.options import flag, json_option, option

JSON_HELP = "Print one JSON document on stdout: the text and each layer with its token count."


def wake_up(
    ctx: typer.Context,
    wing: str = option("--wing", "WING", "Only this wing's story (exact name)."),
    budget: int = option(
        "--budget", "TOKENS", "Token budget, counted with the model's tokenizer.", default=1200
    ),
    aaak_spec: bool = flag(
        "--aaak-spec",
        "Print the AAAK notation instead: the compact, lossy one-line summary format "
        "(entities, topics, key quote, flags) that agents read in place of whole drawers.",
    ),
    json_output: bool = json_option(JSON_HELP),
) -> None:
    """Print identity (L0), the essential story (L1) and the memory protocol, within a budget.

    Pipe it into an agent's system prompt. Reads only the palace catalogue: fast, offline.

    Example: mempalace wake-up --wing notes --budget 600 > context.txt
    """
    env = get_env(ctx)
    palace = env.palace()
    if aaak_spec:
        spec = palace.aaak_spec()
        if json_output:
            print_json({"aaak_spec": spec})
        else:
            typer.echo(spec)
        return
    result = palace.wake_up(wing=wing, budget=budget)
    if json_output:
        print_json(result)
        return
    typer.echo(result["text"])
    if env.err.is_terminal:
        parts = ", ".join(f"{layer['name']} {layer['tokens']}" for layer in result["layers"])
        env.err.print(
            markup("[dim]{} of {} tokens ({})[/]", result["total_tokens"], result["budget"], parts),
            highlight=False,
        )


def register(app: typer.Typer) -> None:
    app.command(name="wake-up")(wake_up)
