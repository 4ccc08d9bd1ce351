"""`mempalace search` and `mempalace status`."""

from __future__ import annotations

from datetime import date, timedelta
from typing import TYPE_CHECKING, Any

import typer

from mempalace_cli.cli.env import Env, get_env, markup, print_json, report_not_found
from mempalace_cli.cli.hits import (
    INDENT,
    copies_note,
    drawer_lines,
    fit_path,
    print_indented,
    where_label,
    wrap_segments,
)
from mempalace_cli.cli.options import argument, flag, json_option, option
from mempalace_cli.cli.words import cli_words
from mempalace_cli.common.clock import local_date
from mempalace_cli.common.lazy import lazy
from mempalace_cli.search.dates import resolve_range

if TYPE_CHECKING:
    from rich.text import Text

rich_text = lazy("rich.text")
rich_tree = lazy("rich.tree")

# On stderr (not with --quiet): stdout holds only the results, for a pipe.
SCORES_LEGEND = (
    "score: the rank score that sets the order (semantic and keyword sides fused; higher first).",
    "similarity: cosine similarity of query and drawer (-1 to 1; near 0 is unrelated).",
)


def search(
    ctx: typer.Context,
    query: str = argument("QUERY", "What to look for, in natural language or keywords."),
    wing: str = option("--wing", "WING", "Only this wing (exact name, see status)."),
    room: str = option("--room", "ROOM", "Only this room (exact name, see status)."),
    n: int = option("-n", "COUNT", "How many results.", "--results", default=5, min=1, max=100),
    mode: str = option(
        "--mode",
        "hybrid|vector|lexical",
        "Ranking: hybrid (lexical + semantic, the default), vector or lexical only.",
        default="hybrid",
    ),
    since: str = option(
        "--since",
        "DATE",
        "Only drawers dated on or after DATE: YYYY-MM-DD, or relative (a period counts "
        "from its first day): 7d, yesterday, last week, last month, 'in March', or the same "
        "in Chinese. "
        "A drawer's date is that of what it records: a chat's time, a note's front matter, "
        "Date: line or dated file name, else the file's time.",
    ),
    before: str = option(
        "--before", "DATE", "Only drawers dated before DATE (YYYY-MM-DD or relative, as --since)."
    ),
    now: str = option(
        "--now",
        "DATE",
        "Read relative dates as of DATE (YYYY-MM-DD or an ISO time) instead of today "
        "(also MEMPALACE_NOW).",
    ),
    source: str = option(
        "--source",
        "PATH",
        "Only drawers from this source: the path as results show it, its ending "
        "(auth.md) or a folder.",
    ),
    max_distance: float = option(
        "--max-distance",
        "D",
        "Drop hits whose cosine distance to the query is larger (0 identical, 1 "
        "unrelated, 2 opposite); e.g. 0.6 keeps close matches only.",
        min=0.0,
        max=2.0,
    ),
    full: bool = flag("--full", "Print each drawer whole instead of its best-matching lines."),
    aaak: bool = flag(
        "--aaak",
        "Show each result as a one-line AAAK summary instead: a compact, lossy notation "
        "for agents (entities, topics, quotes; see mempalace wake-up --aaak-spec).",
    ),
    json_output: bool = json_option(),
) -> None:
    """Find the drawers that best answer QUERY (lexical + semantic ranking).

    Each hit shows its wing and room, its source path relative to the mined folder with the
    line range, its rank score (which sets the order) and its similarity, then the lines
    that best match the query, with the query's words highlighted on a terminal. What the two
    numbers mean is said on stderr (not with --quiet), so a pipe gets the results only.

    Example: mempalace search "why did we move off Auth0?" --wing notes -n 3
    """
    env = get_env(ctx)

    since, before = resolve_range(since, before, now, ("--since", "--before"))
    result = env.palace().search(
        query,
        wing=wing,
        room=room,
        limit=n,
        mode=mode,
        since=since,
        before=before,
        source_file=source,
        max_distance=max_distance,
        now=now,
    )
    if aaak:
        for item in result["results"]:
            item["aaak"] = env.palace().aaak_encode(item["text"], **item["metadata"])
    if not result["results"] and _filtered(result):
        report_not_found(
            json_output,
            f"No drawers match {query!r} {_filter_words(result)}.",
            result.get("hint") or "Check the exact wing and room names with: mempalace status",
            result,
        )
    if json_output:
        print_json(result)
        return
    render_results(env, result, full=full)
    for note in _notes(result):
        env.err.print(markup("[dim]{}[/]", note), highlight=False)


def _notes(result: dict[str, Any]) -> list[str]:
    """What a reader should know about the dates behind the results (on stderr)."""
    notes = []
    time = result.get("time")
    if time:
        last = (date.fromisoformat(time["before"]) - timedelta(days=1)).isoformat()
        span = time["since"] if last == time["since"] else f"{time['since']} to {last}"
        notes.append(
            f"The question names {time['named']!r} ({span}): {time['ranked_first']} of these "
            f"results are dated then and come first. To keep only those: --since {time['since']} "
            f"--before {time['before']}."
        )
    if result.get("hint"):  # drawers a date filter could not place (filters.py)
        notes.append(f"Note: {cli_words(result['hint'])}")
    return notes


def _filtered(result: dict[str, Any]) -> bool:
    return any(v not in (None, "") for v in (result.get("filters") or {}).values())


def _filter_words(result: dict[str, Any]) -> str:
    filters = {k: v for k, v in (result.get("filters") or {}).items() if v not in (None, "")}
    return "with " + ", ".join(f"{k} {v}" for k, v in filters.items())


def render_results(env: Env, result: dict[str, Any], full: bool = False) -> None:
    out = env.out
    if not result["results"]:
        out.print(
            markup("No drawers match {!r}. Try other words, or --mode vector.", result["query"]),
            highlight=False,
        )
        return
    width = max(out.width - INDENT, 20)
    for rank, item in enumerate(result["results"], start=1):
        if rank > 1:
            out.print()
        out.print(wrap_segments(_header(rank, item), out.width), highlight=False)
        print_indented(out, [rich_text.Text(fit_path(where_label(item), width), style="cyan")])
        if "aaak" in item:
            print_indented(out, rich_text.Text(item["aaak"]).wrap(out, width))
        else:
            print_indented(out, drawer_lines(out, item, result["query"], full, width))
    env.err.print()
    for line in SCORES_LEGEND:
        env.err.print(rich_text.Text(line, style="dim"))


def _header(rank: int, item: dict[str, Any]) -> list[Text]:
    sim = item.get("similarity")
    score = item.get("rank_score")
    place = rich_text.Text(f"{rank:>2}. ", style="bold")
    place.append(f"{item['wing']} / {item['room']}", style="bold")
    dated = [rich_text.Text(_day(item["date"]), style="cyan")] if item.get("date") else []
    return [
        place,
        *dated,
        rich_text.Text.assemble("score ", ("-" if score is None else f"{score:.5f}", "bold")),
        rich_text.Text.assemble("similarity ", ("-" if sim is None else f"{sim:.3f}", "bold")),
        rich_text.Text(item["drawer_id"], style="dim"),
        *copies_note(item),
    ]


def _day(stamp: str) -> str:
    """The day a drawer is dated, on the user's calendar (a UTC time shown as its local day)."""

    try:
        return local_date(str(stamp))
    except ValueError:
        return str(stamp)[:10]


def status(
    ctx: typer.Context,
    verify: bool = flag(
        "--verify",
        "Compare every drawer in the drawer store (text, metadata, vector) with the palace "
        "index and repair what differs. Reads every drawer: slower on a big palace.",
    ),
    json_output: bool = json_option(),
) -> None:
    """Show the palace: where it is, how many drawers, and drawers per wing and room.

    Example: mempalace status --palace ~/.mempalace/palace
    Example: mempalace status --verify   (after another tool wrote to a shared Chroma server)
    """
    env = get_env(ctx)
    result = env.palace().status(verify=verify)
    if json_output:
        print_json(result)
        return
    checked = result.get("verified")
    if checked is not None:
        env.out.print(_verified_line(checked), highlight=False)

    tree = rich_tree.Tree(
        markup(
            "[bold]{}[/]  {} drawers  [dim]model {}[/]",
            result["palace_path"],
            result["total_drawers"],
            result["embedding_model"],
        )
    )
    for wing, rooms in sorted(result["taxonomy"].items()):
        branch = tree.add(markup("[cyan]{}[/]  {}", wing, result["wings"][wing]))
        for room, count in sorted(rooms.items()):
            branch.add(markup("{}  {}", room, count))
    env.out.print(tree, highlight=False)
    if not result["total_drawers"]:
        env.out.print("The palace is empty. Next: mempalace mine <dir>")


def _verified_line(checked: dict[str, Any]) -> str:
    n = checked["drawers_checked"]
    if checked["all_matched"]:
        return f"Checked {n} drawers against the drawer store: the palace index matches it."
    r = checked["repair"]
    return (
        f"Checked {n} drawers against the drawer store and repaired the palace index from it: "
        f"{r['added']} added, {r['updated']} updated, {r['removed']} removed."
    )


def register(app: typer.Typer) -> None:
    app.command()(search)
    app.command()(status)
