"""serve-mcp at the wire: every JSON-RPC request over stdio gets a reply (malformed, truncated,
batched, list params, lone surrogates, 100,000-deep nesting), the server stops cleanly on the
first Ctrl-C or SIGTERM (stdio and HTTP), and HTTP without a token is only served on loopback.
More at the wire: test_mcp_frames.py, test_mcp_serving_rule.py, test_mcp_http_limits.py."""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import pytest

from tests.conftest import CliFn
from tests.test_mcp_support import free_port, mempalace_command

REPLY_TIMEOUT = 60.0
EXIT_TIMEOUT = 30.0
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


class RawStdio:
    """A serve-mcp subprocess driven line by line, without the SDK."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.lines: queue.Queue[bytes] = queue.Queue()
        assert proc.stdout is not None
        threading.Thread(target=self._pump, args=(proc.stdout,), daemon=True).start()

    def _pump(self, stream: IO[bytes]) -> None:
        for line in iter(stream.readline, b""):
            self.lines.put(line)

    def send(self, raw: bytes, newline: bool = True) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw + (b"\n" if newline else b""))
        self.proc.stdin.flush()

    def reply(self) -> dict[str, Any]:
        line = self.lines.get(timeout=REPLY_TIMEOUT)
        return json.loads(line)

    def handshake(self) -> None:
        self.send(json.dumps(INITIALIZE).encode())
        assert self.reply()["id"] == 1
        self.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')


@contextmanager
def raw_stdio(tmp_path: Path) -> Iterator[RawStdio]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {**os.environ, "MEMPALACE_HOME": str(home)}
    with (tmp_path / "server.log").open("wb") as log:
        proc = subprocess.Popen(
            [*mempalace_command(), "--palace", str(tmp_path / "palace"), "serve-mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env=env,
        )
        try:
            yield RawStdio(proc)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def call(rid: int, arguments: str) -> bytes:
    head = f'{{"jsonrpc": "2.0", "id": {rid}, "method": "tools/call", "params": '
    return (head + '{"name": "mempalace_list_rooms", "arguments": ' + arguments + "}}").encode()


def test_every_stdio_request_gets_a_reply(tmp_path: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    with raw_stdio(tmp_path) as server:
        server.handshake()
        cases: list[tuple[bytes, list[Any], int]] = [
            (call(10, '{"wing": "\\ud83d"}'), [10], -32602),  # a lone surrogate
            (call(11, '{"wing": ' + deep + "}"), [11], -32600),  # 100,000 deep
            (
                b'[{"jsonrpc": "2.0", "id": 12, "method": "tools/list"}, '
                b'{"jsonrpc": "2.0", "id": 13, "method": "tools/list"}]',
                [12, 13],
                -32600,
            ),  # a batch
            (b'{"jsonrpc": "2.0", "id": 14, "method": "tools/list", "params": [1]}', [14], -32600),
            (b'{"jsonrpc": "2.0", "id": 15, "method": "tools/li', [15], -32700),  # truncated
            (b"hello", [None], -32700),
            (b'{"jsonrpc": "2.0", "id": 16, "method": 7}', [16], -32600),
            (b'"just a string"', [None], -32600),
            (b"\xff\xfe not utf-8", [None], -32700),
        ]
        for frame, ids, code in cases:
            server.send(frame)
            for rid in ids:
                answer = server.reply()
                assert answer["id"] == rid, (frame[:80], answer)
                assert answer["error"]["code"] == code, (frame[:80], answer)
                assert answer["error"]["message"]
        # Still serving, in order.
        server.send(b'{"jsonrpc": "2.0", "id": 20, "method": "tools/list"}')
        listed = server.reply()
        assert listed["id"] == 20 and len(listed["result"]["tools"]) > 20
        # A frame cut off by the end of the stream is answered too; then a clean exit.
        server.send(b'{"jsonrpc": "2.0", "id": 21, "method": "tools/list"', newline=False)
        assert server.proc.stdin is not None
        server.proc.stdin.close()
        cut = server.reply()
        assert cut["id"] == 21 and cut["error"]["code"] == -32700
        assert server.proc.wait(timeout=EXIT_TIMEOUT) == 0


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_stdio_server_stops_on_the_first_signal(tmp_path: Path, signum: int) -> None:
    with raw_stdio(tmp_path) as server:
        server.handshake()  # serving, stdin still open and idle
        server.proc.send_signal(signum)
        assert server.proc.wait(timeout=EXIT_TIMEOUT) == 0


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_http_server_stops_on_the_first_signal(tmp_path: Path, signum: int) -> None:
    port = free_port()
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "MEMPALACE_HOME": str(home)}
    env.pop("MEMPALACE_MCP_TOKEN", None)
    cmd = [*mempalace_command(), "--palace", str(tmp_path / "palace"), "serve-mcp"]
    with (tmp_path / "server.log").open("wb") as log:
        proc = subprocess.Popen(
            [*cmd, "--transport", "http", "--port", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        try:
            deadline = time.monotonic() + 90
            while True:
                assert proc.poll() is None, (tmp_path / "server.log").read_text()
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    assert time.monotonic() < deadline
                    time.sleep(0.1)
            # A client holds a session open while the signal arrives.
            status, _ = post(f"http://127.0.0.1:{port}/mcp", INITIALIZE)
            assert status == 200
            proc.send_signal(signum)
            assert proc.wait(timeout=EXIT_TIMEOUT) == 0, (tmp_path / "server.log").read_text()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def post(url: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> tuple[int, str]:
    sent = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {**sent, **(headers or {})}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read(4096).decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "::ffff:0.0.0.0"])
def test_http_beyond_loopback_needs_a_token(
    cli: CliFn, monkeypatch: pytest.MonkeyPatch, host: str
) -> None:
    # Loopback addresses however spelled (127.0.0.2 too) are served without a token, behind
    # the Host/Origin guard: tests/test_mcp_serving_rule.py.
    monkeypatch.delenv("MEMPALACE_MCP_TOKEN", raising=False)
    result = cli("serve-mcp", "--transport", "http", "--host", host, expect=2)
    assert f"Serving on {host}" in result.stderr and "needs a bearer token" in result.stderr
    assert "DNS rebinding" in result.stderr and "--token" in result.stderr
    assert "Traceback" not in result.output


def test_foreign_host_header_is_refused_on_loopback(tmp_path: Path) -> None:
    from tests.test_mcp_support import http_server

    home = tmp_path / "home"
    home.mkdir()
    palace = tmp_path / "palace"
    with http_server(palace, home, tmp_path / "server.log") as url:
        add = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {
                "name": "mempalace_add_drawer",
                "arguments": {"wing": "intruder", "room": "x", "content": "never filed"},
            },
        }
        forged = {"Host": "attacker.example", "Origin": "http://attacker.example"}
        for body in (INITIALIZE, add):
            status, _ = post(url, body, forged)
            assert status in (400, 403, 421), status
        status, _ = post(url, INITIALIZE)
        assert status == 200
    assert not palace.exists()
