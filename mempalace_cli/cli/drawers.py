"""`mempalace show ID` (one whole drawer, its metadata and its neighbours in its file) and
`mempalace forget` (remove drawers by id, by source or by place, after showing what goes)."""

from __future__ import annotations

from typing import Any

import typer

from mempalace_cli.cli.env import JSON_HELP, Env, escape, get_env, json_option, print_json
from mempalace_cli.cli.hits import INDENT, drawer_lines, print_indented, where_label
from mempalace_cli.errors import InvalidInputError

FORGET_BATCH = 1000  # ids per forget call (the service's per-call cap)
LISTED = 20  # drawers listed by name before "... and N more"
# Metadata shown in the header already, or only useful to programs (see --json).
HIDDEN_META = {"wing", "room", "source_file", "line_start", "line_end", "chunk_index"}


def show(
    ctx: typer.Context,
    drawer_id: str = typer.Argument(
        ..., metavar="DRAWER-ID", help="The drawer's id, as search prints it."
    ),
    around: int = typer.Option(
        2,
        "--around",
        metavar="N",
        min=0,
        max=20,
        help="How many neighbouring drawers of its file to list before and after it.",
    ),
    json_output: bool = json_option(JSON_HELP),
) -> None:
    """Print one drawer whole, with its metadata and its neighbours in its file.

    The text comes with its line numbers in the source file; the neighbours are the drawers cut
    just before and after it.

    Example: mempalace show drawer_notes_decisions_50c23b456c072802
    """
    env = get_env(ctx)
    palace = env.palace()
    drawer = palace.get_drawer(drawer_id)
    neighbours = palace.drawer_neighbours(drawer_id, around=around)
    if json_output:
        print_json({"drawer": drawer, "neighbours": neighbours})
        return
    render_drawer(env, drawer, neighbours)


def render_drawer(env: Env, drawer: dict[str, Any], neighbours: dict[str, Any]) -> None:
    from rich.text import Text

    out = env.out
    meta = drawer.get("metadata") or {}
    out.print(
        Text.assemble(
            (drawer["drawer_id"], "bold"), "   ", (f"{drawer['wing']} / {drawer['room']}", "bold")
        ),
        highlight=False,
    )
    place = f"   drawer {neighbours['position']} of {neighbours['total']} in its file"
    out.print(Text.assemble((where_label(drawer), "cyan"), (place, "dim")), highlight=False)
    out.print()
    print_indented(out, drawer_lines(out, drawer, "", True, max(out.width - INDENT, 20)), 0)
    out.print()
    shown = {k: v for k, v in meta.items() if k not in HIDDEN_META and v not in (None, "")}
    out.print(Text("filed at ", style="dim") + Text(str(drawer.get("filed_at") or "-")))
    for key in sorted(shown):
        out.print(Text(f"{key}: ", style="dim") + Text(str(shown[key])), highlight=False)
    if neighbours["before"] or neighbours["after"]:
        out.print()
        out.print(Text("In the same file:", style="bold"))
        for item in neighbours["before"][::-1]:
            _neighbour_line(env, "before", item)
        for item in neighbours["after"]:
            _neighbour_line(env, "after", item)


def _neighbour_line(env: Env, side: str, item: dict[str, Any]) -> None:
    lines = ""
    if item.get("line_start"):
        lines = f":{item['line_start']}-{item['line_end']}"
    env.out.print(
        f"  [dim]{side:<6}[/] {item['drawer_id']}{lines}  [dim]{escape(item['preview'])}[/]",
        highlight=False,
        soft_wrap=True,
    )


def forget(
    ctx: typer.Context,
    drawer: list[str] = typer.Option(
        None, "--drawer", metavar="DRAWER-ID", help="A drawer to remove (repeat for several)."
    ),
    source: str = typer.Option(
        None,
        "--source",
        metavar="PATH",
        help="Every drawer from this file, or from every file under this folder.",
    ),
    wing: str = typer.Option(None, "--wing", metavar="WING", help="Every drawer in this wing."),
    room: str = typer.Option(
        None, "--room", metavar="ROOM", help="With --wing: only this room of it."
    ),
    yes: bool = typer.Option(False, "--yes", "-y", help="Remove without asking."),
    dry_run: bool = typer.Option(False, "--dry-run", help="List what would go; remove nothing."),
    json_output: bool = json_option(JSON_HELP),
) -> None:
    """Remove drawers: by id, by source file or folder, or a whole wing or room.

    Lists what it will remove first; asks on a terminal, and needs --yes otherwise.

    A file whose drawers are all forgotten is forgotten by mining too: mining its folder
    again files it again.

    Example: mempalace forget --source notes/inbox.md --yes
    """
    env = get_env(ctx)
    chosen = [bool(drawer), source is not None, wing is not None or room is not None]
    if sum(chosen) != 1:
        raise InvalidInputError(
            "Say what to forget: --drawer ID, --source PATH, or --wing W [--room R] (one of them).",
            hint="e.g. mempalace forget --wing old-project --yes",
        )
    if room is not None and wing is None:
        raise InvalidInputError(
            "--room needs --wing: a room name can exist in several wings.",
            hint="e.g. mempalace forget --wing notes --room inbox",
        )
    palace = env.palace()
    plan = palace.forget(
        drawer_ids=drawer or None, source=source, wing=wing, room=room, dry_run=True
    )
    if dry_run:
        if json_output:
            print_json(plan)
        else:
            _list_plan(env, plan, "Would remove")
        return
    if not json_output:
        _list_plan(env, plan, "Will remove")
    if not yes:
        if json_output or not env.interactive:
            raise InvalidInputError(
                f"Not removing {plan['matched']} drawers without confirmation.",
                hint="Add --yes to remove them (or --dry-run to only list them).",
            )
        if not typer.confirm(f"Remove these {plan['matched']} drawers?", default=False):
            env.out.print("Nothing was removed.")
            return
    ids = [d["id"] for d in plan["drawers"]]
    removed, files = 0, []
    for start in range(0, len(ids), FORGET_BATCH):
        done = palace.forget(drawer_ids=ids[start : start + FORGET_BATCH])
        removed += done["removed"]
        files += done.get("files_forgotten", [])
    report = {**plan, "dry_run": False, "removed": removed, "files_forgotten": files}
    if json_output:
        print_json(report)
        return
    env.out.print(f"Removed {removed} drawers.", highlight=False)
    if files:
        env.out.print(
            f"{len(files)} mined file(s) left the mining record: mining their folder again "
            "files them again.",
            highlight=False,
            soft_wrap=True,
        )


def _list_plan(env: Env, plan: dict[str, Any], verb: str) -> None:
    drawers = plan["drawers"]
    env.out.print(f"{verb} {len(drawers)} drawers:", highlight=False)
    for item in drawers[:LISTED]:
        where = f"{item['wing']} / {item['room']}"
        source = item.get("source_file") or ""
        env.out.print(
            f"  {item['id']}  [cyan]{escape(where)}[/]  [dim]{escape(source)}[/]",
            highlight=False,
            soft_wrap=True,
        )
    if len(drawers) > LISTED:
        env.out.print(f"  ... and {len(drawers) - LISTED} more (see --json)", highlight=False)
    for missing in plan.get("missing", []):
        env.err.print(f"No drawer with id {missing!r}; skipped.", highlight=False)


def register(app: typer.Typer) -> None:
    app.command()(show)
    app.command()(forget)
