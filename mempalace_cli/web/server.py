"""Starting `mempalace ui`: the serving rule decides where it listens and whether a token is
needed (`serving.access.plan_http_access`, the same rule as `serve-mcp --transport http`),
uvicorn serves the page with the project's slow-client limits and stop deadline
(`serving.http`), the model loads in the background, and `--open` opens a browser on it."""

from __future__ import annotations

import logging
import threading
import webbrowser
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import quote

from mempalace_cli.serving.access import bind_socket, plan_http_access
from mempalace_cli.serving.http import serve_on_socket, server_config
from mempalace_cli.web.app import Desk, build_app

if TYPE_CHECKING:
    from mempalace_cli.service import Palace

TOKEN_ENV = "MEMPALACE_UI_TOKEN"
DEFAULT_PORT = 8766
log = logging.getLogger("mempalace.ui")


def serve_ui(
    palace: Palace,
    host: str,
    port: int,
    token: str | None,
    read_only: bool = False,
    open_browser: bool = False,
    say: Callable[[str], None] = print,
) -> None:
    """Serve the palace's pages until Ctrl-C or SIGTERM (exit 0 within the stop deadline).
    Raises InvalidInputError, with nothing started, for a host it can't serve (or can't serve
    without a token) or a port it can't have."""
    access = plan_http_access(host, port, token, token_env=TOKEN_ENV)
    sock = bind_socket(access)
    access = access.bound_to(sock.getsockname()[1])
    try:
        desk = Desk(palace, access, read_only=read_only)
        app = build_app(desk)
    except BaseException:
        sock.close()
        raise
    config = server_config(app, lifespan="off")
    url = access.url("/")
    notes = []
    if read_only:
        notes.append("read-only: no change can be made from the page")
    if access.token:
        notes.append(f"token required: {TOKEN_ENV} or --token, asked for once per browser")
    say(
        f"Serving palace {palace.path} at {url}"
        + (f" ({'; '.join(notes)})" if notes else "")
        + ". Open it in a browser; Ctrl-C stops."
    )
    desk.warm_up()
    if open_browser:
        target = url + (f"?token={quote(access.token)}" if access.token else "")
        threading.Thread(
            target=webbrowser.open, args=(target,), name="mempalace-ui-open", daemon=True
        ).start()
    serve_on_socket(config, sock)


__all__ = ["DEFAULT_PORT", "TOKEN_ENV", "serve_ui"]
