"""`mempalace search` and `mempalace status`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table
from rich.tree import Tree

from mempalace_cli.cli.env import Env, get_env, print_json

JSON_HELP = "Print one JSON document on stdout instead of tables."


def source_label(result: dict[str, Any]) -> str:
    meta = result.get("metadata") or {}
    if meta.get("ingest_mode") == "convos":  # a chat exchange: its conversation and speakers
        title = meta.get("conversation_title") or Path(result.get("source_file") or "-").name
        return f"{title} ({meta['speakers']})" if meta.get("speakers") else str(title)
    source = result.get("source_file") or ""
    label = Path(source).name if source else "-"
    start, end = result.get("line_start"), result.get("line_end")
    if start:
        label += f":{start}" + (f"-{end}" if end and end != start else "")
    return label


def snippet(text: str, width: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def search(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="What to look for, in natural language or keywords."),
    wing: str = typer.Option(None, "--wing", help="Only this wing (exact name, see status)."),
    room: str = typer.Option(None, "--room", help="Only this room (exact name, see status)."),
    n: int = typer.Option(5, "-n", "--results", min=1, max=100, help="How many results."),
    mode: str = typer.Option(
        "hybrid", "--mode", help="Ranking: hybrid (default), vector or lexical."
    ),
    aaak: bool = typer.Option(
        False, "--aaak", help="Show each result as a one-line AAAK summary (lossy)."
    ),
    json_output: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Find the drawers that best answer QUERY (lexical + semantic ranking)."""
    env = get_env(ctx)
    result = env.palace().search(query, wing=wing, room=room, limit=n, mode=mode)
    if aaak:
        for item in result["results"]:
            item["aaak"] = env.palace().aaak_encode(item["text"], **item["metadata"])
    if json_output:
        print_json(result)
        return
    render_results(env, result)


def render_results(env: Env, result: dict[str, Any]) -> None:
    if not result["results"]:
        filters = {k: v for k, v in result["filters"].items() if v}
        hint = f" with filters {filters}" if filters else ""
        env.out.print(f"No drawers match {result['query']!r}{hint}.")
        if filters:
            env.out.print("Check the exact wing and room names with: mempalace status")
        return
    table = Table(title=f"Results for {result['query']!r}", show_lines=True, expand=True)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("sim", justify="right", no_wrap=True)
    table.add_column("where", overflow="fold", max_width=34)
    table.add_column("text", ratio=1, min_width=30)
    for rank, item in enumerate(result["results"], start=1):
        sim = item["similarity"]
        table.add_row(
            str(rank),
            "-" if sim is None else f"{sim:.3f}",
            f"[cyan]{item['wing']}[/] / {item['room']}\n[dim]{source_label(item)}[/]",
            item["aaak"] if "aaak" in item else snippet(item["text"]),
        )
    env.out.print(table)


def status(
    ctx: typer.Context,
    json_output: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Show the palace: where it is, how many drawers, and drawers per wing and room."""
    env = get_env(ctx)
    result = env.palace().status()
    if json_output:
        print_json(result)
        return
    tree = Tree(f"[bold]{result['palace_path']}[/]  {result['total_drawers']} drawers")
    for wing, rooms in sorted(result["taxonomy"].items()):
        branch = tree.add(f"[cyan]{wing}[/]  {result['wings'][wing]}")
        for room, count in sorted(rooms.items()):
            branch.add(f"{room}  {count}")
    env.out.print(tree)
    if not result["total_drawers"]:
        env.out.print("The palace is empty. Next: mempalace mine <dir>")


def register(app: typer.Typer) -> None:
    app.command()(search)
    app.command()(status)
