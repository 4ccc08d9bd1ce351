"""The MCP server: the palace's tools for AI agents, over stdio or streamable HTTP.

Built on the official `mcp` SDK (`MCPServer`); every tool is a thin call into the one service,
`mempalace_cli.service.Palace`, shared by all tools of one server process. Typed core errors
become tool errors whose text says what to fix; anything unexpected becomes an error result
too, and the server keeps serving. No typer or rich here: `cli/serve.py` is the adapter.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import os
import socket
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from pydantic import Field, ValidationError

from mempalace_cli.errors import INIT_HINT, InvalidInputError, MemPalaceError, NoPalaceError
from mempalace_cli.layers import DEFAULT_BUDGET, MAX_BUDGET, MIN_BUDGET
from mempalace_cli.mcp_tools import MCP_TOOL_NAMES
from mempalace_cli.service.diary import MAX_READ
from mempalace_cli.service.drawers import DUPLICATE_THRESHOLD, MAX_DRAWER_CHARS, MAX_RESULTS
from mempalace_cli.service.navigation import MAX_HOPS

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from starlette.types import ASGIApp, Receive, Scope, Send

    from mempalace_cli.service import Palace

log = logging.getLogger("mempalace.mcp")

TOKEN_ENV = "MEMPALACE_MCP_TOKEN"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
HTTP_PATH = "/mcp"
# Above the SDK's 4 MiB default, so an oversized drawer reaches the tool and gets a message
# that says how to fix it instead of a bare HTTP 413.
MAX_HTTP_BODY = 16 * 1024 * 1024

T = TypeVar("T")

# -- field descriptions, written for the agent that calls the tools ---------------------------
WING_FILTER = (
    "Only look in this wing. Omit it unless you know the exact name from mempalace_status: "
    "the filter is an exact match and a guessed name silently returns nothing."
)
ROOM_FILTER = (
    "Only look in this room. Omit it unless you know the exact name from mempalace_status or "
    "mempalace_list_rooms: the filter is an exact match."
)
WING_FILE = "Wing to file into: the project, person or agent this is about (e.g. 'myapp')."
ROOM_FILE = "Room inside the wing: the topic (e.g. 'decisions', 'auth'). Created if new."
DRAWER_ID = "The drawer's id, exactly as returned in a result's drawer_id field."
ENTITY = "Entity name, e.g. a person, project or tool ('Maya', 'myapp'). Matched by name."
DATE = "A date as YYYY-MM-DD (or an ISO datetime)."


class PalaceTools:
    """The 20 tools, each a thin call into one shared `Palace`."""

    def __init__(self, palace: Palace) -> None:
        self.palace = palace
        # One palace object, many worker threads: one call at a time keeps the shared SQLite
        # connections and Chroma client safe; the palace lock still guards other processes.
        self._calls = threading.RLock()

    def call(self, tool: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run one service call; every failure becomes a ToolError the agent can act on."""
        from mcp.server.mcpserver.exceptions import ToolError

        with self._calls:
            try:
                return fn(*args, **kwargs)
            except MemPalaceError as exc:
                raise ToolError(describe_error(exc)) from exc
            except Exception as exc:
                log.exception("%s failed unexpectedly", tool)
                raise ToolError(
                    f"Unexpected {type(exc).__name__} inside the palace: {exc}. The server logged "
                    "the details on its stderr and is still serving; check the arguments and "
                    "retry, or report the log if it happens again."
                ) from exc


def describe_error(exc: MemPalaceError) -> str:
    return f"{exc.message} Hint: {exc.hint}" if exc.hint else exc.message


def search_view(result: dict[str, Any]) -> dict[str, Any]:
    """What an agent needs from a search: verbatim text, where it lives, how close it is."""
    keys = ("drawer_id", "text", "wing", "room", "source_file", "similarity")
    return {
        "query": result["query"],
        "filters": result["filters"],
        "results": [{k: item.get(k) for k in keys} for item in result["results"]],
    }


# -- the server ----------------------------------------------------------------------------------
def _server_class() -> type[MCPServer]:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    class PalaceMCPServer(MCPServer):
        """MCPServer whose argument-validation errors name each bad field and what it wants."""

        async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
            try:
                return await super().call_tool(name, arguments, context)
            except ToolError as exc:
                if type(exc) is ToolError and isinstance(exc.__cause__, ValidationError):
                    tool = self._tool_manager.get_tool(name)
                    schema = tool.parameters if tool else {}
                    raise ToolError(explain_validation(name, exc.__cause__, schema)) from exc
                raise

    return PalaceMCPServer


def explain_validation(tool: str, error: ValidationError, schema: dict[str, Any]) -> str:
    """One clause per bad field, with the field's own description, and never the (possibly huge)
    value the caller sent."""
    props = schema.get("properties", {})
    problems = []
    for err in error.errors():
        field = ".".join(str(p) for p in err["loc"]) or "arguments"
        described = props.get(str(err["loc"][0]), {}).get("description") if err["loc"] else None
        if err["type"] == "missing":
            problem = f"'{field}' is required but missing"
        else:
            got = type(err.get("input")).__name__
            problem = f"'{field}' is invalid: {err['msg']} (got {got})"
        problems.append(problem + (f" ({described.rstrip('.')})" if described else ""))
    return (
        f"Invalid arguments for {tool}: "
        + "; ".join(problems)
        + ". Fix these fields and call again (the tool's input schema lists every field)."
    )


def build_server(palace: Palace) -> MCPServer:
    """An MCPServer exposing exactly MCP_TOOL_NAMES over `palace` (its `palace_tools`)."""
    from mcp.types import ToolAnnotations

    from mempalace_cli import __version__

    tools = PalaceTools(palace)
    call = tools.call
    server = _server_class()(
        name="mempalace",
        title="mempalace-cli",
        description="A local-first memory palace: verbatim drawers, a temporal knowledge "
        "graph, agent diaries.",
        instructions=palace.protocol(),
        version=__version__,
        log_level="WARNING",
    )

    def annotations(
        title: str, *, read_only: bool, destructive: bool = False, idempotent: bool = False
    ) -> ToolAnnotations:
        return ToolAnnotations(
            title=title,
            read_only_hint=read_only,
            destructive_hint=None if read_only else destructive,
            idempotent_hint=True if read_only else idempotent,
            open_world_hint=False,
        )

    def tool(title: str, **hints: bool) -> Callable[[Callable[..., T]], Callable[..., T]]:
        def register(fn: Callable[..., T]) -> Callable[..., T]:
            server.add_tool(fn, name=fn.__name__, annotations=annotations(title, **hints))
            return fn

        return register

    # -- read -------------------------------------------------------------------------------
    @tool("Palace status", read_only=True)
    def mempalace_status() -> dict[str, Any]:
        """Overview of the palace: drawer counts per wing and room, plus the memory protocol
        and the AAAK dialect. Call this first in a session; use its exact wing and room names
        for filters."""

        def status() -> dict[str, Any]:
            try:
                st = palace.status()
            except NoPalaceError:
                return {
                    "error": "No palace found",
                    "palace_path": str(palace.path),
                    "hint": INIT_HINT,
                }
            return {
                "total_drawers": st["total_drawers"],
                "wings": st["wings"],
                "rooms": st["rooms"],
                "palace_path": st["palace_path"],
                "protocol": palace.protocol(),
                "aaak_dialect": palace.aaak_spec(),
            }

        return call("mempalace_status", status)

    @tool("List wings", read_only=True)
    def mempalace_list_wings() -> dict[str, Any]:
        """Every wing (project, person or agent) with its drawer count."""
        return call("mempalace_list_wings", palace.list_wings)

    @tool("List rooms", read_only=True)
    def mempalace_list_rooms(
        wing: Annotated[
            str | None,
            Field(
                description="List only this wing's rooms (exact name from mempalace_status); "
                "omit for every room in the palace."
            ),
        ] = None,
    ) -> dict[str, Any]:
        """Rooms (topics) with their drawer counts, in one wing or across the palace."""
        return call("mempalace_list_rooms", palace.list_rooms, wing=wing)

    @tool("Wing/room taxonomy", read_only=True)
    def mempalace_get_taxonomy() -> dict[str, Any]:
        """The full tree: wing -> room -> drawer count."""
        return call("mempalace_get_taxonomy", palace.get_taxonomy)

    @tool("Search the palace", read_only=True)
    def mempalace_search(
        query: Annotated[
            str,
            Field(
                description="What to look for, in natural language or keywords. Must not be empty."
            ),
        ],
        limit: Annotated[
            int,
            Field(
                description=f"How many results to return (1-{MAX_RESULTS}).", ge=1, le=MAX_RESULTS
            ),
        ] = 5,
        wing: Annotated[str | None, Field(description=WING_FILTER)] = None,
        room: Annotated[str | None, Field(description=ROOM_FILTER)] = None,
    ) -> dict[str, Any]:
        """Find the drawers that best answer a query (keyword + semantic ranking). Returns the
        verbatim text of each drawer with its wing, room, source file and similarity (0-1)."""
        result = call("mempalace_search", palace.search, query, wing=wing, room=room, limit=limit)
        return search_view(result)

    @tool("Check for duplicates", read_only=True)
    def mempalace_check_duplicate(
        content: Annotated[str, Field(description="The text you are about to file.")],
        threshold: Annotated[
            float,
            Field(
                description="Cosine similarity (0-1] from which a drawer counts as a "
                "duplicate. 0.9 catches near-identical text.",
                gt=0.0,
                le=1.0,
            ),
        ] = DUPLICATE_THRESHOLD,
    ) -> dict[str, Any]:
        """Is this content already in the palace? Returns is_duplicate and the close matches."""
        return call("mempalace_check_duplicate", palace.check_duplicate, content, threshold)

    @tool("AAAK dialect spec", read_only=True)
    def mempalace_get_aaak_spec() -> dict[str, Any]:
        """The AAAK dialect: the compressed shorthand used in summaries and diaries."""
        return {"aaak_spec": call("mempalace_get_aaak_spec", palace.aaak_spec)}

    # -- write ------------------------------------------------------------------------------
    @tool("File a drawer", read_only=False, idempotent=True)
    def mempalace_add_drawer(
        wing: Annotated[str, Field(description=WING_FILE)],
        room: Annotated[str, Field(description=ROOM_FILE)],
        content: Annotated[
            str,
            Field(
                description=f"The text to keep, verbatim (at most {MAX_DRAWER_CHARS:,} "
                "characters; split longer text into several drawers)."
            ),
        ],
        source_file: Annotated[
            str | None, Field(description="Where the text came from (a path or URL), if any.")
        ] = None,
        added_by: Annotated[
            str, Field(description="Who files it: your agent name, or 'mcp'.")
        ] = "mcp",
    ) -> dict[str, Any]:
        """File verbatim text into a wing and room. Refused when a near-identical drawer
        exists (success: false, reason: 'duplicate', with the matches); filing the identical
        text again is a no-op. Returns the drawer_id."""
        return call(
            "mempalace_add_drawer",
            palace.add_drawer,
            wing,
            room,
            content,
            source_file=source_file,
            added_by=added_by,
        )

    @tool("Delete a drawer", read_only=False, destructive=True, idempotent=True)
    def mempalace_delete_drawer(
        drawer_id: Annotated[str, Field(description=DRAWER_ID)],
    ) -> dict[str, Any]:
        """Permanently remove one drawer. Use only for content that is wrong or must go."""
        return call("mempalace_delete_drawer", palace.delete_drawer, drawer_id)

    # -- knowledge graph --------------------------------------------------------------------
    @tool("Query the knowledge graph", read_only=True)
    def mempalace_kg_query(
        entity: Annotated[str, Field(description=ENTITY)],
        as_of: Annotated[
            str | None,
            Field(
                description="Only facts valid on this date (YYYY-MM-DD); omit for every "
                "fact, current and ended."
            ),
        ] = None,
        direction: Annotated[
            Literal["outgoing", "incoming", "both"],
            Field(
                description="'outgoing': facts where the entity is the subject; "
                "'incoming': where it is the object; 'both' (default)."
            ),
        ] = "both",
    ) -> dict[str, Any]:
        """Facts about an entity, each with its validity interval."""
        return call("mempalace_kg_query", palace.kg_query, entity, as_of=as_of, direction=direction)

    @tool("Add a fact", read_only=False, idempotent=True)
    def mempalace_kg_add(
        subject: Annotated[str, Field(description="Who or what the fact is about ('Maya').")],
        predicate: Annotated[
            str, Field(description="The relation, snake_case ('works_on', 'prefers').")
        ],
        object: Annotated[str, Field(description="The value or other entity ('myapp').")],
        valid_from: Annotated[
            str | None, Field(description=f"When it became true. {DATE} Omit if unknown.")
        ] = None,
        valid_to: Annotated[
            str | None, Field(description=f"When it stopped being true. {DATE} Omit if current.")
        ] = None,
        confidence: Annotated[
            float, Field(description="How sure you are, 0-1.", ge=0.0, le=1.0)
        ] = 1.0,
        source_drawer_id: Annotated[
            str | None, Field(description="The drawer this fact was read from, if any.")
        ] = None,
        source_file: Annotated[
            str | None, Field(description="The file this fact was read from, if any.")
        ] = None,
        subject_type: Annotated[
            str | None, Field(description="Kind of subject: person, project, tool, place...")
        ] = None,
        object_type: Annotated[
            str | None, Field(description="Kind of object: person, project, tool, place...")
        ] = None,
    ) -> dict[str, Any]:
        """Record a fact (subject, predicate, object) with an optional validity interval."""
        return call(
            "mempalace_kg_add",
            palace.kg_add,
            subject,
            predicate,
            object,
            valid_from=valid_from,
            valid_to=valid_to,
            confidence=confidence,
            source_drawer_id=source_drawer_id,
            source_file=source_file,
            subject_type=subject_type,
            object_type=object_type,
        )

    @tool("End a fact", read_only=False)
    def mempalace_kg_invalidate(
        subject: Annotated[str, Field(description="The fact's subject, as stored.")],
        predicate: Annotated[str, Field(description="The fact's predicate, as stored.")],
        object: Annotated[str, Field(description="The fact's object, as stored.")],
        ended: Annotated[
            str | None, Field(description=f"When it stopped being true. {DATE} Default: today.")
        ] = None,
    ) -> dict[str, Any]:
        """Mark a fact as no longer true from a date. Never deletes: history stays queryable
        with as_of."""
        return call(
            "mempalace_kg_invalidate",
            palace.kg_invalidate,
            subject,
            predicate,
            object,
            ended=ended,
        )

    @tool("Fact timeline", read_only=True)
    def mempalace_kg_timeline(
        entity: Annotated[
            str | None, Field(description=f"{ENTITY} Omit for the whole graph's timeline.")
        ] = None,
    ) -> dict[str, Any]:
        """Facts in chronological order, for one entity or the whole graph."""
        return call("mempalace_kg_timeline", palace.kg_timeline, entity)

    @tool("Knowledge-graph stats", read_only=True)
    def mempalace_kg_stats() -> dict[str, Any]:
        """Counts of entities and facts (current and expired) and of each predicate in use."""
        return call("mempalace_kg_stats", palace.kg_stats)

    # -- navigation -------------------------------------------------------------------------
    @tool("Walk the palace graph", read_only=True)
    def mempalace_traverse(
        start_room: Annotated[
            str, Field(description="Room to start from (exact name from mempalace_list_rooms).")
        ],
        max_hops: Annotated[
            int,
            Field(description=f"How far to walk, in rooms (1-{MAX_HOPS}).", ge=1, le=MAX_HOPS),
        ] = 2,
    ) -> dict[str, Any]:
        """Rooms reachable from a room, hop by hop: rooms of one wing are neighbours, and a room
        filed in several wings (a tunnel) leads into each of them. An unknown room gives
        found: false with close names in suggestions."""
        return call("mempalace_traverse", palace.traverse, start_room, max_hops=max_hops)

    @tool("Find tunnels", read_only=True)
    def mempalace_find_tunnels(
        wing_a: Annotated[
            str | None, Field(description="First wing (exact name); omit for any wing.")
        ] = None,
        wing_b: Annotated[
            str | None, Field(description="Second wing (exact name); omit for any wing.")
        ] = None,
    ) -> dict[str, Any]:
        """Rooms that appear in more than one wing: where projects and people meet."""
        return call("mempalace_find_tunnels", palace.find_tunnels, wing_a=wing_a, wing_b=wing_b)

    @tool("Palace graph stats", read_only=True)
    def mempalace_graph_stats() -> dict[str, Any]:
        """Counts of wings, rooms, drawers, tunnels and edges in the palace graph, and the top
        tunnels."""
        return call("mempalace_graph_stats", palace.graph_stats)

    # -- diary ------------------------------------------------------------------------------
    @tool("Write diary entry", read_only=False)
    def mempalace_diary_write(
        agent: Annotated[str, Field(description="Your agent name; each agent has its own diary.")],
        content: Annotated[
            str, Field(description="The entry: what you did, learned or decided (AAAK welcome).")
        ],
        topic: Annotated[
            str | None, Field(description="A short topic to file the entry under, if any.")
        ] = None,
    ) -> dict[str, Any]:
        """Append an entry to your own diary: a drawer in wing wing_<agent>, room diary, so
        search finds it too."""
        return call("mempalace_diary_write", palace.diary_write, agent, content, topic=topic)

    @tool("Read diary", read_only=True)
    def mempalace_diary_read(
        agent: Annotated[str, Field(description="The agent whose diary to read.")],
        last: Annotated[
            int,
            Field(description=f"How many recent entries (1-{MAX_READ}).", ge=1, le=MAX_READ),
        ] = 10,
    ) -> dict[str, Any]:
        """The agent's most recent diary entries, newest first."""
        return call("mempalace_diary_read", palace.diary_read, agent, last=last)

    # -- context ----------------------------------------------------------------------------
    @tool("Wake-up context", read_only=True)
    def mempalace_wake_up(
        wing: Annotated[
            str | None,
            Field(
                description="Focus on this wing (exact name from mempalace_status); omit for "
                "the whole palace."
            ),
        ] = None,
        budget: Annotated[
            int,
            Field(
                description=f"Token budget for the context text ({MIN_BUDGET}-{MAX_BUDGET}).",
                ge=MIN_BUDGET,
                le=MAX_BUDGET,
            ),
        ] = DEFAULT_BUDGET,
    ) -> dict[str, Any]:
        """The same wake-up context as `mempalace wake-up`: identity plus the palace's most
        important drawers, within a token budget. Call at the start of a session."""
        return call("mempalace_wake_up", palace.wake_up, wing=wing, budget=budget)

    registered = {t.name for t in server._tool_manager.list_tools()}
    if registered != set(MCP_TOOL_NAMES):  # mcp_tools.py is the contract prompts rely on
        raise RuntimeError(
            f"MCP tools out of step with MCP_TOOL_NAMES: {registered ^ set(MCP_TOOL_NAMES)}"
        )
    server.palace_tools = tools  # type: ignore[attr-defined]
    return server


# -- transports ----------------------------------------------------------------------------------
def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_http_options(host: str, token: str | None) -> None:
    """Refuse to expose the palace beyond this machine without a token."""
    if token is not None and not token.strip():
        raise InvalidInputError(
            "The bearer token is empty.", hint=f"Pass a real secret with --token or {TOKEN_ENV}."
        )
    if not is_loopback(host) and not token:
        raise InvalidInputError(
            f"Serving on {host} would let other machines read and change the palace, so it "
            "needs a bearer token.",
            hint=f"Pass --token SECRET (or set {TOKEN_ENV}), or keep the default --host "
            f"{DEFAULT_HOST}.",
        )


class BearerTokenGuard:
    """ASGI middleware: every HTTP request must carry `Authorization: Bearer <token>`.

    Checked before the MCP app sees the request, so a refused request touches nothing.
    """

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token.strip().encode("utf-8")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._authorized(scope):
            body = json.dumps(
                {
                    "error": "unauthorized",
                    "message": "Missing or wrong bearer token.",
                    "hint": "Send the header 'Authorization: Bearer <token>' with the token "
                    "the server was started with.",
                }
            ).encode("utf-8")
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode()),
                        (b"www-authenticate", b'Bearer realm="mempalace"'),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        header = b""
        for name, value in scope.get("headers", []):
            if name.lower() == b"authorization":
                header = value
                break
        scheme, _, presented = header.partition(b" ")
        if scheme.lower() != b"bearer":
            presented = b""
        # Constant-time: the compare takes as long whatever prefix of the token matches.
        return hmac.compare_digest(presented.strip(), self._token)


def configure_logging() -> None:
    """Everything we, chromadb or onnxruntime log goes to stderr; stdout stays the protocol's."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    log.setLevel(logging.INFO)


def warm_up(tools: PalaceTools) -> threading.Thread:
    """Import chromadb and load the model in the background, so the first search doesn't hit
    a client's timeout. Tool calls wait for it (they share the call lock): two threads importing
    numpy's dependants at once can see a half-initialised numpy."""

    def load() -> None:
        with tools._calls:
            try:
                import chromadb  # noqa: F401  (the store's import, ~1 s)

                tools.palace.embedder.ensure_loaded()
                log.info("embedding model loaded")
            except MemPalaceError as exc:
                log.warning("embedding model unavailable: %s", describe_error(exc))
            except Exception:
                log.exception("warming up failed; the first call will try again")

    thread = threading.Thread(target=load, name="mempalace-warm-up", daemon=True)
    thread.start()
    return thread


def _finish_warm_up(thread: threading.Thread) -> None:
    # Exiting while the model loads in native code aborts the process: let it finish first.
    thread.join(timeout=120)


def serve_stdio(palace: Palace) -> None:
    configure_logging()
    server = build_server(palace)
    warming = warm_up(server.palace_tools)  # type: ignore[attr-defined]
    log.info("serving palace %s over stdio", palace.path)
    try:
        # The SDK points fd 1 at stderr while serving and writes the protocol to a private
        # copy, so even a stray print() or native library write cannot corrupt the stream.
        server.run("stdio")
    finally:
        _finish_warm_up(warming)


def bind_socket(host: str, port: int) -> socket.socket:
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        return socket.create_server((host, port), family=family, reuse_port=False)
    except OSError as exc:
        raise InvalidInputError(
            f"Cannot listen on {host}:{port}: {os.strerror(exc.errno) if exc.errno else exc}.",
            hint="Pick another port with --port, or stop whatever is using this one.",
        ) from exc


def serve_http(
    palace: Palace, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, token: str | None = None
) -> None:
    import anyio
    import uvicorn

    check_http_options(host, token)
    sock = bind_socket(host, port)
    try:
        configure_logging()
        server = build_server(palace)
    except BaseException:
        sock.close()
        raise
    app: Any = server.streamable_http_app(
        streamable_http_path=HTTP_PATH, host=host, max_request_body_size=MAX_HTTP_BODY
    )
    if token:
        app = BearerTokenGuard(app, token)
    shown = f"[{host}]" if ":" in host else host
    actual_port = sock.getsockname()[1]
    log.info(
        "serving palace %s at http://%s:%d%s%s",
        palace.path,
        shown,
        actual_port,
        HTTP_PATH,
        " (bearer token required)" if token else "",
    )
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    warming = warm_up(server.palace_tools)  # type: ignore[attr-defined]
    try:
        anyio.run(uvicorn.Server(config).serve, [sock])
    finally:
        _finish_warm_up(warming)
