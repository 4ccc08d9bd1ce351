"""`mempalace serve-mcp`: the palace's MCP server for AI agents."""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path

import typer

from mempalace_cli.cli.env import get_env, serving
from mempalace_cli.cli.options import flag, option
from mempalace_cli.common.config import mcp_mine_roots
from mempalace_cli.mcp import server as mcp_server
from mempalace_cli.mcp.options import ServeOptions


class Transport(StrEnum):
    stdio = "stdio"
    http = "http"


def serve_mcp(
    ctx: typer.Context,
    transport: Transport = option(
        "--transport",
        "stdio|http",
        "stdio: a client starts this command and talks over stdin/stdout. "
        "http: streamable HTTP at http://HOST:PORT/mcp.",
        default=Transport.stdio,
    ),
    host: str = option(
        "--host",
        "HOST",
        "HTTP only: address to listen on (an IP address, or a name resolved once). A "
        "loopback address (127.0.0.1, localhost, ::1, any 127.x) is served without --token, and "
        "only to requests whose Host and Origin headers name it or localhost (so no web page "
        "can reach it through DNS rebinding); any other address requires --token.",
        default="127.0.0.1",
    ),
    port: int = option("--port", "PORT", "HTTP only: port.", default=8765, min=1, max=65535),
    token: str = option(
        "--token",
        "TOKEN",
        "HTTP only: require 'Authorization: Bearer TOKEN' on every request.",
        envvar="MEMPALACE_MCP_TOKEN",
        show_envvar=True,
    ),
    read_only: bool = flag(
        "--read-only",
        "Serve only the read tools (search, status, get, list, kg_query, ...): write "
        "tools are neither listed nor callable.",
    ),
    mine_root: list[Path] = option(
        "--mine-root",
        "DIR",
        "A folder the mempalace_mine tool may mine under (repeat for several; also "
        "mcp_mine_roots in config.toml). None by default: mining over MCP is refused.",
        exists=True,
        file_okay=False,
        dir_okay=True,
    ),
) -> None:
    """Serve the palace to AI agents over MCP (the Model Context Protocol).

    Stops on the first Ctrl-C or SIGTERM, exit status 0. To register it with a client, print
    the exact snippet with: mempalace mcp-config

    What an agent may do: mempalace_mine reads only folders inside a --mine-root (or
    config.toml's mcp_mine_roots = ["/home/me/notes"]), given as absolute paths and checked
    after following symlinks; none by default. mempalace_delete_by_source and
    mempalace_delete_drawers are dry runs unless the call passes dry_run: false, remove at most
    1,000 drawers per call, and never go by '/', '~', the server's working folder or a folder
    holding one of them (use mempalace forget for more). --read-only serves no write tool.

    Example: mempalace serve-mcp --transport http --port 8765 --token "$MEMPALACE_MCP_TOKEN"
    """

    palace = get_env(ctx).palace()
    with serving(palace):
        roots = [Path(os.path.realpath(r)) for r in mine_root or ()]
        roots += mcp_mine_roots(palace.settings)
        options = ServeOptions(
            transport=transport.value,
            read_only=read_only,
            mine_roots=tuple(dict.fromkeys(roots)),
            config_path=str(palace.settings.config_path),
        )
        if transport is Transport.stdio:
            mcp_server.serve_stdio(palace, options)
        else:
            mcp_server.serve_http(palace, host=host, port=port, token=token, options=options)


def register(app: typer.Typer) -> None:
    app.command("serve-mcp")(serve_mcp)
