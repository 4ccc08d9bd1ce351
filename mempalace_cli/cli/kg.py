"""`mempalace kg`: the temporal knowledge graph (add, query, invalidate, timeline, stats)."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

import typer

from mempalace_cli.cli.env import Env, did_you_mean, get_env, markup, print_json, report_not_found
from mempalace_cli.cli.options import argument, command_group, json_option, option
from mempalace_cli.cli.tables import make_table, print_counts
from mempalace_cli.memory.kg import FactInput

if TYPE_CHECKING:
    from rich.table import Table

DATE_HELP = "YYYY-MM-DD or an ISO datetime."

kg_app = command_group(
    help="Facts with a history: who owns what, since when, and until when.\n\n"
    "Example: mempalace kg add MyProject uses Clerk --from 2026-03-26 && "
    "mempalace kg query MyProject"
)


def _interval(fact: dict[str, Any]) -> str:
    start, end = fact.get("valid_from"), fact.get("valid_to")
    if not start and not end:
        return "always"
    return f"{start or '…'} → {end or 'now'}"


def _facts_table(title: str, facts: list[dict[str, Any]], with_direction: bool) -> Table:
    table = make_table(title=title)
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
    subject: str = argument("SUBJECT", "Who or what the fact is about, e.g. MyProject."),
    predicate: str = argument("PREDICATE", 'The relation, e.g. "uses" or "owned by".'),
    obj: str = argument("OBJECT", "The other end, e.g. Clerk."),
    valid_from: str = option("--valid-from", "DATE", "True from. " + DATE_HELP, "--from"),
    valid_to: str = option(
        "--valid-to", "DATE", "True until (the last date it holds, included).", "--to"
    ),
    confidence: float = option(
        "--confidence", "0-1", "How sure, 0 to 1.", default=1.0, min=0.0, max=1.0
    ),
    source_drawer: str = option("--source-drawer", "DRAWER-ID", "Drawer id it came from."),
    source_file: str = option("--source-file", "PATH", "File it came from."),
    subject_type: str = option("--subject-type", "TYPE", "e.g. project, person."),
    object_type: str = option("--object-type", "TYPE", "e.g. service, person."),
    json_output: bool = json_option(),
) -> None:
    """Record the fact SUBJECT PREDICATE OBJECT (creates the palace folder if needed).

    Example: mempalace kg add MyProject uses Clerk --from 2026-03-26
    """

    env = get_env(ctx)
    fact = FactInput(
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
    result = env.palace().kg_add(fact)
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
    entity: str = argument("ENTITY", "The entity (case doesn't matter)."),
    as_of: str = option("--as-of", "DATE", "Only facts true on this date. " + DATE_HELP),
    direction: str = option(
        "--direction",
        "outgoing|incoming|both",
        "outgoing (ENTITY is the subject), incoming, or both.",
        "-d",
        default="both",
    ),
    json_output: bool = json_option(),
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
    subject: str = argument("SUBJECT", "Who or what the fact is about."),
    predicate: str = argument("PREDICATE", "The relation."),
    obj: str = argument("OBJECT", "The other end."),
    ended: str = option(
        "--ended",
        "DATE",
        "Last date the fact held (default today; included in as-of queries). " + DATE_HELP,
    ),
    json_output: bool = json_option(),
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
    entity: str = argument("ENTITY", "Only facts about this entity (default: all).", default=None),
    limit: int = option("--limit", "N", "At most this many facts.", min=1),
    json_output: bool = json_option(),
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
    json_output: bool = json_option(),
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
        print_counts(env, "predicate", "facts", result["predicates"])


def register(app: typer.Typer) -> None:
    app.add_typer(kg_app, name="kg")
