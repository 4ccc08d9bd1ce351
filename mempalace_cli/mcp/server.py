"""The MCP server: the palace's tools for AI agents, over stdio or streamable HTTP.

Three parts: the tool table (`tools.py` and `tools_*.py`: names, schemas, limits, service
calls), the transports (`transport.py`) and HTTP access (`serving/auth.py`). This module joins
them on the official SDK's `MCPServer`: `tools/list` and every `tools/call` come from the table,
arguments are checked strictly before any work (an unknown name is an error naming it), and
typed core errors become tool errors whose text says what to fix. No typer or rich here:
`cli/serve.py` is the adapter.
"""

from __future__ import annotations

import gc
import logging
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mempalace_cli import __version__
from mempalace_cli.common.errors import (
    EXIT_STATUS,
    Failure,
    InvalidInputError,
    MemPalaceError,
    failure_of,
)
from mempalace_cli.common.lazy import lazy
from mempalace_cli.common.serialize import to_json
from mempalace_cli.embedders import API_PREFIX, make_embedder
from mempalace_cli.embedders.base import MODEL_NAME, Embedder, MiniLMEmbedder, get_embedder
from mempalace_cli.mcp.options import ServeOptions
from mempalace_cli.mcp.spec import ToolSpec, bind_arguments
from mempalace_cli.mcp.tools import TOOLS, TOOLS_BY_NAME
from mempalace_cli.mcp.transport import (
    DEFAULT_PORT,
    HTTP_PATH,
    MAX_HTTP_BODY,
    configure_logging,
    warm_up,
)
from mempalace_cli.mcp.transport import serve_http as _serve_http
from mempalace_cli.mcp.transport import serve_stdio as _serve_stdio
from mempalace_cli.service import Palace, audit
from mempalace_cli.service.audit import ActivityLog, Caller
from mempalace_cli.serving.auth import (
    DEFAULT_HOST,
    TOKEN_ENV,
    BearerTokenGuard,
    check_http_options,
    is_loopback,
)

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

anyio = lazy("anyio")
chromadb = lazy("chromadb")
mcp_types = lazy("mcp_types")  # the SDK's message types: pydantic models, ~0.3 s to import
mcpserver = lazy("mcp.server.mcpserver")
mcp_exceptions = lazy("mcp.server.mcpserver.exceptions")
threadpoolctl = lazy("threadpoolctl")

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


def describe_error(exc: BaseException) -> str:
    """What a tool error says: the message and hint of `failure_of`, the CLI's own mapping."""
    return failure_of(exc).text()


SWITCH_INTERVAL = 0.001  # seconds (Python's default: 0.005)
UNEXPECTED_HINT = (
    "The server logged the details on its stderr and is still serving; check the arguments "
    "and retry, or report the log if it happens again."
)


class PalaceTools:
    """Runs the table's calls, each recorded in the palace's activity log (service/audit.py).

    Reads and writes take separate lanes, so a long mine never holds up a search:
    - read tools run on the shared `Palace` (its warm vector codes and postings), one at a time:
      its SQLite connection and Chroma handle are not for two threads at once;
    - write tools run on a `Palace` object of their own, one at a time: its own SQLite
      connections and Chroma handle and its own copy of the embedding model, as another process
      would have (the model object takes one text batch at a time, so sharing it would make a
      search wait for a mine's batch). The palace's cross-process write lock still serialises
      this writer with every other process's. While it writes from a catalogue in step, a read
      here uses the catalogue as committed (a true copy from before the write) instead of
      waiting for the lock as a read in another process must (`PalaceCore.sibling_writer`).
    """

    def __init__(self, palace: Palace, options: ServeOptions | None = None) -> None:
        self.palace = palace
        self.options = options or ServeOptions()
        palace.stay_warm()  # a server searches again and again: keep common words' postings
        # Read (so imported) here, once: a tool call never waits on the import lock.
        self._tool_error = mcp_exceptions.ToolError
        self._reads = threading.Lock()
        self._writes = threading.Lock()
        self._warm = threading.Event()  # cleared while warm_up imports and loads
        self._warm.set()
        self._writer: Palace | None = None
        self.activity = ActivityLog(audit.activity_folder(palace))

    @property
    def writer(self) -> Palace:
        """The palace object write tools run on (made on the first write)."""
        if self._writer is None:
            self._writer = writer_palace(self.palace)
            # While it writes from an in-step catalogue, reads need not wait for its lock.
            self.palace.sibling_writer = self._writer
        return self._writer

    def run(self, spec: ToolSpec, arguments: Any, caller: Caller | None = None) -> dict[str, Any]:
        """Check the arguments, call the service in the tool's lane, record the call; every
        failure becomes a ToolError the agent can act on (`failure_of`: the CLI's mapping)."""
        caller = caller or Caller(transport=self.options.transport)
        started = time.perf_counter()
        try:
            result = self._call(spec, arguments)
        except Exception as exc:
            failure = failure_of(
                exc,
                self.palace.catalog.path,
                f"finish {spec.name}",
                unexpected_hint=UNEXPECTED_HINT,
            )
            if not failure.expected:
                log.exception("%s failed unexpectedly", spec.name)
            self._record(caller, spec, arguments, None, started, failure)
            raise self._tool_error(failure.text()) from exc
        self._record(caller, spec, arguments, result, started, None)
        return result

    def refused(self, name: str, arguments: Any, caller: Caller, message: str) -> None:
        """Record a call of a tool this server does not serve (unknown, or a write tool on a
        read-only server)."""
        status = EXIT_STATUS[InvalidInputError]  # a usage error, as on the command line
        failure = Failure(status, message, None, "unknown_tool")
        self.activity.record(caller, name, arguments, None, 0.0, failure)

    def _call(self, spec: ToolSpec, arguments: Any) -> dict[str, Any]:
        bound = bind_arguments(spec, arguments)
        if spec.own_lane:  # its own store and lock, safe in any thread (see ToolSpec)
            if self.palace.coordination.on_server:  # it imports chromadb: not beside warm_up
                self._warm.wait()
            return spec.call(self.palace, bound)
        if spec.read_only:
            with self._reads:
                return spec.call(self.palace, bound)
        with self._writes:
            return spec.call(self.writer, bound)

    def _record(
        self,
        caller: Caller,
        spec: ToolSpec,
        arguments: Any,
        result: Any,
        started: float,
        failure: Failure | None,
    ) -> None:
        elapsed = (time.perf_counter() - started) * 1000
        self.activity.record(caller, spec.name, arguments, result, elapsed, failure)

    def warm_up(self) -> threading.Thread:
        """Make this process a server: import chromadb and load the model in the background,
        so the first search doesn't hit a client's timeout. Tool calls wait for it (it holds
        both lanes): two threads importing numpy's dependants at once can see a
        half-initialised numpy."""

        # A search's many short native calls (numpy, SQLite) each wait for the GIL while a mine
        # tokenises in Python on the write lane: hand it over every 1 ms instead of every 5 ms.
        sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL))

        def load() -> None:
            with self._writes, self._reads:
                try:
                    # The attribute read imports the store's package (~1 s) now, not in a call.
                    log.debug("chromadb %s imported", chromadb.__version__)

                    embedder = self.palace.embedder
                    embedder.ensure_loaded()
                    stay_warm = getattr(embedder, "stay_warm", None)
                    if stay_warm is not None:  # what a model builds after many queries: now
                        stay_warm()
                    log.info("embedding model loaded")
                except MemPalaceError as exc:
                    log.warning("embedding model unavailable: %s", describe_error(exc))
                except Exception:
                    log.exception("warming up failed; the first call will try again")
                one_blas_thread()
                audit.prepare()  # the secret rules that screen the arguments it records
                # What is loaded now lives as long as the server: keep the collector's full
                # passes (which pause every thread) from walking it again and again.
                gc.freeze()

        def load_then_open() -> None:
            try:
                load()
            finally:
                self._warm.set()

        self._warm.clear()
        return warm_up(load_then_open)

    def close(self) -> None:
        """Close the writer's database handles and the activity log (the shared palace is
        its owner's to close). A write still running keeps its handles: the process exit
        closes them."""
        if self._writes.acquire(blocking=False):
            try:
                if self._writer is not None:
                    self.palace.sibling_writer = None
                    self._writer.close()
                    self._writer = None
            finally:
                self._writes.release()
        if "coordination" in self.palace.__dict__:
            self.palace.coordination.stop()  # an event_wait still running returns now
        self.activity.close()


def one_blas_thread() -> None:
    """Keep numpy's BLAS to one thread for the whole server. The model limits itself to one
    around each call, and a limit set and restored by two threads at once (a search's query
    and a mine's batch) leaves one of them running with every core, the other waiting."""
    try:
        threadpoolctl.threadpool_limits(1, user_api="blas")
    except Exception:  # no threadpoolctl, no BLAS loaded: nothing to limit
        log.debug("BLAS threads not limited", exc_info=True)


def writer_palace(palace: Palace) -> Palace:
    """A second `Palace` over the same folder and settings, for write tools: its own database
    connections and Chroma handle, and its own instance of the palace's local embedding model
    (weights memory-mapped, so shared with the first), so its long batches never make a
    search wait for the model."""
    return WriterPalace(palace.settings)


class WriterPalace(Palace):
    """The write tools' `Palace`: its embedder is an instance of its own (`own_embedder`)."""

    _own_embedders: dict[str, Embedder]

    @property
    def embedder(self) -> Embedder:
        model = self.binding().model
        own = self.__dict__.setdefault("_own_embedders", {})
        if model not in own:
            own[model] = own_embedder(model, self.settings.embedding_model_dir)
        return own[model]


def own_embedder(model: str, model_dir: Path | None) -> Embedder:
    """A new instance of a local model (not the process's shared one); an API model's
    shared client, which holds no model."""
    if model.startswith(API_PREFIX):
        return get_embedder(model, model_dir)
    return MiniLMEmbedder(model_dir) if model == MODEL_NAME else make_embedder(model)


def caller_of(context: Any, transport: str) -> Caller:
    """Who is calling, from the SDK's request context: the client's name and version from its
    `initialize` request, and over HTTP the peer's address. Unknown parts stay None."""
    client = version = peer = None
    try:
        request_context = context.request_context
    except (AttributeError, ValueError):  # no request (an in-process call)
        return Caller(transport=transport)
    params = getattr(getattr(request_context, "session", None), "client_params", None)
    info = getattr(params, "client_info", None)
    if info is not None:
        client, version = getattr(info, "name", None), getattr(info, "version", None)
    address = getattr(getattr(request_context, "request", None), "client", None)
    if address is not None:
        host, port = address[0], address[1]
        peer = f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
    return Caller(client, version, transport, peer)


def _server_class() -> type[MCPServer]:
    class PalaceMCPServer(mcpserver.MCPServer):
        """MCPServer whose tools come from the declarative table in tools.py."""

        palace_tools: PalaceTools
        serve_options: ServeOptions = ServeOptions()

        def served(self, name: str) -> ToolSpec | None:
            """The tool by this name as this server runs it: None when unknown, or a write
            tool on a read-only server."""
            spec = TOOLS_BY_NAME.get(name)
            if spec is None or (self.serve_options.read_only and not spec.read_only):
                return None
            return spec.serving(self.serve_options)

        async def list_tools(self) -> list[mcp_types.Tool]:
            return [
                mcp_types.Tool(
                    name=spec.name,
                    title=spec.title,
                    description=spec.description,
                    input_schema=spec.input_schema(),
                    output_schema=spec.output,
                    annotations=mcp_types.ToolAnnotations(
                        title=spec.title,
                        read_only_hint=spec.read_only,
                        destructive_hint=None if spec.read_only else spec.destructive,
                        idempotent_hint=True if spec.read_only else spec.idempotent,
                        open_world_hint=False,
                    ),
                )
                for spec in TOOLS
                if self.served(spec.name) is not None
            ]

        def _tool_input_schema(self, name: str) -> dict[str, Any] | None:
            spec = self.served(name)
            return None if spec is None else spec.input_schema()

        async def call_tool(
            self, name: str, arguments: dict[str, Any], context: Any = None
        ) -> mcp_types.CallToolResult:
            spec = self.served(name)
            caller = caller_of(context, self.serve_options.transport)
            if spec is None:
                refusal = unknown_tool(name, self.serve_options)
                tools = self.palace_tools
                await anyio.to_thread.run_sync(tools.refused, name, arguments, caller, refusal)
                raise mcp_exceptions.ToolError(refusal)
            result = await anyio.to_thread.run_sync(
                self.palace_tools.run,
                spec,
                arguments,
                caller,
                abandon_on_cancel=spec.own_lane,  # a shutdown need not wait out an event_wait
            )
            text = to_json(result)
            return mcp_types.CallToolResult(
                content=[mcp_types.TextContent(type="text", text=text)],
                structured_content=result,
            )

    return PalaceMCPServer


def unknown_tool(name: str, options: ServeOptions) -> str:
    shown = name if len(name) <= 80 else name[:80] + "..."
    if not options.read_only:
        return f"Unknown tool: {shown}. This server's tools: {', '.join(TOOLS_BY_NAME)}."
    reads = [t.name for t in TOOLS if t.read_only]
    why = (
        "it changes the palace, and this server is read-only"
        if shown in TOOLS_BY_NAME
        else "no such tool"
    )
    return (
        f"Unknown tool: {shown} ({why}: its owner started it with `mempalace serve-mcp "
        f"--read-only`, so only read tools are served). This server's tools: {', '.join(reads)}."
    )


def build_server(palace: Palace, options: ServeOptions | None = None) -> MCPServer:
    """An MCPServer exposing the table's tools over `palace` (its `palace_tools`), within what
    `options` allows."""
    options = options or ServeOptions()
    server = _server_class()(
        name="mempalace",
        title="mempalace-cli",
        description="A local-first memory palace: verbatim drawers, a temporal knowledge "
        "graph, agent diaries.",
        instructions=palace.protocol(),
        version=__version__,
        log_level="WARNING",
    )
    server.palace_tools = PalaceTools(palace, options)  # type: ignore[attr-defined]
    server.serve_options = options  # type: ignore[attr-defined]
    if options.read_only:
        log.info("read-only: only read tools are listed and callable")
    elif options.mine_roots:
        log.info("mempalace_mine may mine under: %s", ", ".join(map(str, options.mine_roots)))
    else:
        log.info("mempalace_mine is off: no --mine-root given, no mcp_mine_roots in config.toml")
    return server


def serve_stdio(palace: Palace, options: ServeOptions | None = None) -> None:
    configure_logging()
    server = build_server(palace, options or ServeOptions(transport="stdio"))
    tools: PalaceTools = server.palace_tools  # type: ignore[attr-defined]
    try:
        _serve_stdio(server, palace, tools.warm_up())
    finally:
        tools.close()


def serve_http(
    palace: Palace,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token: str | None = None,
    options: ServeOptions | None = None,
) -> None:
    configure_logging()
    opts = options or ServeOptions(transport="http")
    built: list[MCPServer] = []

    def build() -> MCPServer:
        built.append(build_server(palace, opts))
        return built[-1]

    try:
        _serve_http(
            build,
            palace,
            lambda server: server.palace_tools.warm_up(),  # type: ignore[attr-defined]
            host=host,
            port=port,
            token=token,
        )
    finally:
        for server in built:
            server.palace_tools.close()  # type: ignore[attr-defined]
