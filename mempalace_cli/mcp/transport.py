"""How the MCP server is reached: stdio and streamable HTTP. Both stop on the first Ctrl-C or
SIGTERM, exit 0, within GRACEFUL_SECONDS however many sessions and calls are open
(`StopDeadline`).

Every frame that could be a JSON-RPC request gets a reply. The SDK drops what it cannot
validate (a truncated frame, a batch, list params, a lone surrogate, nesting deeper than its
parser goes, an id of null, 24.5, true or [1]) and the client waits for its timeout;
`check_frame` reads each stdio line (`GuardedStdin`) and each HTTP POST body (`FrameGuard`)
first and answers those itself with -32700 (parse error, an integer of more than 4,300 digits
too), -32600 (invalid request) or -32602 (invalid params), passing everything else through to
the SDK unchanged.

Over HTTP, `http_access` decides where to bind and which Host/Origin values are accepted (and
whether the bearer token is needed), and `slow_client_protocol` cuts off a client that dribbles
its request.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import contextmanager, suppress
from io import TextIOWrapper
from typing import TYPE_CHECKING, Any

from mempalace_cli.common.errors import MemPalaceError
from mempalace_cli.common.lazy import lazy
from mempalace_cli.serving.access import bind_socket, send_json
from mempalace_cli.serving.auth import (
    DEFAULT_HOST,
    BearerTokenGuard,
    HostOriginGuard,
    check_http_options,
)

# Slow clients and the stop deadline: the serving rule every HTTP server of the project shares.
from mempalace_cli.serving.http import (
    GRACEFUL_SECONDS,
    StopDeadline,
    serve_on_socket,
    server_config,
)

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from mempalace_cli.service import Palace

anyio = lazy("anyio")
mcp_types = lazy("mcp_types")  # the SDK's message types: pydantic models, ~0.3 s to import
mcp_stdio = lazy("mcp.server.stdio")
mcp_message = lazy("mcp.shared.message")
mcp_security = lazy("mcp.server.transport_security")

log = logging.getLogger("mempalace.mcp")

DEFAULT_PORT = 8765
HTTP_PATH = "/mcp"
# Above the SDK's 4 MiB default, so an oversized drawer reaches the tool and gets a message
# that says how to fix it instead of a bare HTTP 413.
MAX_HTTP_BODY = 16 * 1024 * 1024
MAX_LINE = MAX_HTTP_BODY  # the same cap on one stdio frame

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
_MAX_DIGITS = sys.get_int_max_str_digits() or 4300
_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,18}(?![\d.eE])|"(?:[^"\\]|\\.){0,200}")')

Reply = Callable[[Any, int, str], Awaitable[None]]


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


# -- stdio: a reply for every request ----------------------------------------------------------
def _top_level_id(line: bytes) -> Any:
    """The request id of a frame we could not parse, when it can be read from the frame's top
    level (so the client gets its answer now instead of a timeout); None otherwise."""
    depth, in_string, escaped = 0, False, False
    for pos, byte in enumerate(line):
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
            continue
        if byte == 0x22:
            if depth == 1:
                match = _ID.match(line, pos)
                if match:
                    with suppress(ValueError):
                        return json.loads(match.group(1))
            in_string = True
        elif byte in (0x7B, 0x5B):  # { [
            depth += 1
        elif byte in (0x7D, 0x5D):
            depth -= 1
    return None


def _has_lone_surrogate(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _request_id(obj: Any) -> Any:
    if isinstance(obj, dict):
        rid = obj.get("id")
        if isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool)):
            return rid
    return None


async def check_frame(line: bytes, reply: Reply) -> bool:
    """True if `line` goes on to the SDK; otherwise the error reply has been sent (or, for a
    broken notification, which takes no reply, logged)."""
    if not line.strip():
        return False
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        await reply(_top_level_id(line), PARSE_ERROR, "Parse error: the frame is not UTF-8.")
        return False
    try:
        obj = json.loads(text)
    except RecursionError:
        await reply(
            _top_level_id(line),
            INVALID_REQUEST,
            "Invalid request: the message is nested too deeply to read; send flatter arguments.",
        )
        return False
    except json.JSONDecodeError as exc:
        await reply(
            _top_level_id(line),
            PARSE_ERROR,
            f"Parse error: not valid JSON ({exc.msg} at character {exc.pos}); "
            "send one whole JSON-RPC message per line.",
        )
        return False
    except ValueError:  # an integer of more than 4,300 digits (Python's int-max-str-digits)
        await reply(
            _top_level_id(line),
            PARSE_ERROR,
            f"Parse error: a number in the message has more than {_MAX_DIGITS:,} digits, more "
            "than the server reads; send such a value as a string.",
        )
        return False
    if isinstance(obj, list):
        message = (
            "Invalid request: JSON-RPC batches are not supported by MCP; send each request "
            "as its own message."
        )
        ids = [_request_id(item) for item in obj if _request_id(item) is not None]
        for rid in ids or [None]:
            await reply(rid, INVALID_REQUEST, message)
        return False
    if not isinstance(obj, dict):
        await reply(None, INVALID_REQUEST, "Invalid request: a message must be a JSON object.")
        return False
    rid = _request_id(obj)
    is_request = "method" in obj and "id" in obj
    if is_request and rid is None:
        shown = json.dumps(obj["id"])
        await reply(
            None,
            INVALID_REQUEST,
            "Invalid request: the id must be a string or an integer, not "
            f"{shown if len(shown) <= 40 else shown[:40] + '...'}; a message without an id is a "
            "notification, which gets no reply.",
        )
        return False
    params = obj.get("params")
    if params is not None and not isinstance(params, dict):
        if is_request:
            await reply(
                rid,
                INVALID_REQUEST,
                f"Invalid request: params must be an object of named values, not a "
                f"{type(params).__name__}.",
            )
        return False
    if _has_lone_surrogate(obj):
        if is_request:
            await reply(
                None if _has_lone_surrogate(rid) else rid,  # such an id can't be echoed back
                INVALID_PARAMS,
                "Invalid params: the message holds a lone surrogate (half of a UTF-16 pair, "
                "e.g. an emoji cut in two), which is not valid Unicode; send whole characters.",
            )
        return False
    try:
        mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except RecursionError:
        if is_request:
            await reply(rid, INVALID_REQUEST, "Invalid request: the message is nested too deeply.")
        return False
    except Exception as exc:  # the SDK would drop it: answer instead
        # Only a notification (a method and no id) goes unanswered; `{}` is not one.
        if is_request or rid is not None or "method" not in obj:
            reason = str(exc).splitlines()[0][:200]
            await reply(rid, INVALID_REQUEST, f"Invalid request: {reason}.")
        else:
            log.warning("dropped a malformed JSON-RPC notification or response")
        return False
    return True


class GuardedStdin:
    """stdin as the SDK's stdio transport reads it (an async iterator of lines), checked first
    by `check_frame`. Reads wait on the descriptor, so cancelling the server (Ctrl-C, SIGTERM)
    never waits for a line that is not coming."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._reply: Reply | None = None
        self._ready = threading.Event()

    def attach(self, reply: Reply) -> None:
        self._reply = reply
        self._ready.set()

    async def _send(self, rid: Any, code: int, message: str) -> None:
        while self._reply is None:  # the transport is being set up
            await anyio.sleep(0.01)
        await self._reply(rid, code, message)

    async def _chunks(self) -> AsyncIterator[bytes]:
        while True:
            # A regular file (stdin redirected from disk) can't be waited on; its reads never block.
            with suppress(OSError, ValueError, NotImplementedError):
                await anyio.wait_readable(self.fd)
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                return
            yield chunk

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        buffer = b""
        async for chunk in self._chunks():
            buffer += chunk
            while b"\n" in buffer:
                line, _, buffer = buffer.partition(b"\n")
                if await check_frame(line, self._send):
                    yield line.decode("utf-8")
            if len(buffer) > MAX_LINE:
                await self._send(
                    _top_level_id(buffer[:4096]),
                    INVALID_REQUEST,
                    f"Invalid request: one message is over {MAX_LINE // (1024 * 1024)} MiB.",
                )
                buffer = b""  # the rest of that line is skipped as a broken frame
        # The stream ended mid-frame: that frame is checked (and answered) like any other.
        if buffer.strip() and await check_frame(buffer, self._send):
            yield buffer.decode("utf-8")


@contextmanager
def _private_std_fds() -> Any:
    """Move the protocol onto private copies of fds 0 and 1, and point 0 at /dev/null and 1 at
    stderr, so a stray print() or a native library's write can never corrupt the stream."""
    sys.stdout.flush()
    wire_in, wire_out = os.dup(0), os.dup(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    try:
        yield wire_in, wire_out
    finally:
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        for fd in (saved_in, saved_out, wire_in, wire_out):
            with suppress(OSError):
                os.close(fd)


async def _cancel_on_signal(scope: Any) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            log.info("%s received: stopping", signal.Signals(signum).name)
            StopDeadline().start()  # tool calls in worker threads can't be cancelled
            scope.cancel()
            return


async def _serve_stdio_async(server: MCPServer) -> None:
    with _private_std_fds() as (wire_in, wire_out):
        stdin = GuardedStdin(wire_in)
        out = TextIOWrapper(os.fdopen(wire_out, "wb", closefd=False), encoding="utf-8")
        stdout = anyio.wrap_file(out)
        lowlevel = server._lowlevel_server
        async with anyio.create_task_group() as tg:
            tg.start_soon(_cancel_on_signal, tg.cancel_scope)
            streams = mcp_stdio.stdio_server(stdin=stdin, stdout=stdout)  # type: ignore[arg-type]
            async with streams as (read_stream, write_stream):

                async def reply(rid: Any, code: int, message: str) -> None:
                    error = mcp_types.JSONRPCError(
                        jsonrpc="2.0",
                        id=rid,
                        error=mcp_types.ErrorData(code=code, message=message),
                    )
                    await write_stream.send(mcp_message.SessionMessage(error))

                stdin.attach(reply)
                await lowlevel.run(
                    read_stream, write_stream, lowlevel.create_initialization_options()
                )
            tg.cancel_scope.cancel()  # stdin ended: stop listening for signals


def warm_up(load: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=load, name="mempalace-warm-up", daemon=True)
    thread.start()
    return thread


def _finish_warm_up(thread: threading.Thread) -> None:
    # Exiting while the model loads in native code aborts the process: let it finish first.
    thread.join(timeout=120)


def serve_stdio(server: MCPServer, palace: Palace, warm: threading.Thread) -> None:
    log.info("serving palace %s over stdio", palace.path)
    try:
        anyio.run(_serve_stdio_async, server)
    finally:
        _finish_warm_up(warm)


# -- HTTP --------------------------------------------------------------------------------------
class FrameGuard:
    """ASGI middleware: the JSON-RPC body of a POST to the MCP endpoint is checked by
    `check_frame`, as a stdio line is, so every request gets its answer: what the SDK would
    accept as a notification (an id of null, 24.5, true or [1]) and answer 202 with no body, or
    answer without the request's id, gets HTTP 400 with the JSON-RPC error here. Everything
    else reaches the SDK unchanged."""

    def __init__(self, app: Any, path: str, max_body: int) -> None:
        self.app = app
        self.paths = {path, path + "/"}
        self.max_body = max_body

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] not in self.paths:
            await self.app(scope, receive, send)
            return
        length = next(
            (v for k, v in scope.get("headers", []) if k.lower() == b"content-length"), b""
        )
        if length.strip().isdigit() and int(length) > self.max_body:
            await self.app(scope, receive, send)  # the SDK answers 413
            return
        chunks: list[bytes] = []
        size, more = 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                await send_json(
                    send,
                    413,
                    _error(
                        None,
                        INVALID_REQUEST,
                        f"Invalid request: the body is over {self.max_body // (1024 * 1024)} MiB.",
                    ),
                )
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        errors: list[dict[str, Any]] = []

        async def reply(rid: Any, code: int, text: str) -> None:
            errors.append(_error(rid, code, text))

        if await check_frame(body, reply):
            replayed = False

            async def replay() -> Any:
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()

            await self.app(scope, replay, send)
            return
        if not errors:  # a broken notification or response, or an empty body
            errors.append(
                _error(
                    None,
                    INVALID_REQUEST,
                    "Invalid request: the body holds no valid JSON-RPC message; send one "
                    "request, notification or response as a JSON object.",
                )
            )
        await send_json(send, 400, errors[0] if len(errors) == 1 else errors)  # type: ignore[arg-type]


def _error(rid: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


def serve_http(
    build: Callable[[], MCPServer],
    palace: Palace,
    start_warm_up: Callable[[MCPServer], threading.Thread],
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token: str | None = None,
) -> None:
    access = check_http_options(host, token, port)
    sock = bind_socket(access)
    access = access.bound_to(sock.getsockname()[1])
    try:
        server = build()
    except BaseException:
        sock.close()
        raise
    app: Any = server.streamable_http_app(
        streamable_http_path=HTTP_PATH,
        host=access.address,
        max_request_body_size=MAX_HTTP_BODY,
        # The SDK's own Host/Origin check turns itself on for three exact spellings of
        # loopback only: it is off, and HostOriginGuard (the project's rule) guards every
        # server instead, whatever the spelling of --host.
        transport_security=mcp_security.TransportSecuritySettings(
            enable_dns_rebinding_protection=False
        ),
    )
    app = FrameGuard(app, HTTP_PATH, MAX_HTTP_BODY)
    if access.token:
        app = BearerTokenGuard(app, access.token)
    app = HostOriginGuard(app, access, HTTP_PATH)
    log.info(
        "serving palace %s at %s%s",
        palace.path,
        access.url(HTTP_PATH),
        " (bearer token required)" if access.token else "",
    )
    config = server_config(app, lifespan="on")
    warming = start_warm_up(server)
    try:
        serve_on_socket(config, sock)
    finally:
        _finish_warm_up(warming)


__all__ = [
    "DEFAULT_PORT",
    "GRACEFUL_SECONDS",
    "HTTP_PATH",
    "MAX_HTTP_BODY",
    "MemPalaceError",
    "configure_logging",
    "serve_http",
    "serve_stdio",
    "warm_up",
]
