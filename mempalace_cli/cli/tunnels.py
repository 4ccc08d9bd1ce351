"""`mempalace tunnels` and `mempalace hallways`: the palace graph's explicit links.

Tunnels are made on purpose (create, list, delete, follow; `propose` suggests some from the
knowledge graph, `prune` removes the ones whose room or drawer is gone); hallways are found
(rooms that share knowledge-graph entities) and can be hidden. Both are done by
`palace.tunnels` (service/tunnels.py); this module parses and renders.
"""

from __future__ import annotations

from typing import Any

import typer

from mempalace_cli.cli.env import Env, get_env, markup, print_json
from mempalace_cli.cli.options import argument, command_group, flag, json_option, option
from mempalace_cli.cli.tables import make_table
from mempalace_cli.cli.words import cli_words
from mempalace_cli.common import errors

tunnels_app = command_group(
    help="Explicit tunnels: links you make between two rooms (or two drawers), walked by "
    "`mempalace traverse`.\n\n"
    'Example: mempalace tunnels create myapp/auth ops/incidents --label "the outage it caused"'
)
hallways_app = command_group(
    help="Hallways: rooms linked through the knowledge-graph entities (people, projects, tools) "
    "they share. Hide the ones that mean nothing.\n\n"
    "Example: mempalace hallways list --wing myapp"
)

PLACE_HELP = "WING/ROOM, e.g. myapp/auth (names as `mempalace status` shows them)."


def _place(value: str, what: str) -> tuple[str, str]:
    wing, sep, room = value.partition("/")
    if not sep or not wing.strip() or not room.strip():
        raise errors.InvalidInputError(
            f"The {what} {value!r} is not WING/ROOM.",
            hint="Write it as wing and room with a slash between, e.g. myapp/auth "
            "(see the names with `mempalace status`).",
        )
    return wing, room


def _end(wing: str, room: str, drawer: str | None = None) -> str:
    return f"{wing}/{room}" + (f" (drawer {drawer})" if drawer else "")


def _tunnel_line(t: dict[str, Any]) -> str:
    source = _end(t["source_wing"], t["source_room"], t.get("source_drawer_id"))
    target = _end(t["target_wing"], t["target_room"], t.get("target_drawer_id"))
    label = markup("  [dim]{}[/]", t["label"]) if t.get("label") else ""
    return markup("[bold]{}[/] <-> [bold]{}[/]", source, target) + label


def _tunnels_table(title: str, tunnels: list[dict[str, Any]]) -> Any:
    table = make_table(title=title)
    for column in ("id", "from", "to", "label", "note"):
        table.add_column(column, no_wrap=column in ("id", "from", "to"))
    for t in tunnels:
        missing = t.get("missing_ends") or []
        note = markup("[yellow]{} gone[/]", " and ".join(missing)) if missing else ""
        table.add_row(
            markup("{}", t["id"]),
            markup("{}", _end(t["source_wing"], t["source_room"], t.get("source_drawer_id"))),
            markup("{}", _end(t["target_wing"], t["target_room"], t.get("target_drawer_id"))),
            markup("{}", t.get("label") or ""),
            note,
        )
    return table


# -- tunnels ------------------------------------------------------------------------------------
@tunnels_app.command("create")
def create(
    ctx: typer.Context,
    source: str = argument("WING/ROOM", PLACE_HELP),
    target: str = argument("WING/ROOM", "The other end, " + PLACE_HELP),
    label: str = option("--label", "TEXT", "Why the two belong together, in a line.", "-l"),
    source_drawer: str = option("--from-drawer", "ID", "Link this drawer of the first room."),
    target_drawer: str = option("--to-drawer", "ID", "Link this drawer of the second room."),
    json_output: bool = json_option(),
) -> None:
    """Link two rooms (or two drawers in them). The same two ends again update the label.

    Example: mempalace tunnels create myapp/billing ops/incidents --label "billing alerts page ops"
    """
    env = get_env(ctx)
    (sw, sr), (tw, tr) = _place(source, "first room"), _place(target, "second room")
    result = env.palace().tunnels.create(sw, sr, tw, tr, label, source_drawer, target_drawer)
    if json_output:
        print_json(result)
        return
    t = result["tunnel"]
    verb = "Created" if result["created"] else "Already there, updated"
    env.out.print(
        markup("{} tunnel {}:", verb, t["id"]) + "\n  " + _tunnel_line(t), highlight=False
    )
    env.out.print(markup("Walk it with: mempalace traverse {}", t["source_room"]), highlight=False)


@tunnels_app.command("list")
def list_(
    ctx: typer.Context,
    wing: str = option("--wing", "WING", "Only tunnels with an end in this wing.", "-w"),
    json_output: bool = json_option(),
) -> None:
    """List the explicit tunnels, oldest first.

    Example: mempalace tunnels list --wing myapp
    """
    env = get_env(ctx)
    result = env.palace().tunnels.list_tunnels(wing)
    if json_output:
        print_json(result)
        return
    if not result["tunnels"]:
        env.out.print(
            markup(
                "No explicit tunnels{}. Make one with: mempalace tunnels create WING/ROOM "
                "WING/ROOM (or see suggestions: mempalace tunnels propose)",
                " touch wing " + result["wing"] if result["wing"] else " yet",
            ),
            highlight=False,
        )
        return
    env.out.print(
        _tunnels_table(markup("Tunnels: {}", result["count"]), result["tunnels"]), highlight=False
    )
    if any(t["missing_ends"] for t in result["tunnels"]):
        env.out.print(
            "Some ends are gone (their room is empty or their drawer deleted): "
            "mempalace tunnels prune",
            highlight=False,
            markup=False,
        )


@tunnels_app.command("delete")
def delete(
    ctx: typer.Context,
    tunnel_id: str = argument("TUNNEL_ID", "From `mempalace tunnels list`."),
    json_output: bool = json_option(),
) -> None:
    """Delete one explicit tunnel (the rooms and drawers stay).

    Example: mempalace tunnels delete tunnel_d1a5d912c5d2df4b
    """
    env = get_env(ctx)
    result = env.palace().tunnels.delete(tunnel_id)
    if json_output:
        print_json(result)
        return
    env.out.print(
        markup("Deleted tunnel {}:", result["deleted"]) + "\n  " + _tunnel_line(result["tunnel"]),
        highlight=False,
    )


@tunnels_app.command("follow")
def follow(
    ctx: typer.Context,
    place: str = argument("WING/ROOM", PLACE_HELP),
    json_output: bool = json_option(),
) -> None:
    """Show where the explicit tunnels at a room lead.

    Example: mempalace tunnels follow ops/incidents
    """
    env = get_env(ctx)
    wing, room = _place(place, "room")
    result = env.palace().tunnels.follow(wing, room)
    if json_output:
        print_json(result)
        return
    if not result["connections"]:
        env.out.print(
            markup("No explicit tunnel at {}/{}.", result["wing"], result["room"])
            + (markup(" {}", _cli_hint(result["hint"])) if result.get("hint") else ""),
            highlight=False,
        )
        return
    env.out.print(
        markup("[bold]{}/{}[/]: {} tunnel(s)", result["wing"], result["room"], result["count"]),
        highlight=False,
    )
    for c in result["connections"]:
        arrow = "->" if c["direction"] == "outgoing" else "<-"
        line = markup(
            "  {} [bold]{}/{}[/] ({} drawers)",
            arrow,
            c["connected_wing"],
            c["connected_room"],
            c["connected_drawers"],
        )
        if c.get("label"):
            line += markup("  [dim]{}[/]", c["label"])
        env.out.print(line, highlight=False)
        if c.get("drawer_preview"):
            env.out.print(
                markup("     drawer {}: {}", c["drawer_id"], c["drawer_preview"][:160]),
                highlight=False,
            )


@tunnels_app.command("propose")
def propose(
    ctx: typer.Context,
    limit: int = option(
        "--max", "N", "Propose at most N tunnels.", "-n", default=20, min=1, max=500
    ),
    yes: bool = flag("--yes", "Create the proposed tunnels.", "-y"),
    json_output: bool = json_option(),
) -> None:
    """Suggest tunnels from shared knowledge-graph entities; --yes creates them.

    Each proposal links two rooms of different wings that share entities no tunnel links yet,
    most shared first; a created tunnel is labelled with what the rooms share.

    Example: mempalace tunnels propose --max 10 && mempalace tunnels propose --max 10 --yes
    """
    env = get_env(ctx)
    result = env.palace().tunnels.propose(limit, apply=yes)
    if json_output:
        print_json(result)
        return
    if not result["proposals"]:
        env.out.print(
            "No tunnel to propose: no two rooms of different wings share a knowledge-graph "
            "entity that no tunnel links yet. Record facts with: mempalace kg add SUBJECT "
            "PREDICATE OBJECT",
            highlight=False,
            markup=False,
        )
        return
    title = markup(
        "{} of {} candidate tunnel(s){}",
        len(result["proposals"]),
        result["candidates"],
        ", created" if yes else "",
    )
    table = make_table(title=title)
    for column in ("from", "to", "shared entities"):
        table.add_column(column, no_wrap=column != "shared entities")
    for p in result["proposals"]:
        table.add_row(
            markup("{}/{}", p["source_wing"], p["source_room"]),
            markup("{}/{}", p["target_wing"], p["target_room"]),
            markup("{}", ", ".join(p["entities"])),
        )
    env.out.print(table)
    if not yes:
        env.out.print(
            markup(
                "Nothing was created. Create them with: mempalace tunnels propose --max {} --yes",
                limit,
            ),
            highlight=False,
        )


@tunnels_app.command("prune")
def prune(
    ctx: typer.Context,
    yes: bool = flag("--yes", "Delete them (default: only list).", "-y"),
    json_output: bool = json_option(),
) -> None:
    """List the tunnels whose room is now empty or whose drawer is gone; --yes deletes them.

    Example: mempalace tunnels prune --yes
    """
    env = get_env(ctx)
    result = env.palace().tunnels.prune(apply=yes)
    if json_output:
        print_json(result)
        return
    if not result["dangling"]:
        env.out.print(
            markup("All {} tunnel(s) still lead somewhere: nothing to prune.", result["total"]),
            highlight=False,
        )
        return
    env.out.print(
        _tunnels_table(markup("Dangling tunnels: {}", result["matched"]), result["dangling"])
    )
    if yes:
        env.out.print(markup("Deleted {} tunnel(s).", result["removed"]), highlight=False)
    else:
        env.out.print(
            "Nothing was deleted. Delete them with: mempalace tunnels prune --yes",
            highlight=False,
            markup=False,
        )


# -- hallways -----------------------------------------------------------------------------------
@hallways_app.command("list")
def hallways_list(
    ctx: typer.Context,
    wing: str = option("--wing", "WING", "Only hallways with an end in this wing.", "-w"),
    limit: int = option("--limit", "N", "Per page.", "-n", default=50, min=1, max=500),
    offset: int = option("--offset", "N", "Skip N (paging).", default=0, min=0),
    hidden: bool = flag("--hidden", "Also list the hidden ones."),
    json_output: bool = json_option(),
) -> None:
    """List hallways: rooms that share knowledge-graph entities, most shared first.

    Example: mempalace hallways list --wing myapp
    """
    env = get_env(ctx)
    result = env.palace().tunnels.hallways(wing, limit, offset, include_hidden=hidden)
    if json_output:
        print_json(result)
        return
    _render_hallways(env, result)


def _render_hallways(env: Env, result: dict[str, Any]) -> None:
    if not result["hallways"]:
        hint = result.get("hint") or "No hallways here."
        env.out.print(markup("{}", _cli_hint(hint)), highlight=False)
        return
    title = markup(
        "Hallways {}-{} of {}{}",
        result["offset"] + 1,
        result["offset"] + len(result["hallways"]),
        result["total"],
        " (" + str(result["hidden"]) + " hidden)" if result["hidden"] else "",
    )
    table = make_table(title=title)
    for column in ("id", "room", "room", "shared entities"):
        table.add_column(column, no_wrap=column != "shared entities")
    for h in result["hallways"]:
        shared = markup("{}", ", ".join(h["entities"]))
        if h.get("hidden"):
            shared += "  [dim](hidden)[/]"
        table.add_row(
            markup("{}", h["hallway_id"]),
            markup("{}/{}", h["wing_a"], h["room_a"]),
            markup("{}/{}", h["wing_b"], h["room_b"]),
            shared,
        )
    env.out.print(table)
    if result["has_more"]:
        env.out.print(
            markup("More: mempalace hallways list --offset {}", result["offset"] + result["limit"]),
            highlight=False,
        )
    if result["common_entities"]:
        env.out.print(
            markup(
                "Too common to link rooms (found almost everywhere): {}",
                ", ".join(result["common_entities"][:10]),
            ),
            highlight=False,
        )


def _cli_hint(text: str) -> str:
    return cli_words(text) or ""


@hallways_app.command("delete")
def hallways_delete(
    ctx: typer.Context,
    hallway_id: str = argument("HALLWAY_ID", "From `mempalace hallways list`."),
    json_output: bool = json_option(),
) -> None:
    """Hide a hallway for good (nothing else is deleted; `hallways restore` brings it back).

    Example: mempalace hallways delete hallway_648b38f23345c8dc
    """
    env = get_env(ctx)
    result = env.palace().tunnels.delete_hallway(hallway_id)
    if json_output:
        print_json(result)
        return
    if result.get("already_hidden"):
        env.out.print(markup("Hallway {} was already hidden.", hallway_id), highlight=False)
        return
    h = result["hallway"]
    env.out.print(
        markup(
            "Hid hallway {} ({}/{} <-> {}/{}). Bring it back with: mempalace hallways restore {}",
            hallway_id,
            h["wing_a"],
            h["room_a"],
            h["wing_b"],
            h["room_b"],
            hallway_id,
        ),
        highlight=False,
    )


@hallways_app.command("restore")
def hallways_restore(
    ctx: typer.Context,
    hallway_id: str = argument("HALLWAY_ID", "From `mempalace hallways list --hidden`."),
    json_output: bool = json_option(),
) -> None:
    """Show a hidden hallway again.

    Example: mempalace hallways restore hallway_648b38f23345c8dc
    """
    env = get_env(ctx)
    result = env.palace().tunnels.restore_hallway(hallway_id)
    if json_output:
        print_json(result)
        return
    env.out.print(markup("Hallway {} is listed again.", hallway_id), highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(tunnels_app, name="tunnels")
    app.add_typer(hallways_app, name="hallways")
