"""`mempalace show ID` (one whole drawer, its metadata and its neighbours in its file),
`mempalace drawers` (list them, a page at a time) and `mempalace forget` (remove drawers by id,
by source or by place, after showing what goes). Ids may be shortened to a unique start."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from mempalace_cli.cli.env import Env, get_env, markup, print_json, report_not_found
from mempalace_cli.cli.hits import INDENT, drawer_lines, print_indented, where_label
from mempalace_cli.cli.options import argument, flag, json_option, option
from mempalace_cli.common.errors import InvalidInputError, NotFoundError
from mempalace_cli.common.lazy import lazy
from mempalace_cli.miners.dates import SOURCES
from mempalace_cli.storage.drawer_ids import expand_prefix

if TYPE_CHECKING:
    from mempalace_cli.service import Palace

rich_table = lazy("rich.table")
rich_text = lazy("rich.text")

FORGET_BATCH = 1000  # ids per forget call (the service's per-call cap)
LISTED = 20  # drawers listed by name before "... and N more"
# Metadata shown in the header already, or only useful to programs (see --json).
HIDDEN_META = {"wing", "room", "source_file", "line_start", "line_end", "chunk_index"}


def show(
    ctx: typer.Context,
    drawer_id: str = argument(
        "DRAWER-ID",
        "The drawer's id, as search or `mempalace drawers` prints it, or any unique start "
        "of it (6 characters or more).",
    ),
    around: int = option(
        "--around",
        "N",
        "How many neighbouring drawers of its file to list before and after it.",
        default=2,
        min=0,
        max=20,
    ),
    json_output: bool = json_option(),
) -> None:
    """Print one drawer whole, with its metadata and its neighbours in its file.

    The text comes with its line numbers in the source file; the neighbours are the drawers cut
    just before and after it.

    Example: mempalace show drawer_notes_decisions_50c23b456c072802
    """
    env = get_env(ctx)
    palace = env.palace()
    drawer_id = full_id(palace, drawer_id)
    drawer = palace.get_drawer(drawer_id)
    neighbours = palace.drawer_neighbours(drawer_id, around=around)
    if json_output:
        print_json({"drawer": drawer, "neighbours": neighbours})
        return
    render_drawer(env, drawer, neighbours)


def render_drawer(env: Env, drawer: dict[str, Any], neighbours: dict[str, Any]) -> None:
    out = env.out
    meta = drawer.get("metadata") or {}
    out.print(
        rich_text.Text.assemble(
            (drawer["drawer_id"], "bold"), "   ", (drawer["wing"] + " / " + drawer["room"], "bold")
        ),
        highlight=False,
    )
    place = f"   drawer {neighbours['position']} of {neighbours['total']} in its file"
    out.print(
        rich_text.Text.assemble((where_label(drawer), "cyan"), (place, "dim")), highlight=False
    )
    out.print()
    print_indented(out, drawer_lines(out, drawer, "", True, max(out.width - INDENT, 20)), 0)
    out.print()
    shown = {k: v for k, v in meta.items() if k not in HIDDEN_META and v not in (None, "")}
    out.print(
        rich_text.Text("filed at ", style="dim")
        + rich_text.Text(str(drawer.get("filed_at") or "-"))
    )
    out.print(
        rich_text.Text("dated    ", style="dim") + rich_text.Text(_dated(drawer, meta)),
        highlight=False,
    )
    for key in sorted(shown):
        out.print(
            rich_text.Text(key + ": ", style="dim") + rich_text.Text(str(shown[key])),
            highlight=False,
        )
    if neighbours["before"] or neighbours["after"]:
        out.print()
        out.print(rich_text.Text("In the same file:", style="bold"))
        for item in neighbours["before"][::-1]:
            _neighbour_line(env, "before", item)
        for item in neighbours["after"]:
            _neighbour_line(env, "after", item)


def _dated(drawer: dict[str, Any], meta: dict[str, Any]) -> str:
    """The date search --since/--before read (filters.py), and where it came from."""

    stamp, source = meta.get("date"), SOURCES.get(str(meta.get("date_source")), "")
    if stamp and not source:
        source = (
            "the file's time at first mining, by an older version: mine its folder again to "
            "date it by what it records"
            if meta.get("ingest_mode") == "projects"
            else "its date field"
        )
    elif not stamp and meta.get("timestamp"):
        stamp, source = meta["timestamp"], SOURCES["chat"]
    elif not stamp and meta.get("ingest_mode") == "manual":
        stamp, source = drawer.get("filed_at"), SOURCES["filed"]
    if not stamp:
        return "- (no date of its own: --since/--before leave it out)"
    return f"{stamp} (from {source})"


def _neighbour_line(env: Env, side: str, item: dict[str, Any]) -> None:
    lines = ""
    if item.get("line_start"):
        lines = f":{item['line_start']}-{item['line_end']}"
    env.out.print(
        markup("  [dim]{:<6}[/] {}{}  [dim]{}[/]", side, item["drawer_id"], lines, item["preview"]),
        highlight=False,
        soft_wrap=True,
    )


def forget(
    ctx: typer.Context,
    drawer: list[str] = option(
        "--drawer",
        "DRAWER-ID",
        "A drawer to remove, by id or a unique start of it (repeat for several).",
    ),
    source: str = option(
        "--source", "PATH", "Every drawer from this file, or from every file under this folder."
    ),
    wing: str = option("--wing", "WING", "Every drawer in this wing."),
    room: str = option("--room", "ROOM", "With --wing: only this room of it."),
    yes: bool = flag("--yes", "Remove without asking.", "-y"),
    dry_run: bool = flag("--dry-run", "List what would go; remove nothing."),
    json_output: bool = json_option(),
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
    if drawer:
        drawer = [full_id(palace, d, missing_ok=True) for d in drawer]
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
    env.out.print(markup("Removed {} drawers.", removed), highlight=False)
    if files:
        env.out.print(
            markup(
                "{} mined file(s) left the mining record: mining their folder again files them "
                "again.",
                len(files),
            ),
            highlight=False,
            soft_wrap=True,
        )


def _list_plan(env: Env, plan: dict[str, Any], verb: str) -> None:
    drawers = plan["drawers"]
    env.out.print(markup("{} {} drawers:", verb, len(drawers)), highlight=False)
    for item in drawers[:LISTED]:
        where = f"{item['wing']} / {item['room']}"
        source = item.get("source_file") or ""
        env.out.print(
            markup("  {}  [cyan]{}[/]  [dim]{}[/]", item["id"], where, source),
            highlight=False,
            soft_wrap=True,
        )
    if len(drawers) > LISTED:
        env.out.print(markup("  ... and {} more (see --json)", len(drawers) - LISTED))
    for missing in plan.get("missing", []):
        env.err.print(markup("No drawer with id {!r}; skipped.", missing), highlight=False)


def full_id(palace: Palace, text: str, missing_ok: bool = False) -> str:
    """The drawer id `text` stands for: itself, or the one id it is a unique start of (see
    `drawer_ids.expand_prefix`). With `missing_ok`, an id nothing matches comes back as
    given (the caller reports it)."""

    palace.require()
    palace.sync()
    try:
        return expand_prefix(palace.catalog.conn, text)
    except NotFoundError:
        if missing_ok:
            return text
        raise


PAGE = 100  # drawers per service call (its page limit)
PREVIEW = 120  # characters of text shown per drawer


def drawers(
    ctx: typer.Context,
    wing: str = option("--wing", "WING", "Only drawers of this wing."),
    room: str = option("--room", "ROOM", "Only drawers of this room."),
    source: str = option(
        "--source",
        "PATH",
        "Only drawers from this file, from the files under this folder, or from files "
        "whose path ends so (e.g. inbox.md).",
    ),
    limit: int = option(
        "--limit", "N", "List at most N drawers.", "-n", default=20, min=1, max=10_000
    ),
    offset: int = option("--offset", "N", "Skip the first N (the next page).", default=0, min=0),
    json_output: bool = json_option(),
) -> None:
    """List drawers, newest first: id, wing and room, source, date and the start of the text.

    A table on a terminal; one tab-separated line per drawer on a pipe (id, wing, room,
    source, filed at, text). Read one whole with `mempalace show ID`.

    Example: mempalace drawers --wing notes --room decisions --limit 50
    """
    env = get_env(ctx)
    palace = env.palace()
    if source and Path(source).expanduser().exists():  # a path as typed: the one it names
        source = str(Path(source).expanduser().resolve())
    listed: list[dict[str, Any]] = []
    while True:
        page = palace.list_drawers(
            wing=wing,
            room=room,
            source=source,
            limit=min(PAGE, limit - len(listed)),
            offset=offset + len(listed),
        )
        listed += page["drawers"]
        if not page["has_more"] or len(listed) >= limit or not page["drawers"]:
            break
    total = page["total"]
    doc = {
        "filters": {**page["filters"], "source": source},
        "drawers": listed,
        "total": total,
        "limit": limit,
        "offset": offset,
        "has_more": offset + len(listed) < total,
    }
    if total == 0 and (wing or room or source):
        report_not_found(
            json_output,
            "No drawers match these filters.",
            page.get("hint") or "Check the source path; `mempalace status` lists the wings.",
            doc,
        )
    if json_output:
        print_json(doc)
        return
    if total == 0:
        env.out.print("The palace has no drawers yet. Next: mempalace mine <dir>")
        return
    if not listed:
        env.out.print(markup("No drawers past --offset {}: there are {}.", offset, total))
        return
    if env.out.is_terminal:
        _drawer_table(env, listed)
    else:
        for item in listed:
            typer.echo("\t".join(_plain_fields(item)))
    first, last = offset + 1, offset + len(listed)
    footer = f"Drawers {first}-{last} of {total}."
    if doc["has_more"]:
        footer += f" Next page: --offset {last}."
    console = env.out if env.out.is_terminal else env.err
    console.print(markup("[dim]{}[/]", footer), highlight=False)


def _one_line(text: str, limit: int = PREVIEW) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _plain_fields(item: dict[str, Any]) -> list[str]:
    return [
        item["drawer_id"],
        item["wing"],
        item["room"],
        item.get("source_file") or "",
        item.get("filed_at") or "",
        _one_line(item.get("preview") or ""),
    ]


def _drawer_table(env: Env, listed: list[dict[str, Any]]) -> None:
    """Id, wing / room, source file, date and text, one line each, fitted to the terminal:
    the id is never cut; the date, then the source, go when there is no room; the text takes
    what is left."""

    rows = [
        {
            "id": item["drawer_id"],
            "wing / room": f"{item['wing']} / {item['room']}",
            "source": Path(item.get("source_file") or "").name,
            "filed": (item.get("filed_at") or "")[:10],
            "text": _one_line(item.get("preview") or ""),
        }
        for item in listed
    ]
    caps = {"id": 10_000, "wing / room": 28, "source": 28, "filed": 10}
    widths = {k: min(cap, max(len(k), *(len(r[k]) for r in rows))) for k, cap in caps.items()}
    gap, text_min = 2, 20
    for dropped in ("filed", "source", "wing / room"):
        if sum(widths.values()) + gap * len(widths) + text_min <= env.out.width:
            break
        del widths[dropped]
    text_width = max(10, env.out.width - sum(widths.values()) - gap * len(widths) - 1)
    table = rich_table.Table(
        box=None, pad_edge=False, padding=(0, gap, 0, 0), header_style="bold dim"
    )
    styles = {"id": "bold", "wing / room": "cyan", "filed": "dim"}
    for name, width in [*widths.items(), ("text", text_width)]:
        table.add_column(
            name, width=width, no_wrap=True, overflow="ellipsis", style=styles.get(name, "")
        )
    for row in rows:
        table.add_row(*(rich_text.Text(row[name]) for name in [*widths, "text"]))
    env.out.print(table)


def register(app: typer.Typer) -> None:
    app.command()(show)
    app.command()(drawers)
    app.command()(forget)
