"""Frames that used to kill serve-mcp or go unanswered, over a real stdio subprocess and a real
HTTP server: an integer of more than 4,300 digits (Python's int-max-str-digits limit) and a
request id that is not a string or an integer (null, 24.5, true, [1]). Each gets its JSON-RPC
2.0 error, and the server answers the next request."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.test_mcp_support import http_server
from tests.test_mcp_wire import INITIALIZE, raw_stdio

HUGE = "9" * 4301
BAD_IDS = ["null", "24.5", "true", "[1]"]


def frames() -> list[tuple[bytes, Any, int]]:
    """(frame, the id the error must carry, the error code)."""
    cases: list[tuple[bytes, Any, int]] = [
        (f'{{"jsonrpc": "2.0", "id": {rid}, "method": "tools/list"}}'.encode(), None, -32600)
        for rid in BAD_IDS
    ]
    search = '"params": {"name": "mempalace_search", "arguments": {"query": "x", "limit": '
    cases += [
        # The number sits in the arguments: the request's id is still read.
        (
            f'{{"jsonrpc": "2.0", "id": 31, "method": "tools/call", {search}{HUGE}}}}}}}'.encode(),
            31,
            -32700,
        ),
        # The id itself is the number: no id can be given back.
        (f'{{"jsonrpc": "2.0", "id": {HUGE}, "method": "tools/list"}}'.encode(), None, -32700),
    ]
    return cases


def test_stdio_answers_every_such_frame_and_keeps_serving(tmp_path: Path) -> None:
    with raw_stdio(tmp_path) as server:
        server.handshake()
        for frame, rid, code in frames():
            server.send(frame)
            answer = server.reply()
            assert answer["id"] == rid, (frame[:80], answer)
            assert answer["error"]["code"] == code, (frame[:80], answer)
            says = "string or an integer" if code == -32600 else "more than 4,300 digits"
            assert says in answer["error"]["message"], answer
            assert server.proc.poll() is None, "the server exited"
        # Still serving, and no stray reply is queued ahead of the next one.
        server.send(b'{"jsonrpc": "2.0", "id": 40, "method": "tools/list"}')
        listed = server.reply()
        assert listed["id"] == 40 and len(listed["result"]["tools"]) > 20


def _post(url: str, raw: bytes, headers: dict[str, str]) -> tuple[int, Any, dict[str, str]]:
    sent = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    request = urllib.request.Request(url, raw, {**sent, **headers}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            body = response.read().decode()
            return response.status, body, dict(response.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), dict(exc.headers)


def test_http_answers_every_such_frame_and_keeps_serving(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with http_server(tmp_path / "palace", home, tmp_path / "server.log") as url:
        status, _, headers = _post(url, json.dumps(INITIALIZE).encode(), {})
        assert status == 200
        session = {
            "mcp-session-id": headers["mcp-session-id"],
            "mcp-protocol-version": "2025-06-18",
        }
        ready = b'{"jsonrpc": "2.0", "method": "notifications/initialized"}'
        assert _post(url, ready, session)[0] == 202
        for frame, rid, code in frames():
            status, body, _ = _post(url, frame, session)
            assert status == 400, (frame[:80], status, body)
            answer = json.loads(body)
            assert answer["id"] == rid, (frame[:80], answer)
            assert answer["error"]["code"] == code, (frame[:80], answer)
        status, body, _ = _post(
            url, b'{"jsonrpc": "2.0", "id": 40, "method": "tools/list"}', session
        )
        assert status == 200 and '"id":40' in body.replace(" ", ""), body[:300]


def test_stdio_answers_a_surrogate_id_and_messages_that_are_no_request(tmp_path: Path) -> None:
    """A lone surrogate in the id can't be echoed back (writing it killed the server); `{}` and
    a bare `{"jsonrpc": "2.0"}` are neither requests nor notifications: each gets its error with
    id null, and the server answers the next request."""
    with raw_stdio(tmp_path) as server:
        server.handshake()
        cases = [
            (b'{"jsonrpc":"2.0","id":"s\\ud800","method":"ping"}', -32602, "lone surrogate"),
            (b'{"jsonrpc":"2.0","id":"\\udc00","method":"tools/list"}', -32602, "lone surrogate"),
            (b"{}", -32600, "Invalid request"),
            (b'{"jsonrpc": "2.0"}', -32600, "Invalid request"),
        ]
        for frame, code, says in cases:
            server.send(frame)
            answer = server.reply()
            assert answer["id"] is None and answer["error"]["code"] == code, (frame, answer)
            assert says in answer["error"]["message"], answer
            assert server.proc.poll() is None, "the server exited"
        server.send(b'{"jsonrpc": "2.0", "id": 41, "method": "tools/list"}')
        assert server.reply()["id"] == 41
