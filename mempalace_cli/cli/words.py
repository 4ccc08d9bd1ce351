"""Errors in CLI words.

The service is shared by the CLI and the MCP server, so its messages and hints name what an
MCP client sends: tool names (`mempalace_status`, `list_drawers`) and argument names
(`source_file`, `valid_from`). A person at a shell types commands and flags instead. The CLI's
one error edge (`env.report_error`, `env.report_not_found`) passes every message and hint
through `cli_words`, which puts each known internal name in the words of the command line;
the MCP server keeps the service's own.

A name is replaced only as a whole word (not inside a path such as `/x/source_file.md` or a
longer identifier), and phrases that already give the CLI spelling next to the MCP one are
replaced whole, so the result never says the same thing twice.
"""

from __future__ import annotations

import re

# Longest first: a phrase wins over the names inside it.
PHRASES: dict[str, str] = {
    ", or the list_drawers tool): drawer_id.": ").",
    "mempalace_status (or `mempalace status`)": "`mempalace status`",
    " (drawer_id)": "",
    " (drawer_ids)": "",
}

NAMES: dict[str, str] = {
    # MCP tools -> commands
    "mempalace_status": "`mempalace status`",
    "mempalace_list_wings": "`mempalace status`",
    "mempalace_list_rooms": "`mempalace status`",
    "mempalace_get_taxonomy": "`mempalace status`",
    "mempalace_search": "`mempalace search`",
    "mempalace_list_drawers": "`mempalace drawers`",
    "list_drawers": "`mempalace drawers`",
    "mempalace_get_drawer": "`mempalace show`",
    "get_drawer": "`mempalace show`",
    "mempalace_delete_drawers": "`mempalace forget`",
    "mempalace_delete_drawer": "`mempalace forget`",
    "mempalace_delete_by_source": "`mempalace forget --source`",
    "delete_drawers": "`mempalace forget`",
    "mempalace_mine": "`mempalace mine`",
    "mempalace_kg_add": "`mempalace kg add`",
    "mempalace_kg_query": "`mempalace kg query`",
    "mempalace_kg_invalidate": "`mempalace kg invalidate`",
    "mempalace_kg_timeline": "`mempalace kg timeline`",
    "mempalace_kg_stats": "`mempalace kg stats`",
    "mempalace_diary_write": "`mempalace diary write`",
    "mempalace_diary_read": "`mempalace diary read`",
    "mempalace_traverse": "`mempalace traverse`",
    "mempalace_find_tunnels": "`mempalace traverse --tunnels`",
    "mempalace_graph_stats": "`mempalace traverse --stats`",
    "mempalace_create_tunnel": "`mempalace tunnels create`",
    "mempalace_list_tunnels": "`mempalace tunnels list`",
    "mempalace_delete_tunnel": "`mempalace tunnels delete`",
    "mempalace_follow_tunnels": "`mempalace tunnels follow`",
    "mempalace_list_hallways": "`mempalace hallways list`",
    "mempalace_delete_hallway": "`mempalace hallways delete`",
    "mempalace_wake_up": "`mempalace wake-up`",
    "mempalace_get_aaak_spec": "`mempalace wake-up --aaak-spec`",
    # MCP arguments -> flags
    "source_file": "--source",
    "max_distance": "--max-distance",
    "valid_from": "--from",
    "valid_to": "--to",
    "as_of": "--as-of",
    "max_hops": "--max-hops",
    # the coordination log (mempalace log / task / artifact)
    "mempalace_event_append": "`mempalace log append`",
    "mempalace_event_list": "`mempalace log list`",
    "mempalace_event_wait": "`mempalace log wait`",
    "mempalace_event_ack": "`mempalace log ack`",
    "mempalace_task_create": "`mempalace task create`",
    "mempalace_artifact_put": "`mempalace artifact put`",
    "mempalace_artifact_get": "`mempalace artifact get`",
    "from_agent": "--from",
    "to_agent": "--to",
    "correlation_id": "--correlation-id",
    "base_commit": "--base-commit",
    "since_event_id": "--since",
    "before_event_id": "--before",
    "since_created_at": "--since-time",
    "timeout_ms": "--timeout",
    "created_by": "--by",
    "artifact_ids": "--artifact",
    "event_id": "EVENT-ID",
    "artifact_id": "ARTIFACT-ID",
    "task_id": "TASK-ID",
}

# Not part of a longer name, a path or a flag: no word character, `/`, `-` or `.` touching it
# (a `.` that ends a sentence is fine). Backticks around a name go with it.
_NAME = re.compile(
    r"(?<![\w/.\-])`?(" + "|".join(sorted(map(re.escape, NAMES), key=len, reverse=True)) + r")`?"
    r"(?![\w/\-]|\.\w)"
)


def cli_words(text: str | None) -> str | None:
    """`text` with the service's MCP names put in CLI words (None stays None)."""
    if not text:
        return text
    for phrase, words in PHRASES.items():
        text = text.replace(phrase, words)
    return _NAME.sub(lambda m: NAMES[m.group(1)], text)


def internal_names_in(text: str) -> list[str]:
    """The internal names `text` still holds (for tests: CLI output must hold none)."""
    return [m.group(1) for m in _NAME.finditer(text)]
