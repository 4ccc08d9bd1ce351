"""What the owner allowed a served palace to do: one frozen value handed from `serve-mcp`'s
flags (and the palace's config) to the MCP server, its tool table and its audit log.

Plain data, no imports beyond the standard library: the CLI builds it, `mcp_server.py` reads it,
`mcp_policy.py` holds the rules that apply it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ServeOptions:
    """How one MCP server runs.

    transport: "stdio" or "http" (recorded in the audit log).
    read_only: only read tools are listed and callable (`serve-mcp --read-only`).
    mine_roots: resolved, absolute folders `mempalace_mine` may mine under (`--mine-root DIR`
        and config.toml's `mcp_mine_roots`; none: mining over MCP is refused with a message
        that says how to allow a folder).
    config_path: the config.toml that can hold `mcp_mine_roots`, named in that message.
    """

    transport: str = "stdio"
    read_only: bool = False
    mine_roots: tuple[Path, ...] = ()
    config_path: str = "~/.mempalace/config.toml"
