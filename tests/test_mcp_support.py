"""Helpers for the MCP tests (no tests here): start `mempalace serve-mcp` as a subprocess and
drive it with the SDK's own `Client`, synchronously, through an anyio blocking portal, so one
server can serve a whole test module."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import httpx2
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, Tool

CALL_TIMEOUT = 120.0
START_TIMEOUT = 90.0


def mempalace_command() -> list[str]:
    """The installed console script, or the module when the venv's bin is not on PATH."""
    exe = shutil.which(
        "mempalace",
        path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    )
    return [exe] if exe else [sys.executable, "-m", "mempalace_cli"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class McpSession:
    """A connected SDK client, called synchronously."""

    def __init__(
        self,
        portal: BlockingPortal,
        client: Client,
        palace: Path,
        log: Path,
        transport_errors: list[Exception],
    ) -> None:
        self.portal, self.client, self.palace, self.log = portal, client, palace, log
        self.transport_errors = transport_errors
        self.instructions = client.instructions

    def list_tools(self) -> list[Tool]:
        return self.portal.call(self.client.list_tools).tools

    def call(self, name: str, args: dict[str, Any] | None = None) -> CallToolResult:
        return self.portal.call(
            partial(self.client.call_tool, name, args or {}, read_timeout_seconds=CALL_TIMEOUT)
        )

    def ok(self, name: str, args: dict[str, Any] | None = None) -> Any:
        result = self.call(name, args)
        text = "".join(getattr(c, "text", "") for c in result.content)
        assert not result.is_error, f"{name} failed: {text}\n--- server log:\n{self.server_log()}"
        return (
            result.structured_content
            if result.structured_content is not None
            else (json.loads(text))
        )

    def error(self, name: str, args: dict[str, Any] | None = None) -> str:
        result = self.call(name, args)
        text = "".join(getattr(c, "text", "") for c in result.content)
        assert result.is_error, f"{name} should have failed, returned: {text[:500]}"
        return text

    def server_log(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""


@contextmanager
def _session(transport: Any, palace: Path, log: Path, mode: str = "auto") -> Iterator[McpSession]:
    errors: list[Exception] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, Exception):
            errors.append(message)

    with start_blocking_portal() as portal:
        client = Client(
            transport,
            mode=mode,
            message_handler=on_message,  # type: ignore[arg-type]
            read_timeout_seconds=CALL_TIMEOUT,
        )
        with portal.wrap_async_context_manager(client) as connected:
            yield McpSession(portal, connected, palace, log, errors)


@contextmanager
def stdio_session(
    palace: Path, home: Path, log: Path, *extra: str, cwd: Path | None = None
) -> Iterator[McpSession]:
    """`mempalace --palace PALACE serve-mcp [EXTRA...]` over stdio (started in `cwd`), with the
    `initialize` handshake."""
    cmd = mempalace_command()
    params = StdioServerParameters(
        command=cmd[0],
        args=[*cmd[1:], "--palace", str(palace), "serve-mcp", *extra],
        env={"MEMPALACE_HOME": str(home)},
        cwd=cwd,
    )
    with (
        log.open("w") as errlog,
        _session(stdio_client(params, errlog=errlog), palace, log, mode="legacy") as session,
    ):
        yield session


@contextmanager
def http_server(
    palace: Path, home: Path, log: Path, *extra: str, cwd: Path | None = None
) -> Iterator[str]:
    """`mempalace serve-mcp --transport http` on a free loopback port; yields its URL."""
    port = free_port()
    env = {**os.environ, "MEMPALACE_HOME": str(home)}
    env.pop("MEMPALACE_MCP_TOKEN", None)
    with log.open("w") as out:
        proc = subprocess.Popen(
            [
                *mempalace_command(),
                "--palace",
                str(palace),
                "serve-mcp",
                "--transport",
                "http",
                "--port",
                str(port),
                *extra,
            ],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
        )
        try:
            deadline = time.monotonic() + START_TIMEOUT
            while True:
                assert proc.poll() is None, f"server exited:\n{log.read_text()}"
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    assert time.monotonic() < deadline, f"server not up:\n{log.read_text()}"
                    time.sleep(0.1)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@asynccontextmanager
async def _http_with_headers(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    async with (
        httpx2.AsyncClient(headers=headers, timeout=CALL_TIMEOUT) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams


@contextmanager
def http_session(
    palace: Path,
    home: Path,
    log: Path,
    *extra: str,
    token: str | None = None,
    cwd: Path | None = None,
) -> Iterator[McpSession]:
    """`mempalace serve-mcp --transport http [--token TOKEN] [EXTRA...]` and a client of it."""
    flags = ("--token", token, *extra) if token else extra
    with http_server(palace, home, log, *flags, cwd=cwd) as url:
        transport: Any = url
        if token:
            transport = _http_with_headers(url, {"Authorization": f"Bearer {token}"})
        with _session(transport, palace, log) as session:
            session.url = url  # type: ignore[attr-defined]
            yield session
