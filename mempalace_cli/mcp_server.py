"""The MCP server: the palace's tools for AI agents, over stdio or streamable HTTP.

Three parts: the tool table (`mcp_tools.py`: names, schemas, limits, service calls), the
transports (`mcp_transport.py`) and HTTP auth (`mcp_auth.py`). This module joins them on the
official SDK's `MCPServer`: `tools/list` and every `tools/call` come from the table, arguments
are checked strictly before any work (an unknown name is an error naming it), and typed core
errors become tool errors whose text says what to fix. No typer or rich here: `cli/serve.py` is
the adapter.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import TYPE_CHECKING, Any

from mempalace_cli.errors import MemPalaceError
from mempalace_cli.mcp_auth import (
    DEFAULT_HOST,
    TOKEN_ENV,
    BearerTokenGuard,
    check_http_options,
    is_loopback,
)
from mempalace_cli.mcp_options import ServeOptions
from mempalace_cli.mcp_tools import TOOLS, TOOLS_BY_NAME, ToolSpec, bind_arguments
from mempalace_cli.mcp_transport import (
    DEFAULT_PORT,
    HTTP_PATH,
    MAX_HTTP_BODY,
    configure_logging,
    warm_up,
)
from mempalace_cli.mcp_transport import serve_http as _serve_http
from mempalace_cli.mcp_transport import serve_stdio as _serve_stdio

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from mempalace_cli.service import Palace

log = logging.getLogger("mempalace.mcp")

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "HTTP_PATH",
    "MAX_HTTP_BODY",
    "TOKEN_ENV",
    "BearerTokenGuard",
    "PalaceTools",
    "ServeOptions",
    "build_server",
    "check_http_options",
    "describe_error",
    "is_loopback",
    "serve_http",
    "serve_stdio",
]


def describe_error(exc: MemPalaceError) -> str:
    return f"{exc.message} Hint: {exc.hint}" if exc.hint else exc.message


class PalaceTools:
    """Runs the table's calls on one shared `Palace`, one call at a time."""

    def __init__(self, palace: Palace) -> None:
        self.palace = palace
        palace.stay_warm()  # a server searches again and again: keep common words' postings
        # One palace object, many worker threads: one call at a time keeps the shared SQLite
        # connections and Chroma client safe; the palace lock still guards other processes.
        self._calls = threading.RLock()

    def run(self, spec: ToolSpec, arguments: Any) -> dict[str, Any]:
        """Check the arguments, call the service; every failure becomes a ToolError the agent
        can act on."""
        from mcp.server.mcpserver.exceptions import ToolError

        try:
            bound = bind_arguments(spec, arguments)
        except MemPalaceError as exc:
            raise ToolError(describe_error(exc)) from exc
        with self._calls:
            try:
                return spec.call(self.palace, bound)
            except MemPalaceError as exc:
                raise ToolError(describe_error(exc)) from exc
            except Exception as exc:
                log.exception("%s failed unexpectedly", spec.name)
                raise ToolError(
                    f"Unexpected {type(exc).__name__} inside the palace: {exc}. The server "
                    "logged the details on its stderr and is still serving; check the "
                    "arguments and retry, or report the log if it happens again."
                ) from exc

    def warm_up(self) -> threading.Thread:
        """Import chromadb and load the model in the background, so the first search doesn't
        hit a client's timeout. Tool calls wait for it (they share the call lock): two threads
        importing numpy's dependants at once can see a half-initialised numpy."""

        def load() -> None:
            with self._calls:
                try:
                    import chromadb  # noqa: F401  (the store's import, ~1 s)

                    self.palace.embedder.ensure_loaded()
                    log.info("embedding model loaded")
                except MemPalaceError as exc:
                    log.warning("embedding model unavailable: %s", describe_error(exc))
                except Exception:
                    log.exception("warming up failed; the first call will try again")

        return warm_up(load)


def _server_class() -> type[MCPServer]:
    import anyio
    import mcp_types as types
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    class PalaceMCPServer(MCPServer):
        """MCPServer whose tools come from the declarative table in mcp_tools.py."""

        palace_tools: PalaceTools

        async def list_tools(self) -> list[types.Tool]:
            return [
                types.Tool(
                    name=spec.name,
                    title=spec.title,
                    description=spec.description,
                    input_schema=spec.input_schema(),
                    output_schema=spec.output,
                    annotations=types.ToolAnnotations(
                        title=spec.title,
                        read_only_hint=spec.read_only,
                        destructive_hint=None if spec.read_only else spec.destructive,
                        idempotent_hint=True if spec.read_only else spec.idempotent,
                        open_world_hint=False,
                    ),
                )
                for spec in TOOLS
            ]

        def _tool_input_schema(self, name: str) -> dict[str, Any] | None:
            spec = TOOLS_BY_NAME.get(name)
            return None if spec is None else spec.input_schema()

        async def call_tool(
            self, name: str, arguments: dict[str, Any], context: Any = None
        ) -> types.CallToolResult:
            spec = TOOLS_BY_NAME.get(name)
            if spec is None:
                shown = name if len(name) <= 80 else name[:80] + "..."
                raise ToolError(
                    f"Unknown tool: {shown}. This server's tools: {', '.join(TOOLS_BY_NAME)}."
                )
            result = await anyio.to_thread.run_sync(self.palace_tools.run, spec, arguments)
            text = json.dumps(result, ensure_ascii=False, default=str)
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=text)], structured_content=result
            )

    return PalaceMCPServer


def build_server(palace: Palace, options: ServeOptions | None = None) -> MCPServer:
    """An MCPServer exposing the table's tools over `palace` (its `palace_tools`), within what
    `options` allows."""
    options = options or ServeOptions()
    from mempalace_cli import __version__

    server = _server_class()(
        name="mempalace",
        title="mempalace-cli",
        description="A local-first memory palace: verbatim drawers, a temporal knowledge "
        "graph, agent diaries.",
        instructions=palace.protocol(),
        version=__version__,
        log_level="WARNING",
    )
    server.palace_tools = PalaceTools(palace)  # type: ignore[attr-defined]
    server.serve_options = options  # type: ignore[attr-defined]
    return server


def serve_stdio(palace: Palace, options: ServeOptions | None = None) -> None:
    configure_logging()
    server = build_server(palace, options or ServeOptions(transport="stdio"))
    tools: PalaceTools = server.palace_tools  # type: ignore[attr-defined]
    _serve_stdio(server, palace, tools.warm_up())


def serve_http(
    palace: Palace,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token: str | None = None,
    options: ServeOptions | None = None,
) -> None:
    configure_logging()
    opts = options or ServeOptions(transport="http")
    _serve_http(
        lambda: build_server(palace, opts),
        palace,
        lambda server: server.palace_tools.warm_up(),  # type: ignore[attr-defined]
        host=host,
        port=port,
        token=token,
    )
