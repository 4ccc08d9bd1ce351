"""`mempalace ui`: see the palace in a web browser (mempalace_cli/web)."""

from __future__ import annotations

import sys

import typer

from mempalace_cli.cli.env import get_env, serving
from mempalace_cli.cli.options import flag, option
from mempalace_cli.web.server import serve_ui


def ui(
    ctx: typer.Context,
    host: str = option(
        "--host",
        "HOST",
        "Address to listen on (an IP address, or a name resolved once). A loopback "
        "address (127.0.0.1, localhost, ::1, any 127.x) is served without --token, and only to "
        "requests whose Host and Origin name it or localhost; any other address requires "
        "--token. The same rule as serve-mcp --transport http.",
        default="127.0.0.1",
    ),
    port: int = option(
        "--port", "PORT", "Port (0: any free port).", default=8766, min=0, max=65535
    ),
    token: str = option(
        "--token",
        "TOKEN",
        "Require this secret: a browser is asked for it once, a script sends "
        "'Authorization: Bearer TOKEN'.",
        envvar="MEMPALACE_UI_TOKEN",
        show_envvar=True,
    ),
    open_browser: bool = flag("--open", "Open the page in a web browser."),
    read_only: bool = flag(
        "--read-only",
        "Show no way to change anything, and refuse every change (forget, move, edit, facts).",
    ),
) -> None:
    """See the palace in a web browser: its map, search, drawers, facts, diaries, health and
    what AI agents did.

    A local page over the same service as the CLI and the MCP server, fully offline. Views:
    Map (wings, rooms, tunnels), Search, Drawer (forget, move, edit), Knowledge graph (facts
    over time, as of a date), Diaries, Health (duplicates, stale drawers, missing sources,
    disk use) and Activity (the MCP calls the palace's servers answered). English or Chinese,
    as the browser asks. It may run beside `mempalace watch` and `mempalace serve-mcp` on the
    same palace; every change is confirmed first and takes the palace's write lock.

    Stops on Ctrl-C or SIGTERM, exit status 0.

    Example: mempalace ui --open
    """

    palace = get_env(ctx).palace()

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    with serving(palace):
        serve_ui(
            palace,
            host=host,
            port=port,
            token=token,
            read_only=read_only,
            open_browser=open_browser,
            say=say,
        )


def register(app: typer.Typer) -> None:
    app.command("ui")(ui)
