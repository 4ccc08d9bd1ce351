"""serve-mcp over HTTP: the bearer token, the loopback-only default, start-up errors; and a
tool that crashes becomes an error result while the server keeps serving."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from mempalace_cli.mcp.server import build_server, check_http_options
from mempalace_cli.service import open_palace
from tests.conftest import CliFn
from tests.test_mcp_support import http_session

TOKEN = "s3cret-token-for-tests"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
ADD_DRAWER = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {
        "name": "mempalace_add_drawer",
        "arguments": {"wing": "intruder", "room": "x", "content": "should never be filed"},
    },
}


def raw_post(url: str, body: dict[str, Any], authorization: str | None) -> tuple[int, str]:
    """A plain HTTP POST, bypassing the SDK, to see exactly what the server answers."""
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if authorization is not None:
        headers["Authorization"] = authorization
    request = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_token_protected_server_refuses_missing_or_wrong_token(tmp_path: Path) -> None:
    palace = tmp_path / "palace"
    home = tmp_path / "home"
    home.mkdir()
    with http_session(palace, home, tmp_path / "server.log", token=TOKEN) as mcp:
        url = mcp.url  # type: ignore[attr-defined]
        for authorization in (None, "Bearer wrong-token", f"Basic {TOKEN}", "Bearer ", TOKEN):
            for body in (INITIALIZE, ADD_DRAWER):
                status, text = raw_post(url, body, authorization)
                assert status == 401, (authorization, status, text)
                assert "bearer token" in json.loads(text)["message"]
        # The refused calls touched nothing: there is still no palace.
        assert mcp.ok("mempalace_status")["error"] == "No palace found"
        assert not palace.exists()
        # The SDK client with the right token works end to end.
        added = mcp.ok("mempalace_add_drawer", {"wing": "w", "room": "r", "content": "hello"})
        assert added["success"] is True
        assert mcp.ok("mempalace_status")["total_drawers"] == 1


def test_non_loopback_host_needs_a_token(cli: CliFn, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMPALACE_MCP_TOKEN", raising=False)
    result = cli("serve-mcp", "--transport", "http", "--host", "0.0.0.0", expect=2)
    assert "needs a bearer token" in result.stderr
    assert "--token" in result.stderr
    result = cli("serve-mcp", "--transport", "http", "--token", "  ", expect=2)
    assert "token is empty" in result.stderr
    # With a token, any address is accepted; loopback never needs one.
    check_http_options("0.0.0.0", TOKEN)
    check_http_options("::1", None)
    check_http_options("localhost", None)


def test_port_in_use_is_a_clear_error(cli: CliFn) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = cli("serve-mcp", "--transport", "http", "--port", str(port), expect=2)
    assert f"Cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "--port" in result.stderr


def test_a_crashing_tool_is_an_error_result_and_the_server_keeps_serving(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    palace = open_palace(str(home / "palace"))
    server = build_server(palace)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("disk on fire")

    # Fault injection on this one object: the next list_rooms call blows up inside the service.
    monkeypatch.setattr(palace, "list_rooms", broken)

    async def scenario() -> tuple[Any, Any, str | None]:
        async with Client(server) as client:
            crashed = await client.call_tool("mempalace_list_rooms", {})
            after = await client.call_tool("mempalace_status", {})
            return crashed, after, client.instructions

    crashed, after, instructions = anyio.run(scenario)
    assert crashed.is_error
    assert "Unexpected RuntimeError" in crashed.content[0].text
    assert "still serving" in crashed.content[0].text
    assert not after.is_error
    assert after.structured_content["error"] == "No palace found"
    assert instructions == palace.protocol()
