"""Two argument rules, over a real MCP client session (serve-mcp over stdio) and the CLI:

- `null` for an optional argument means its default, for every tool (it used to end in
  "Unexpected TypeError" for `limit`, `threshold`...);
- a wing or room name with no letter or digit (`%`, `***`, `!!!`, `---`) is refused on reads as
  on writes, instead of being read as `general`; an empty wing or room filter is refused too
  (omit it, or pass null, to read everything).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mempalace_cli.mcp.tools import TOOLS, TOOLS_BY_NAME
from tests.conftest import CliFn
from tests.test_mcp_support import McpSession, stdio_session

WORDLESS = ["%", "***", "!!!", "---"]


@pytest.fixture(scope="module")
def mcp(mined_notes: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    base = tmp_path_factory.mktemp("null-and-names")
    home = base / "home"
    home.mkdir()
    with stdio_session(mined_notes["palace"], home, base / "server.log") as session:
        yield session


def _samples(mcp: McpSession) -> dict[str, Any]:
    """A valid value for every required argument of the read tools."""
    hit = mcp.ok("mempalace_search", {"query": "postgres metadata"})["results"][0]
    return {
        "query": "postgres metadata",
        "content": hit["text"],
        "drawer_id": hit["drawer_id"],
        "drawer_ids": [hit["drawer_id"]],
        "entity": "Maya",
        "start_room": "decisions",
        "agent_name": "atlas",
        "wing": hit["wing"],  # mempalace_follow_tunnels: a room of the palace
        "room": "decisions",
    }


def test_null_means_the_default_for_every_optional_argument_of_every_read_tool(
    mcp: McpSession,
) -> None:
    samples = _samples(mcp)
    checked = 0
    for spec in TOOLS:
        if not spec.read_only or spec.own_lane:  # the log's: tests/test_coordination.py
            continue
        required = {a.name: samples[a.name] for a in spec.args if a.required}
        optional = [a.name for a in spec.args if not a.required]
        if not optional:
            continue
        omitted = mcp.call(spec.name, required)
        nulled = mcp.call(spec.name, {**required, **dict.fromkeys(optional)})
        text = "".join(getattr(c, "text", "") for c in nulled.content)
        assert not nulled.is_error, f"{spec.name} with nulls: {text}"
        assert not omitted.is_error, spec.name
        assert nulled.structured_content == omitted.structured_content, spec.name
        checked += 1
    assert checked >= 10
    # The two calls that were found failing, by what a user sees.
    found = mcp.ok("mempalace_search", {"query": "postgres metadata", "limit": None})
    assert len(found["results"]) == 5
    same = mcp.ok("mempalace_check_duplicate", {"content": samples["content"], "threshold": None})
    assert same["is_duplicate"] is True
    assert "Unexpected" not in mcp.server_log() and "Traceback" not in mcp.server_log()


def test_null_for_a_required_argument_is_still_refused(mcp: McpSession) -> None:
    text = mcp.error("mempalace_search", {"query": None})
    assert "'query' is required but null" in text
    assert "missing" not in text  # said once, not twice


def test_the_schema_says_null_is_accepted_for_optional_arguments() -> None:
    search = TOOLS_BY_NAME["mempalace_search"].input_schema()["properties"]
    assert search["limit"]["type"] == ["integer", "null"] and search["limit"]["default"] == 5
    assert search["query"]["type"] == "string"
    mine = TOOLS_BY_NAME["mempalace_mine"].input_schema()["properties"]
    assert None in mine["mode"]["enum"]


READS_OF_A_NAME: list[tuple[str, dict[str, Any]]] = [
    ("mempalace_search", {"query": "decisions", "wing": "{}"}),
    ("mempalace_search", {"query": "decisions", "room": "{}"}),
    ("mempalace_list_drawers", {"room": "{}"}),
    ("mempalace_list_drawers", {"wing": "{}"}),
    ("mempalace_list_rooms", {"wing": "{}"}),
    ("mempalace_diary_read", {"agent_name": "atlas", "wing": "{}"}),
    ("mempalace_traverse", {"start_room": "{}"}),
    ("mempalace_find_tunnels", {"wing_a": "{}"}),
    ("mempalace_wake_up", {"wing": "{}"}),
]


@pytest.mark.parametrize("name", WORDLESS)
def test_a_name_without_letters_or_digits_is_refused_on_every_read(
    mcp: McpSession, name: str
) -> None:
    for tool, template in READS_OF_A_NAME:
        args = {k: (name if v == "{}" else v) for k, v in template.items()}
        text = mcp.error(tool, args)
        assert "a name needs at least one letter or digit" in text, (tool, text)
        assert "mempalace status" in text, (tool, text)


def test_an_empty_wing_or_room_filter_is_refused_and_null_reads_everything(
    mcp: McpSession,
) -> None:
    for tool, template in READS_OF_A_NAME:
        if tool == "mempalace_traverse":
            continue  # a start room is not a filter: it has its own message
        args = {k: ("" if v == "{}" else v) for k, v in template.items()}
        text = mcp.error(tool, args)
        assert "to read is empty" in text and "pass null" in text, (tool, text)
    everything = mcp.ok("mempalace_list_rooms", {})
    assert mcp.ok("mempalace_list_rooms", {"wing": None}) == everything
    assert "general" in everything["rooms"] and "decisions" in everything["rooms"]


@pytest.mark.parametrize(
    "args",
    [
        ["search", "postgres", "--room", "%"],
        ["search", "postgres", "--wing", "***"],
        ["drawers", "--room", "!!!"],
        ["traverse", "!!!"],
        ["wake-up", "--wing", "%"],
        ["drawers", "--wing", "---"],
    ],
    ids=lambda a: " ".join(a),
)
def test_the_cli_refuses_them_too(
    cli: CliFn, mined_notes: dict[str, Path], args: list[str]
) -> None:
    result = cli("--palace", mined_notes["palace"], *args, expect=2)
    assert "a name needs at least one letter or digit" in result.stderr, result.stderr
    assert "mempalace status" in result.stderr
    assert "Traceback" not in result.output


def test_the_cli_refuses_an_empty_filter(cli: CliFn, mined_notes: dict[str, Path]) -> None:
    result = cli("--palace", mined_notes["palace"], "search", "postgres", "--room", "", expect=2)
    assert "The room to read is empty" in result.stderr and "--room" in result.stderr
