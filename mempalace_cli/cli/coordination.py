"""`mempalace log`, `mempalace task` and `mempalace artifact`: the coordination log, where agents
(and people) hand work to each other through the palace (service/coordination.py).

`log` appends, lists, waits for and acknowledges events; `task` creates tasks, lists them with
their status and sets it; `artifact` stores a file's exact text and writes it back byte for
byte. Each prints a table on a terminal and one JSON document with --json. `log wait` exits
with status 124 (as timeout(1) does) when nothing came in time.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from mempalace_cli.cli.env import Env, get_env, markup, print_json
from mempalace_cli.cli.options import argument, command_group, flag, json_option, option
from mempalace_cli.cli.secret_lines import say_redacted
from mempalace_cli.cli.tables import make_table
from mempalace_cli.cli.words import cli_words
from mempalace_cli.common.errors import InvalidInputError, NotFoundError, from_os_error
from mempalace_cli.common.lazy import lazy

if TYPE_CHECKING:
    from rich.table import Table

    from mempalace_cli.service.coordination import Coordination, EventFilter

# Loaded when a command runs, not for `mempalace log --help`.
service_log = lazy("mempalace_cli.service.coordination")

EXIT_TIMED_OUT = 124  # `log wait` with nothing matching in time, as timeout(1) exits
MAX_WAIT_SECONDS = 60.0  # service.coordination.MAX_WAIT_MS (not imported: keep --help light)
TASK_STATUSES = ("open", "claimed", "ready", "applied", "blocked", "failed", "superseded", "done")
BODY_CELL = 80  # characters of a body shown in a table cell

log_app = command_group(
    help="The coordination log: events agents hand work through (append, list, wait, ack).\n\n"
    "Example: mempalace log append --type task.reply --stream project/myapp --room delegation "
    '--from mac-claude --to win-codex --body "Done, see the patch."'
)
task_app = command_group(
    help="Tasks handed between agents through the coordination log.\n\n"
    'Example: mempalace task create --project myapp --from mac-claude --to win-codex --goal "Fix '
    'the flaky test." --done "The focused tests pass."'
)
artifact_app = command_group(
    help="Exact text handed over through the palace (a patch, a file, a log), by id.\n\n"
    "Example: mempalace artifact put fix.diff --kind patch --by win-codex"
)


def _coordination(env: Env) -> Coordination:
    return env.palace().coordination


def _read_text(value: str | None) -> str | None:
    """A text option: '-' reads standard input."""
    if value == "-":
        return sys.stdin.read()
    return value


def _meta(pairs: list[str] | None) -> dict[str, str] | None:
    if not pairs:
        return None
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidInputError(
                f"--meta {pair!r} is not KEY=VALUE.", hint="Example: --meta path=src/app.py"
            )
        out[key.strip()] = value
    return out


# -- shared options ----------------------------------------------------------------------------
STREAM_HELP = "Only events in this stream (e.g. project/myapp)."
TO_HELP = "Only events for this agent (broadcasts to '*' match too)."


def _line(text: str | None) -> str:
    if not text:
        return ""
    first = text.strip().splitlines()[0] if text.strip() else ""
    more = len(text.strip().splitlines()) > 1 or len(first) > BODY_CELL
    return first[:BODY_CELL] + ("…" if more else "")


def _events_table(title: str, events: list[dict[str, Any]]) -> Table:
    table = make_table(title=title)
    for name in ("id", "time (UTC)", "type", "from → to", "stream / room", "status", "body"):
        table.add_column(name, no_wrap=name != "body")
    for e in events:
        table.add_row(
            markup("[cyan]{}[/]", e["id"]),
            markup("{}", (e["created_at"] or "").replace("T", " ")[:19]),
            markup("{}", e["type"]),
            markup("{} → {}", e["from_agent"], e["to_agent"] or "-"),
            markup("{} / {}", e["stream"], e["room"]),
            markup("{}", e["status"] or ""),
            markup("{}", _line(e["body"]))
            + (
                markup(" [dim]({} artifacts)[/]", len(e["artifact_ids"]))
                if e["artifact_ids"]
                else ""
            ),
        )
    return table


def _print_event(env: Env, verb: str, event: dict[str, Any]) -> None:
    status = " (status " + event["status"] + ")" if event["status"] else ""
    env.out.print(
        markup(
            "{} [cyan]{}[/]: {} from {} to {} in {} / {}{}",
            verb,
            event["id"],
            event["type"],
            event["from_agent"],
            event["to_agent"] or "nobody in particular",
            event["stream"],
            event["room"],
            status,
        ),
        highlight=False,
    )


def _say_redacted(env: Env, result: dict[str, Any], what: str) -> None:
    n = result.get("secrets_redacted") or 0
    if n:
        say_redacted(env, f"{n} secret value{'s' if n != 1 else ''} in the {what}")


# -- mempalace log ---------------------------------------------------------------------------
@log_app.command("append")
def log_append(
    ctx: typer.Context,
    type_: str = option(
        "--type", "TYPE", "The kind of event, e.g. task.reply, status.", default=...
    ),
    stream: str = option("--stream", "STREAM", "The channel, e.g. project/myapp.", default=...),
    room: str = option("--room", "ROOM", "The sub-channel, e.g. delegation, patches.", default=...),
    from_agent: str = option("--from", "AGENT", "Who posts it.", "--from-agent", default=...),
    to_agent: str = option("--to", "AGENT", "Who it is for; '*' for every agent.", "--to-agent"),
    topic: str = option("--topic", "TOPIC", "A track within the stream, e.g. auth-v2."),
    correlation_id: str = option("--correlation-id", "ID", "The task id it belongs to."),
    branch: str = option("--branch", "BRANCH", "The git branch, if any."),
    base_commit: str = option("--base-commit", "COMMIT", "The git commit the work started from."),
    status: str = option("--status", "STATUS", "The status it reports, e.g. claimed, blocked."),
    body: str = option("--body", "TEXT", "The message, verbatim; - reads it from standard input."),
    meta: list[str] = option("--meta", "KEY=VALUE", "A metadata field (repeat for more)."),
    artifacts: list[str] = option(
        "--artifact", "ARTIFACT-ID", "An artifact it hands over (repeat)."
    ),
    json_output: bool = json_option(),
) -> None:
    """Append an event to the log; agents waiting for one like it wake at once.

    Example: mempalace log append --type status --stream project/myapp --room status --from me
    --body "Starting on the auth tests."
    """
    env = get_env(ctx)
    result = _coordination(env).event_append(
        type_,
        stream,
        room,
        from_agent,
        to_agent=to_agent,
        topic=topic,
        correlation_id=correlation_id,
        branch=branch,
        base_commit=base_commit,
        status=status,
        body=_read_text(body),
        metadata=_meta(meta),
        artifact_ids=artifacts or None,
    )
    if json_output:
        print_json(result)
        return
    _print_event(env, "Appended", result["event"])
    _say_redacted(env, result, "event")


def _filters(
    stream: str | None,
    room: str | None,
    topic: str | None,
    type_: str | None,
    to_agent: str | None,
    from_agent: str | None,
    writer: str | None,
    correlation_id: str | None,
    status: str | None,
    since_time: str | None,
) -> EventFilter:
    """The events `log list` and `log wait` are asked for, from their options."""
    return service_log.EventFilter(
        stream=stream,
        room=room,
        topic=topic,
        type=type_,
        to_agent=to_agent,
        from_agent=from_agent,
        writer=writer,
        correlation_id=correlation_id,
        status=status,
        since_created_at=since_time,
    )


@log_app.command("list")
def log_list(
    ctx: typer.Context,
    stream: str = option("--stream", "STREAM", STREAM_HELP),
    room: str = option("--room", "ROOM", "Only events in this room."),
    topic: str = option("--topic", "TOPIC", "Only events with this topic."),
    type_: str = option("--type", "TYPE", "Only events of this type."),
    to_agent: str = option("--to", "AGENT", TO_HELP, "--to-agent"),
    from_agent: str = option("--from", "AGENT", "Only events from this agent.", "--from-agent"),
    writer: str = option("--writer", "HOST", "Only events appended on this machine."),
    correlation_id: str = option("--correlation-id", "ID", "Only events of this task id."),
    status: str = option("--status", "STATUS", "Only events that set this status."),
    since: str = option("--since", "EVENT-ID", "Only events after this one, oldest first."),
    before: str = option("--before", "EVENT-ID", "Only events before this one (paging back)."),
    since_time: str = option("--since-time", "DATE", "Only events from this time on (UTC)."),
    limit: int = option("--limit", "N", "At most N.", "-n", default=50, min=1, max=500),
    order: str = option("--order", "asc|desc", "Default: asc with --since, else newest first."),
    preview: bool = flag(
        "--preview", "Cut long bodies (--json; a table shows first lines anyway)."
    ),
    json_output: bool = json_option(),
) -> None:
    """List events, newest first (or oldest first after --since).

    Example: mempalace log list --to win-codex --type task.request
    """
    env = get_env(ctx)
    flt = _filters(
        stream, room, topic, type_, to_agent, from_agent, writer, correlation_id, status, since_time
    )
    result = _coordination(env).event_list(
        flt,
        since_event_id=since,
        before_event_id=before,
        limit=limit,
        order=order,
        preview=preview,
    )
    if json_output:
        print_json(result)
        return
    if not result["events"]:
        env.out.print(markup("No events. {}", _cli_hint(result.get("hint"))), highlight=False)
        return
    title = markup(
        "{} event{}, {}", result["count"], "s" if result["count"] != 1 else "",
        "oldest first" if result["order"] == "asc" else "newest first",
    )  # fmt: skip
    env.out.print(_events_table(title, result["events"]))
    if result.get("has_more"):
        env.err.print(markup("[dim]{}[/]", _cli_hint(result.get("hint"))), highlight=False)


def _cli_hint(text: str | None) -> str:
    return cli_words(text) or ""


@log_app.command("wait")
def log_wait(
    ctx: typer.Context,
    stream: str = option("--stream", "STREAM", STREAM_HELP),
    room: str = option("--room", "ROOM", "Only events in this room."),
    topic: str = option("--topic", "TOPIC", "Only events with this topic."),
    type_: str = option("--type", "TYPE", "Only events of this type."),
    to_agent: str = option("--to", "AGENT", TO_HELP, "--to-agent"),
    from_agent: str = option("--from", "AGENT", "Only events from this agent.", "--from-agent"),
    writer: str = option("--writer", "HOST", "Only events appended on this machine."),
    correlation_id: str = option("--correlation-id", "ID", "Only events of this task id."),
    status: str = option("--status", "STATUS", "Only events that set this status."),
    since: str = option("--since", "EVENT-ID", "Events after this one count, even old ones."),
    since_time: str = option("--since-time", "DATE", "Events from this time on count (UTC)."),
    timeout: float = option(
        "--timeout",
        "SECONDS",
        f"How long to wait (at most {MAX_WAIT_SECONDS:g} s).",
        default=30.0,
        min=0.0,
        max=MAX_WAIT_SECONDS,
    ),
    limit: int = option("--limit", "N", "At most N.", "-n", default=50, min=1, max=500),
    json_output: bool = json_option(),
) -> None:
    """Wait until a matching event is appended (by any process), then print it; exit status
    124 when none came within --timeout.

    Example: mempalace log wait --to win-codex --type task.request --timeout 60
    """
    env = get_env(ctx)
    flt = _filters(
        stream, room, topic, type_, to_agent, from_agent, writer, correlation_id, status, since_time
    )
    result = _coordination(env).event_wait(
        flt,
        since_event_id=since,
        timeout_ms=round(timeout * 1000),
        limit=limit,
    )
    if json_output:
        print_json(result)
    elif result["timed_out"]:
        again = f" --since {shlex.quote(result['cursor'])}" if result["cursor"] else ""
        env.out.print(
            markup(
                "Nothing matching came within {:g} s. Wait again from where this wait stopped "
                "(nothing in between is missed): mempalace log wait{} ...",
                timeout,
                again,
            ),
            highlight=False,
        )
    else:
        env.out.print(_events_table(markup("{} new", result["count"]), result["events"]))
        env.err.print(
            markup("[dim]Next: mempalace log wait --since {} ...[/]", result["cursor"]),
            highlight=False,
        )
    if result["timed_out"]:
        raise typer.Exit(EXIT_TIMED_OUT)


@log_app.command("ack")
def log_ack(
    ctx: typer.Context,
    event_id: str = argument("EVENT-ID", "The event you answer."),
    from_agent: str = option("--from", "AGENT", "Who answers.", "--from-agent", default=...),
    status: str = option("--status", "STATUS", "Your answer, e.g. claimed, applied, failed."),
    body: str = option("--body", "TEXT", "Notes, verbatim; - reads them from standard input."),
    topic: str = option("--topic", "TOPIC", "Default: the event's topic."),
    json_output: bool = json_option(),
) -> None:
    """Acknowledge an event: an event.ack to its writer; the event itself never changes.

    Example: mempalace log ack ev_12_3fa9c1d2 --from win-codex --status claimed
    """
    env = get_env(ctx)
    result = _coordination(env).event_ack(
        event_id, from_agent, status=status, body=_read_text(body), topic=topic
    )
    if json_output:
        print_json(result)
        return
    verb = "Already acknowledged" if result["already_acked"] else "Acknowledged"
    _print_event(env, verb + " " + result["acked_event_id"] + " with", result["event"])
    _say_redacted(env, result, "ack")


# -- mempalace task --------------------------------------------------------------------------
@task_app.command("create")
def task_create(
    ctx: typer.Context,
    project: str = option("--project", "PROJECT", "e.g. myapp.", default=...),
    from_agent: str = option("--from", "AGENT", "Who hands it over.", "--from-agent", default=...),
    to_agent: str = option("--to", "AGENT", "Who should do it.", "--to-agent", default=...),
    goal: str = option(
        "--goal", "TEXT", "What to do and why; - reads standard input.", default=...
    ),
    done: str = option("--done", "TEXT", "When it counts as done.", default=...),
    branch: str = option("--branch", "BRANCH", "The git branch to work on."),
    base_commit: str = option("--base-commit", "COMMIT", "The git commit to start from."),
    json_output: bool = json_option(),
) -> None:
    """Hand a task to an agent; prints its id and a line to paste to that agent.

    Example: mempalace task create --project myapp --from mac-claude --to win-codex
    --goal "Fix the flaky test." --done "The focused tests pass and a patch is submitted."
    """
    env = get_env(ctx)
    result = _coordination(env).task_create(
        project,
        from_agent,
        to_agent,
        _read_text(goal) or "",
        done,
        branch=branch,
        base_commit=base_commit,
    )
    if json_output:
        print_json(result)
        return
    env.out.print(
        markup(
            "Created task [cyan]{}[/] for {} (event {}, status open).",
            result["task_id"],
            result["event"]["to_agent"],
            result["event"]["id"],
        ),
        highlight=False,
    )
    env.out.print(markup("To wake them, paste: {}", result["wake_up"]), highlight=False)
    _say_redacted(env, result, "task")


def _tasks_table(tasks: list[dict[str, Any]]) -> Table:
    table = make_table()
    for name in ("task", "project", "from → to", "status", "by", "updated (UTC)", "goal"):
        table.add_column(name, no_wrap=name != "goal")
    colours = {"open": "yellow", "claimed": "blue", "ready": "green", "applied": "green"}
    for t in tasks:
        bad = t["status"] in ("failed", "blocked")
        colour = colours.get(t["status"] or "", "red" if bad else "default")
        table.add_row(
            markup("[cyan]{}[/]", t["task_id"]),
            markup("{}", t["project"]),
            markup("{} → {}", t["from_agent"], t["to_agent"]),
            "[" + colour + "]" + markup("{}", t["status"] or "") + "[/]",
            markup("{}", t["status_by"]),
            markup("{}", (t["updated_at"] or "").replace("T", " ")[:19]),
            markup("{}", _line(t["goal"])),
        )
    return table


@task_app.command("list")
def task_list(
    ctx: typer.Context,
    project: str = option("--project", "PROJECT", "Only this project's tasks."),
    to_agent: str = option("--to", "AGENT", "Only tasks for this agent.", "--to-agent"),
    from_agent: str = option("--from", "AGENT", "Only tasks from this agent.", "--from-agent"),
    status: str = option(
        "--status", "STATUS", f"Only tasks with this status ({', '.join(TASK_STATUSES)})."
    ),
    limit: int = option("--limit", "N", "At most N.", "-n", default=50, min=1, max=500),
    json_output: bool = json_option(),
) -> None:
    """List tasks, newest first, with their current status.

    Example: mempalace task list --to win-codex --status open
    """
    env = get_env(ctx)
    result = _coordination(env).task_list(
        project=project, to_agent=to_agent, from_agent=from_agent, status=status, limit=limit
    )
    if json_output:
        print_json(result)
        return
    if not result["tasks"]:
        env.out.print(
            "No tasks. Hand one over with: mempalace task create --project P --from ME --to "
            "AGENT --goal TEXT --done TEXT",
            highlight=False,
            markup=False,
        )
        return
    env.out.print(_tasks_table(result["tasks"]))


@task_app.command("show")
def task_show(
    ctx: typer.Context,
    task_id: str = argument("TASK-ID", "The task's id."),
    json_output: bool = json_option(),
) -> None:
    """Show a task and every event of it, oldest first.

    Example: mempalace task show task_3f9a1c2b4d5e
    """
    env = get_env(ctx)
    result = _coordination(env).task_show(task_id)
    if json_output:
        print_json(result)
        return
    task = result["task"]
    env.out.print(
        markup(
            "[bold]{}[/] ({}): {} → {}, status [bold]{}[/] (set by {} at {})",
            task["task_id"],
            task["project"],
            task["from_agent"],
            task["to_agent"],
            task["status"],
            task["status_by"],
            task["updated_at"],
        ),
        highlight=False,
    )
    env.out.print(markup("Goal: {}", task["goal"] or ""), highlight=False)
    env.out.print(markup("Done when: {}", task["done"] or ""), highlight=False)
    env.out.print(_events_table("Events", result["events"]))


@task_app.command("update")
def task_update(
    ctx: typer.Context,
    task_id: str = argument("TASK-ID", "The task's id."),
    status: str = argument("STATUS", f"The new status: {', '.join(TASK_STATUSES)}."),
    from_agent: str = option("--from", "AGENT", "Who sets it.", "--from-agent", default=...),
    body: str = option("--body", "TEXT", "Notes, verbatim; - reads them from standard input."),
    json_output: bool = json_option(),
) -> None:
    """Set a task's status (an event of the task, to the other party).

    Example: mempalace task update task_3f9a1c2b4d5e claimed --from win-codex
    """
    env = get_env(ctx)
    result = _coordination(env).task_update(task_id, status, from_agent, body=_read_text(body))
    if json_output:
        print_json(result)
        return
    env.out.print(
        markup(
            "Task [cyan]{}[/] is now [bold]{}[/] (event {}, to {}).",
            result["task_id"],
            result["status"],
            result["event"]["id"],
            result["event"]["to_agent"],
        ),
        highlight=False,
    )
    _say_redacted(env, result, "notes")


# -- mempalace artifact ----------------------------------------------------------------------
@artifact_app.command("put")
def artifact_put(
    ctx: typer.Context,
    file: str = argument("FILE", "The file to store (UTF-8 text); - reads standard input."),
    kind: str = option(
        "--kind", "KIND", "What it is: patch, file, log, json, note...", default=...
    ),
    created_by: str = option("--by", "AGENT", "Who stores it.", default=...),
    meta: list[str] = option("--meta", "KEY=VALUE", "A metadata field (repeat for more)."),
    keep_secrets: bool = flag(
        "--keep-secrets",
        "Store the text exactly even if it holds secret values (default: they are "
        "replaced by [REDACTED:kind]).",
    ),
    json_output: bool = json_option(),
) -> None:
    """Store a file's exact text; prints its id and sha256.

    Example: mempalace artifact put fix.diff --kind patch --by win-codex (FILE - reads
    standard input: git diff | mempalace artifact put - ...)
    """
    env = get_env(ctx)
    data = sys.stdin.buffer.read() if file == "-" else _read_file(Path(file))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = "standard input" if file == "-" else file
        raise InvalidInputError(
            f"{where} is not UTF-8 text (byte {exc.start}): artifacts hold text. Nothing was "
            "stored.",
            hint=f"Encode it first, e.g. base64 {shlex.quote(file)} | mempalace artifact put - "
            "--kind file --by AGENT",
        ) from None
    metadata = _meta(meta)
    if file != "-" and (metadata is None or "path" not in metadata):
        metadata = {**(metadata or {}), "path": file}
    result = _coordination(env).artifact_put(
        kind, text, created_by, metadata, keep_secrets=keep_secrets
    )
    if json_output:
        print_json(result)
        return
    art = result["artifact"]
    verb = "Stored" if result["created"] else "Already stored"
    env.out.print(
        markup(
            "{} [cyan]{}[/] ({}, {:,} bytes, sha256 {}).",
            verb,
            art["id"],
            art["kind"],
            art["size_bytes"],
            art["sha256"],
        ),
        highlight=False,
    )
    env.out.print(
        markup("Get it back with: mempalace artifact get {} -o FILE", art["id"]), highlight=False
    )
    if result.get("secrets_redacted"):
        env.out.print(markup("{}", result.get("note", "")), highlight=False)
        env.out.print(
            "Store it with --keep-secrets to keep the text exactly as it is.",
            highlight=False,
            markup=False,
        )


def _read_file(path: Path) -> bytes:
    if not path.is_file():
        raise NotFoundError(
            f"No file {path}." if not path.exists() else f"{path} is not a file.",
            hint="Name a file to store, or - to read standard input.",
        )
    try:
        return path.read_bytes()
    except OSError as exc:
        raise from_os_error(exc, path, "read the file") from exc


@artifact_app.command("get")
def artifact_get(
    ctx: typer.Context,
    artifact_id: str = argument("ARTIFACT-ID", "The artifact's id."),
    output: str = option("--output", "FILE", "Write it to FILE (default: standard output).", "-o"),
    json_output: bool = json_option(),
) -> None:
    """Write an artifact's exact bytes to standard output or a file (its sha256 is checked
    first).

    Example: mempalace artifact get art_3f9a1c2b4d5e6f708192a3b4c5d6e7f8 -o fix.diff
    """
    env = get_env(ctx)
    data, art = _coordination(env).artifact_bytes(artifact_id)
    if json_output:
        print_json({"artifact": art})
        return
    if output is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return

    target = Path(output)
    try:
        target.write_bytes(data)
    except OSError as exc:
        raise from_os_error(exc, target, "write the artifact") from exc
    env.err.print(
        markup(
            "Wrote {} ({:,} bytes, sha256 {}) to {}.", art["id"], len(data), art["sha256"], output
        ),
        highlight=False,
    )


def register(app: typer.Typer) -> None:
    app.add_typer(log_app, name="log")
    app.add_typer(task_app, name="task")
    app.add_typer(artifact_app, name="artifact")
