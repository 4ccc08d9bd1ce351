"""`mempalace traverse`: walk the palace graph from a room; `--tunnels`, `--stats` and
`--export` show the rest of the graph."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from mempalace_cli.cli.env import Env, did_you_mean, get_env, markup, print_json, report_not_found
from mempalace_cli.cli.options import argument, flag, json_option, option
from mempalace_cli.cli.tables import make_table, print_counts
from mempalace_cli.common import errors
from mempalace_cli.common.lazy import lazy

rich_tree = lazy("rich.tree")

JSON_HELP = "Print one JSON document on stdout instead of a tree or tables."


def traverse(
    ctx: typer.Context,
    room: str = argument("ROOM", "The room to start from (see --stats for rooms).", default=None),
    max_hops: int = option("--max-hops", "N", "How far to walk.", default=2, min=1, max=10),
    tunnels: bool = flag("--tunnels", "List rooms shared by several wings."),
    wing_a: str = option("--wing-a", "WING", "With --tunnels: only tunnels of this wing."),
    wing_b: str = option("--wing-b", "WING", "With --tunnels: ...and of this one."),
    stats: bool = flag("--stats", "Rooms, tunnels and edges of the graph."),
    export: str = option("--export", "mermaid|dot", "Print the graph as mermaid or dot."),
    output: Path = option("--output", "FILE", "With --export: write to a file.", "-o"),
    json_output: bool = json_option(JSON_HELP),
) -> None:
    """Walk the palace graph from ROOM; show tunnels between wings, stats, or export it.

    Rooms of one wing are one hop apart; a room that several wings share is a tunnel between
    them, so the walk crosses into every wing it belongs to. An unknown room is "not found"
    (exit status 4) and the closest names are suggested.

    Example: mempalace traverse decisions --max-hops 2
    """
    env = get_env(ctx)
    palace = env.palace()
    if export:
        text = palace.export_graph(export)
        if output:
            output.write_text(text, encoding="utf-8")
        if json_output:
            print_json({"format": export, "text": text, "output": str(output) if output else None})
        elif output:
            env.out.print(markup("Wrote the {} graph to {}", export, output), highlight=False)
        else:
            typer.echo(text, nl=False)
        return
    if stats:
        result = palace.graph_stats()
        if json_output:
            print_json(result)
        else:
            render_stats(env, result)
        return
    if tunnels or wing_a or wing_b:
        result = palace.find_tunnels(wing_a, wing_b)
        if json_output:
            print_json(result)
        else:
            render_tunnels(env, result)
        return
    if not room:
        raise errors.InvalidInputError(
            "Name a room to start from, or pass --tunnels, --stats or --export.",
            hint="List the rooms with: mempalace traverse --stats",
        )
    result = palace.traverse(room, max_hops=max_hops)
    if not result["found"]:
        report_not_found(
            json_output, result["message"], did_you_mean(result["suggestions"]), result
        )
    if json_output:
        print_json(result)
    else:
        render_walk(env, result)


def _drawers(n: int) -> str:
    return f"{n} drawer" if n == 1 else f"{n} drawers"


def _label(item: dict[str, Any]) -> str:
    tunnel = "  [yellow]tunnel[/]" if item.get("tunnel", len(item["wings"]) > 1) else ""
    return (
        markup(
            "[bold]{}[/]  {}  [cyan]{}[/]",
            item["room"],
            _drawers(item["drawers"]),
            ", ".join(item["wings"]),
        )
        + tunnel
    )


def render_walk(env: Env, result: dict[str, Any]) -> None:
    items = result["results"]
    tree = rich_tree.Tree(_label(items[0]) + "  [dim](start)[/]")
    nodes = {items[0]["room"]: tree}
    for item in items[1:]:
        via = item["via"]
        parent = nodes[via["from"]]
        if via.get("explicit"):  # an explicit tunnel (`mempalace tunnels`)
            name = via["label"] or via["explicit"]
            how = markup("  [dim]hop {} via tunnel {}[/]", item["hop"], name)
        else:
            how = markup("  [dim]hop {} via {}[/]", item["hop"], via["wing"])
        nodes[item["room"]] = parent.add(_label(item) + how)
    env.out.print(tree, highlight=False)
    env.out.print(
        markup("{} room(s) within {} hop(s).", result["count"] - 1, result["max_hops"]),
        highlight=False,
    )


def render_tunnels(env: Env, result: dict[str, Any]) -> None:
    between = " and ".join(w for w in (result["wing_a"], result["wing_b"]) if w)
    for t in result.get("explicit", []):  # made on purpose: `mempalace tunnels list`
        env.out.print(
            markup(
                "Tunnel {}/{} <-> {}/{}{}",
                t["source_wing"],
                t["source_room"],
                t["target_wing"],
                t["target_room"],
                "  (" + t["label"] + ")" if t.get("label") else "",
            ),
            highlight=False,
        )
    if not result["tunnels"]:
        scope = f" touching {between}" if between else ""
        env.out.print(markup("No rooms{} are shared by two or more wings.", scope), highlight=False)
        return
    title = markup("Tunnels{}: {}", " of " + between if between else "", result["count"])
    table = make_table(title=title)
    table.add_column("room", no_wrap=True)
    table.add_column("drawers", justify="right")
    table.add_column("wings (drawers)")
    for t in result["tunnels"]:
        per_wing = ", ".join(f"{w} ({n})" for w, n in t["drawers_by_wing"].items())
        table.add_row(markup("{}", t["room"]), markup("{}", t["drawers"]), markup("{}", per_wing))
    env.out.print(table, highlight=False)


def render_stats(env: Env, result: dict[str, Any]) -> None:
    env.out.print(
        markup(
            "{} rooms in {} wings ({} drawers), {} tunnels, {} tunnel edges",
            result["rooms"],
            result["wings"],
            result["drawers"],
            result["tunnels"],
            result["edges"],
        ),
        highlight=False,
    )
    if result["rooms_per_wing"]:
        print_counts(env, "wing", "rooms", result["rooms_per_wing"])
    if result["top_tunnels"]:
        env.out.print("Top tunnels:")
        for t in result["top_tunnels"]:
            env.out.print(
                markup("  {}  {}  {}", t["room"], _drawers(t["drawers"]), ", ".join(t["wings"])),
                highlight=False,
            )


def register(app: typer.Typer) -> None:
    app.command()(traverse)
