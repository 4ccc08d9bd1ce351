"""`mempalace activity`: the MCP calls this palace's servers answered (service/audit.py)."""

from __future__ import annotations

import datetime as dt
import difflib
import json
from typing import TYPE_CHECKING, Any

import typer

from mempalace_cli.cli.env import Env, escape, get_env, markup, print_json, report_not_found
from mempalace_cli.cli.options import flag, json_option, option
from mempalace_cli.cli.tables import make_table
from mempalace_cli.cli.words import internal_names_in
from mempalace_cli.common import errors
from mempalace_cli.mcp.tools import MCP_TOOL_NAMES
from mempalace_cli.service.audit import activity_folder, read_activity

if TYPE_CHECKING:
    from mempalace_cli.service.audit import ActivityRow

JSON_HELP = "Print one JSON document on stdout: the calls, newest first."


def activity(
    ctx: typer.Context,
    limit: int = option(
        "--limit", "N", "Show the N newest calls.", "-n", default=20, min=1, max=10_000
    ),
    tool: str = option(
        "--tool", "TOOL", "Only calls of this tool (mempalace_search, or just search)."
    ),
    client: str = option("--client", "NAME", "Only calls from this client (as it names itself)."),
    failed: bool = flag("--errors", "Only calls that failed."),
    json_output: bool = json_option(JSON_HELP),
) -> None:
    """Show the MCP calls AI clients made to this palace, newest first.

    `mempalace serve-mcp` records every tool call in the palace folder: when, which client
    (name, version, transport, HTTP address), the tool, its arguments as short previews with
    secret values redacted, the drawers it returned, how long it took and how it ended. It
    keeps the newest 10,000 calls. A table on a terminal; one tab-separated line per call on a
    pipe.

    Example: mempalace activity --tool search --limit 50
    """

    env = get_env(ctx)
    palace = env.palace()
    if not palace.path.is_dir():
        raise errors.NoPalaceError(str(palace.path))
    tool_name = _tool_name(tool, json_output) if tool else None
    rows = read_activity(
        activity_folder(palace), limit=limit, tool=tool_name, client=client, errors_only=failed
    )
    filters = {"tool": tool_name, "client": client, "errors": failed}
    if json_output:
        print_json(
            {
                "palace_path": str(palace.path),
                "filters": filters,
                "count": len(rows),
                "calls": [r.to_dict() for r in rows],
            }
        )
        return
    if not rows:
        _say_nothing(env, palace.path, filters)
        return
    if env.out.is_terminal:
        _table(env, rows)
    else:
        for row in rows:
            typer.echo(_plain_line(row))


def _tool_name(tool: str, json_output: bool) -> str:
    """The full tool name for --tool (search -> mempalace_search); an unknown name is "not
    found" with the closest tool names."""

    name = tool.strip()
    full = name if name.startswith("mempalace_") else f"mempalace_{name}"
    if full in MCP_TOOL_NAMES:
        return full

    short = [n.removeprefix("mempalace_") for n in MCP_TOOL_NAMES]
    close = difflib.get_close_matches(full.removeprefix("mempalace_"), short, n=3, cutoff=0.6)
    # Errors are put in CLI words, which would turn a few tool names into commands here.
    close = [c for c in close if not internal_names_in(c)]
    hint = (
        f"Did you mean: {', '.join(f'--tool {c}' for c in close)}?"
        if close
        else "Pass a tool's name as MCP clients call it, with or without its mempalace_ "
        "prefix (search, add_drawer, kg_query...); `mempalace activity` shows each call's tool."
    )
    report_not_found(
        json_output, f"There is no MCP tool named {name!r}.", hint, {"calls": [], "count": 0}
    )


def _say_nothing(env: Env, palace_path: Any, filters: dict[str, Any]) -> None:
    if any(filters.values()):
        env.out.print("No recorded MCP calls match these filters.", highlight=False)
        return
    env.out.print(
        markup(
            "No MCP calls recorded in {} yet. `mempalace serve-mcp` records every call an AI "
            "client makes to this palace.",
            palace_path,
        ),
        highlight=False,
    )


def _local_time(at: str) -> str:
    try:
        when = dt.datetime.fromisoformat(at.replace("Z", "+00:00"))
    except ValueError:
        return at
    return when.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def _who(row: ActivityRow) -> str:
    who = row.client or "(unnamed client)"
    if row.client_version:
        who += f" {row.client_version}"
    return who


def _where(row: ActivityRow) -> str:
    return f"{row.transport} {row.peer}" if row.peer else row.transport


def _outcome(row: ActivityRow) -> str:
    if row.outcome == "ok":
        return "ok"
    return f"{row.error_kind or 'error'}: {row.message or ''}".strip()


def _args_text(arguments: dict[str, Any]) -> str:
    return " ".join(
        f"{k}={v if isinstance(v, int | float) and not isinstance(v, bool) else _arg(v)}"
        for k, v in arguments.items()
    )


def _arg(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False, default=str)


def _table(env: Env, rows: list[ActivityRow]) -> None:
    table = make_table(title=markup("MCP calls, newest first ({})", len(rows)))
    table.add_column("time", no_wrap=True)
    table.add_column("tool", no_wrap=True)
    table.add_column("client")
    table.add_column("ms", justify="right", no_wrap=True)
    table.add_column("drawers", justify="right", no_wrap=True)
    table.add_column("outcome", ratio=1)
    table.add_column("arguments", ratio=2)
    for row in rows:
        ok = row.outcome == "ok"
        table.add_row(
            _local_time(row.at),
            escape(row.tool.removeprefix("mempalace_")),
            markup("{} [dim]{}[/]", _who(row), _where(row)),
            markup("{:,.0f}", row.duration_ms),
            str(row.drawers),
            markup("[green]ok[/]") if ok else markup("[red]{}[/]", _outcome(row)),
            escape(_args_text(row.arguments)),
        )
    env.out.print(table)


def _plain_line(row: ActivityRow) -> str:
    """One call on one line, tab-separated: time (UTC), client, transport and peer, tool,
    outcome, duration in ms, drawers returned, arguments (JSON)."""
    fields = [
        row.at,
        _who(row),
        _where(row),
        row.tool,
        _outcome(row),
        f"{row.duration_ms:.1f}",
        str(row.drawers),
        json.dumps(row.arguments, ensure_ascii=False, default=str),
    ]
    return "\t".join(f.replace("\t", " ").replace("\n", " ") for f in fields)


def register(app: typer.Typer) -> None:
    app.command()(activity)
