"""`mempalace serve-mcp`: the palace's MCP server for AI agents."""

from __future__ import annotations

from enum import StrEnum

import typer

from mempalace_cli.cli.env import get_env


class Transport(StrEnum):
    stdio = "stdio"
    http = "http"


def serve_mcp(
    ctx: typer.Context,
    transport: Transport = typer.Option(
        Transport.stdio,
        "--transport",
        metavar="stdio|http",
        help="stdio: a client starts this command and talks over stdin/stdout. "
        "http: streamable HTTP at http://HOST:PORT/mcp.",
    ),
    host: str = typer.Option(
        "127.0.0.1",
        "--host",
        metavar="HOST",
        help="HTTP only: address to listen on. Anything but 127.0.0.1, localhost or ::1 "
        "(the names the Host/Origin check protects) requires --token.",
    ),
    port: int = typer.Option(
        8765, "--port", metavar="PORT", min=1, max=65535, help="HTTP only: port."
    ),
    token: str = typer.Option(
        None,
        "--token",
        metavar="TOKEN",
        envvar="MEMPALACE_MCP_TOKEN",
        show_envvar=True,
        help="HTTP only: require 'Authorization: Bearer TOKEN' on every request.",
    ),
) -> None:
    """Serve the palace to AI agents over MCP (the Model Context Protocol).

    Stops on the first Ctrl-C or SIGTERM, exit status 0. To register it with a client, print
    the exact snippet with: mempalace mcp-config

    Example: mempalace serve-mcp --transport http --port 8765 --token "$MEMPALACE_MCP_TOKEN"
    """
    from mempalace_cli import mcp_server
    from mempalace_cli.mcp_options import ServeOptions

    options = ServeOptions(transport=transport.value)
    palace = get_env(ctx).palace()
    try:
        if transport is Transport.stdio:
            mcp_server.serve_stdio(palace, options)
        else:
            mcp_server.serve_http(palace, host=host, port=port, token=token, options=options)
    except KeyboardInterrupt:
        raise typer.Exit(0) from None
    finally:
        palace.close()


def register(app: typer.Typer) -> None:
    app.command("serve-mcp")(serve_mcp)
