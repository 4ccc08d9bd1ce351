"""The memory protocol: names only real tools and commands, covers the rules, fits its budget."""

from __future__ import annotations

import re

from mempalace_cli.cli import command_tree
from mempalace_cli.embedders.base import get_token_counter
from mempalace_cli.mcp.tools import MCP_TOOL_NAMES
from mempalace_cli.memory.layers import PROTOCOL_POINTER
from mempalace_cli.memory.protocol import PROTOCOL, PROTOCOL_TOKEN_BUDGET
from mempalace_cli.service import open_palace

TOOL = re.compile(r"\bmempalace_\w+")
COMMAND = re.compile(r"\bmempalace ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?")


def unknown_names(text: str) -> list[str]:
    """Tools and CLI commands named in `text` that don't exist."""
    root = command_tree()
    assert hasattr(root, "commands")  # a command group (typer ships its own click)
    bad = [t for t in TOOL.findall(text) if t not in MCP_TOOL_NAMES]
    for cmd, sub in COMMAND.findall(text):
        command = root.commands.get(cmd)
        if command is None:
            bad.append(f"mempalace {cmd}")
        elif hasattr(command, "commands") and sub not in command.commands:
            bad.append(f"mempalace {cmd} {sub}")
    return bad


def test_the_checker_catches_made_up_names() -> None:
    assert unknown_names("call mempalace_fly, then run mempalace fly and mempalace kg fly") == [
        "mempalace_fly",
        "mempalace fly",
        "mempalace kg fly",
    ]
    assert unknown_names("mempalace_search and mempalace kg query") == []


def test_protocol_names_only_existing_tools_and_commands() -> None:
    assert TOOL.findall(PROTOCOL), "the protocol should name MCP tools"
    assert COMMAND.findall(PROTOCOL), "the protocol should name CLI commands"
    assert unknown_names(PROTOCOL) == []
    assert unknown_names(PROTOCOL_POINTER) == []


def test_protocol_covers_the_rules() -> None:
    text = PROTOCOL.lower()
    for tool in (
        "mempalace_status",
        "mempalace_search",
        "mempalace_kg_query",
        "mempalace_kg_add",
        "mempalace_kg_invalidate",
        "mempalace_diary_write",
    ):
        assert tool in text
    for phrase in (
        "first",
        "exact wing",
        "never guess",
        "unsure",
        "rationale",
        "diary",
        "invalidate",
        "drawer_id",
        "source file",
        "english",
    ):
        assert phrase in text, phrase


def test_protocol_fits_its_token_budget() -> None:
    tokens = get_token_counter().count(PROTOCOL)
    assert 100 < tokens <= PROTOCOL_TOKEN_BUDGET


def test_service_returns_the_protocol_without_a_palace(home) -> None:
    palace = open_palace()
    assert palace.protocol() == PROTOCOL
    assert not palace.path.exists()


def test_protocol_and_instructions_name_every_tool() -> None:
    """The protocol (also the MCP server's initialize instructions and the status tool's
    `protocol`) mentions every tool the server has, wake-up included, and points agents at
    the per-wing taxonomy."""
    missing = [tool for tool in MCP_TOOL_NAMES if tool not in TOOL.findall(PROTOCOL)]
    assert missing == []
    assert "mempalace_wake_up" in PROTOCOL and "taxonomy" in PROTOCOL
