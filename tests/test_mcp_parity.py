"""Schema parity with MemPalace 3.11 (../shared/compat/mempalace-3.11-tools.json): every tool
of its list is here, and tool by tool every argument name MemPalace gives it is in this
server's schema with a type that fits MemPalace's value (the few with no meaning here are
accepted and reported in the result: tests/test_tunnels.py); the tool list in
docs/mcp-tools.md is the server's own `tools/list`. tests/test_mcp_parity_full.py calls every
tool with its whole argument set.

Driven with the official MCP client against the real server (in process) on a real palace."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import start_blocking_portal
from mcp import Client

from mempalace_cli.mcp.doc import current_block, tools_block
from mempalace_cli.mcp.server import build_server
from mempalace_cli.mcp.tools import TOOLS_BY_NAME
from mempalace_cli.service import open_palace

REPO = Path(__file__).resolve().parents[1]
# MemPalace 3.11's tool list, kept beside the repository (../shared/compat), not inside it.
COMPAT = REPO / ".." / "shared" / "compat" / "mempalace-3.11-tools.json"
TOOLS_PAGE = REPO / "docs" / "mcp-tools.md"
# Added to every call of the tool: event_wait would otherwise wait its default time each call.
QUICK: dict[str, dict[str, Any]] = {"mempalace_event_wait": {"timeout_ms": 0}}
SAMPLE: dict[str, Any] = {
    "string": "x",
    "integer": 1,
    "number": 0.5,
    "boolean": False,
    "array": ["x"],
    "object": {},
}


def compat_tools() -> dict[str, dict[str, Any]]:
    # A checkout without it fails here: a parity test that skips would keep CI green unchecked.
    assert COMPAT.is_file(), (
        f"MemPalace 3.11's tool list is missing: {COMPAT.resolve()} (../shared/compat beside "
        "the repository). Put mempalace-3.11-tools.json there to run the parity tests."
    )
    data = json.loads(COMPAT.read_text())
    return {t["name"]: t for t in data["tools"]}


def schema_of(tool: dict[str, Any]) -> dict[str, Any]:
    return tool.get("inputSchema") or tool.get("input_schema") or {}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Client]]:
    palace = open_palace(str(tmp_path_factory.mktemp("parity") / "palace"))
    server = build_server(palace)
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(Client(server)) as connected,
    ):
        yield portal, connected
    palace.close()


def test_every_mempalace_tool_is_here() -> None:
    theirs = set(compat_tools())
    assert len(theirs) == 47
    assert theirs - set(TOOLS_BY_NAME) == set()


def test_every_mempalace_argument_is_in_the_schema_with_a_fitting_type(
    client: tuple[Any, Client],
) -> None:
    portal, session = client
    listed = {t.name: t for t in portal.call(session.list_tools).tools}
    checked = 0
    for name, theirs in compat_tools().items():
        ours = listed[name].input_schema["properties"]
        for arg, arg_schema in schema_of(theirs).get("properties", {}).items():
            # Listed, so a client that validates against our schema may send it...
            assert arg in ours, (name, arg)
            kind = ours[arg]["type"]
            kinds = kind if isinstance(kind, list) else [kind]
            # ...with the same JSON type, so a MemPalace client's value fits.
            assert arg_schema.get("type", "string") in kinds, (name, arg, kind)
            for value in arg_schema.get("enum", []):  # every value MemPalace allows
                assert value in ours[arg].get("enum", [value]), (name, arg, value)
            args = {**QUICK.get(name, {}), arg: SAMPLE[kinds[0]]}
            result = portal.call(session.call_tool, name, args)
            text = "".join(getattr(c, "text", "") for c in result.content)
            assert "unknown argument" not in text, (name, arg, text)
            assert "Unknown tool" not in text, (name, arg, text)
            checked += 1
    assert checked >= 170


def test_their_required_arguments_are_enough_here(client: tuple[Any, Client]) -> None:
    """A call with MemPalace's required arguments only is never refused for a missing
    argument it did not know about (ours may add requirements only through its own names)."""
    for name, theirs in compat_tools().items():
        spec = TOOLS_BY_NAME[name]
        ours = {a.name for a in spec.args if a.required}
        their_required = set(schema_of(theirs).get("required", []))
        by_alias = {alias: a.name for a in spec.args for alias in a.aliases}
        extra = ours - {by_alias.get(r, r) for r in their_required}
        # diary_write: MemPalace requires only agent_name, its entry comes as entry or content.
        assert extra <= {"entry"}, (name, extra)


def test_docs_tool_list_is_generated_from_the_server() -> None:
    assert current_block(TOOLS_PAGE.read_text(encoding="utf-8")) == tools_block(), (
        "docs/mcp-tools.md's tool list is out of date: run python -m mempalace_cli.mcp.doc "
        "--write docs/mcp-tools.md"
    )


def test_unknown_argument_message_lists_the_accepted_ones(client: tuple[Any, Client]) -> None:
    portal, session = client
    result = portal.call(session.call_tool, "mempalace_search", {"query": "q", "n_results": 1})
    text = result.content[0].text
    assert result.is_error and "unknown argument 'n_results'" in text
    assert "accepted: query, limit, wing, room, since, before, source_file, max_distance" in text


def test_oversized_query_is_refused_before_any_work(client: tuple[Any, Client]) -> None:
    portal, session = client
    result = portal.call(session.call_tool, "mempalace_search", {"query": "q" * 15_000_000})
    assert result.is_error and "'query' is 15,000,000 characters" in result.content[0].text
