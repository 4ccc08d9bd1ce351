"""`mempalace kg`: the temporal knowledge graph (add, query, invalidate, timeline, stats)."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

import typer

from mempalace_cli.cli.env import (
    CONTEXT_SETTINGS,
    JSON_HELP,
    Env,
    did_you_mean,
    get_env,
    json_option,
    markup,
    print_json,
    report_not_found,
)

if TYPE_CHECKING:
    from rich.table import Table

DATE_HELP = "YYYY-MM-DD or an ISO datetime."

kg_app = typer.Typer(
    help="Facts with a history: who owns what, since when, and until when.\n\n"
    "Example: mempalace kg add MyProject uses Clerk --from 2026-03-26 && "
    "mempalace kg query MyProject",
    context_settings=CONTEXT_SETTINGS,
    no_args_is_help=True,
)


def _interval(fact: dict[str, Any]) -> str:
    start, end = fact.get("valid_from"), fact.get("valid_to")
    if not start and not end:
        return "always"
    return f"{start or '…'} → {end or 'now'}"


def _facts_table(title: str, facts: list[dict[str, Any]], with_direction: bool) -> Table:
    from rich.table import Table

    table = Table(title=title, title_justify="left", pad_edge=False, box=None)
    if with_direction:
        table.add_column("dir", no_wrap=True)
    for name in ("subject", "predicate", "object", "valid", "conf", "now"):
        table.add_column(name, no_wrap=name != "object")
    for fact in facts:
        row = [
            markup("{}", fact["subject"]),
            markup("{}", fact["predicate"]),
            markup("{}", fact["object"]),
            markup("{}", _interval(fact)),
            markup("{:g}", fact["confidence"]),
            "[green]yes[/]" if fact["current"] else "[dim]no[/]",
        ]
        if with_direction:
            row.insert(0, "→" if fact.get("direction") == "outgoing" else "←")
        table.add_row(*row)
    return table


@kg_app.command("add")
def add(
    ctx: typer.Context,
    subject: str = typer.Argument(
        ..., metavar="SUBJECT", help="Who or what the fact is about, e.g. MyProject."
    ),
    predicate: str = typer.Argument(
        ..., metavar="PREDICATE", help='The relation, e.g. "uses" or "owned by".'
    ),
    obj: str = typer.Argument(..., metavar="OBJECT", help="The other end, e.g. Clerk."),
    valid_from: str = typer.Option(
        None, "--valid-from", "--from", metavar="DATE", help="True from. " + DATE_HELP
    ),
    valid_to: str = typer.Option(
        None,
        "--valid-to",
        "--to",
        metavar="DATE",
        help="True until (the last date it holds, included).",
    ),
    confidence: float = typer.Option(
        1.0, "--confidence", metavar="0-1", min=0.0, max=1.0, help="How sure, 0 to 1."
    ),
    source_drawer: str = typer.Option(
        None, "--source-drawer", metavar="DRAWER-ID", help="Drawer id it came from."
    ),
    source_file: str = typer.Option(
        None, "--source-file", metavar="PATH", help="File it came from."
    ),
    subject_type: str = typer.Option(
        None, "--subject-type", metavar="TYPE", help="e.g. project, person."
    ),
    object_type: str = typer.Option(
        None, "--object-type", metavar="TYPE", help="e.g. service, person."
    ),
    json_output: bool = json_option(JSON_HELP),
) -> None:
    """Record the fact SUBJECT PREDICATE OBJECT (creates the palace folder if needed).

    Example: mempalace kg add MyProject uses Clerk --from 2026-03-26
    """
    env = get_env(ctx)
    result = env.palace().kg_add(
        subject,
        predicate,
        obj,
        valid_from=valid_from,
        valid_to=valid_to,
        confidence=confidence,
        source_drawer_id=source_drawer,
        source_file=source_file,
        subject_type=subject_type,
        object_type=object_type,
    )
    if json_output:
        print_json(result)
        return
    verb = "Recorded" if result["created"] else "Already known"
    env.out.print(
        markup(
            "{}: [bold]{}[/] {} [bold]{}[/]  ({})  id {}",
            verb,
            result["subject"],
            result["predicate"],
            result["object"],
            _interval(result),
            result["triple_id"],
        ),
        highlight=False,
    )


@kg_app.command("query")
def query(
    ctx: typer.Context,
    entity: str = typer.Argument(..., metavar="ENTITY", help="The entity (case doesn't matter)."),
    as_of: str = typer.Option(
        None, "--as-of", metavar="DATE", help="Only facts true on this date. " + DATE_HELP
    ),
    direction: str = typer.Option(
        "both",
        "--direction",
        "-d",
        metavar="outgoing|incoming|both",
        help="outgoing (ENTITY is the subject), incoming, or both.",
    ),
    json_output: bool = json_option(JSON_HELP),
) -> None:
    """Show the facts about ENTITY, optionally as they stood on a date.

    An unknown entity is "not found" (exit status 4) and the closest names are suggested.

    Example: mempalace kg query MyProject --as-of 2026-03-01
    """
    env = get_env(ctx)
    result = env.palace().kg_query(entity, as_of=as_of, direction=direction)
    when = f" as of {result['as_of']}" if result["as_of"] else ""
    if not result["facts"]:
        if "suggestions" in result:  # no such entity
            message = f"No entity named {entity!r} in the knowledge graph."
            hint = did_you_mean(result["suggestions"]) or (
                "Add a fact with: mempalace kg add SUBJECT PREDICATE OBJECT"
            )
        else:  # it exists, but the date or direction leaves nothing
            side = "" if direction == "both" else f"{direction} "
            message = f"No {side}facts about {result['entity']!r}{when}."
            hint = f"See all its facts with: mempalace kg timeline {shlex.quote(entity)}"
        report_not_found(json_output, message, hint, result)
    if json_output:
        print_json(result)
        return
    title = markup("{}{}: {} fact(s)", result["entity"], when, result["count"])
    env.out.print(_facts_table(title, result["facts"], with_direction=True), highlight=False)


@kg_app.command("invalidate")
def invalidate(
    ctx: typer.Context,
    subject: str = typer.Argument(..., metavar="SUBJECT", help="Who or what the fact is about."),
    predicate: str = typer.Argument(..., metavar="PREDICATE", help="The relation."),
    obj: str = typer.Argument(..., metavar="OBJECT", help="The other end."),
    ended: str = typer.Option(
        None,
        "--ended",
        metavar="DATE",
        help="Last date the fact held (default today; included in as-of queries). " + DATE_HELP,
    ),
    json_output: bool = json_option(JSON_HELP),
) -> None:
    """Mark SUBJECT PREDICATE OBJECT as no longer true. History keeps it.

    Example: mempalace kg invalidate MyProject uses Auth0 --ended 2026-03-26
    """
    env = get_env(ctx)
    result = env.palace().kg_invalidate(subject, predicate, obj, ended=ended)
    if json_output:
        print_json(result)
        return
    env.out.print(
        markup(
            "Ended [bold]{}[/] {} [bold]{}[/] on {} ({} fact(s)); it stays in the history.",
            result["subject"],
            result["predicate"],
            result["object"],
            result["ended"],
            result["invalidated"],
        ),
        highlight=False,
    )


@kg_app.command("timeline")
def timeline(
    ctx: typer.Context,
    entity: str = typer.Argument(
        None, metavar="ENTITY", help="Only facts about this entity (default: all)."
    ),
    limit: int = typer.Option(None, "--limit", metavar="N", min=1, help="At most this many facts."),
    json_output: bool = json_option(JSON_HELP),
) -> None:
    """Show facts in chronological order of when they became true.

    Example: mempalace kg timeline MyProject --limit 20
    """
    env = get_env(ctx)
    palace = env.palace()
    result = palace.kg_timeline(entity, limit=limit)
    if entity and not result["facts"]:
        known = palace.kg_query(entity)  # carries "suggestions" when no such entity exists
        if "suggestions" in known:
            hint = did_you_mean(known["suggestions"]) or (
                "Add a fact with: mempalace kg add SUBJECT PREDICATE OBJECT"
            )
            message = f"No entity named {entity!r} in the knowledge graph."
            report_not_found(json_output, message, hint, result)
    if json_output:
        print_json(result)
        return
    if not result["facts"]:
        about = f" about {result['entity']!r}" if entity else ""
        env.out.print(
            markup("No facts{} yet. Add one with: mempalace kg add S P O", about), highlight=False
        )
        return
    about = f" of {result['entity']}" if entity else ""
    title = markup("Timeline{}: {} fact(s)", about, result["count"])
    env.out.print(_facts_table(title, result["facts"], with_direction=False), highlight=False)


@kg_app.command("stats")
def stats(
    ctx: typer.Context,
    json_output: bool = json_option(JSON_HELP),
) -> None:
    """Count entities, facts (current and expired) and predicates.

    Example: mempalace kg stats --json
    """
    env = get_env(ctx)
    result = env.palace().kg_stats()
    if json_output:
        print_json(result)
        return
    render_stats(env, result)


def render_stats(env: Env, result: dict[str, Any]) -> None:
    env.out.print(
        markup(
            "{} entities, {} facts ({} current, {} expired)",
            result["entities"],
            result["triples"],
            result["current_facts"],
            result["expired_facts"],
        ),
        highlight=False,
    )
    if result["predicates"]:
        from rich.table import Table

        table = Table("predicate", "facts", box=None, pad_edge=False)
        for name, n in result["predicates"].items():
            table.add_row(markup("{}", name), markup("{}", n))
        env.out.print(table, highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(kg_app, name="kg")
