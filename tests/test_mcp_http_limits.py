"""serve-mcp over HTTP under load, against a real server process: clients that open a
connection and dribble their request are cut off (408) while a normal client is served, and a
stop signal with hundreds of sessions open and tool calls queued ends the process within the
documented time (GRACEFUL_SECONDS)."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import random
import select
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from mempalace_cli.mcp.transport import GRACEFUL_SECONDS
from mempalace_cli.service import open_palace
from tests.test_mcp_support import START_TIMEOUT, free_port, http_server, mempalace_command
from tests.test_mcp_wire import INITIALIZE

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
HELD_FOR = 30.0  # what was found: slow connections were still held after this long


def _open(port: int, first: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    if first:
        sock.sendall(first)
    return sock


def test_slow_clients_are_cut_off_and_a_normal_client_is_served(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with http_server(tmp_path / "palace", home, tmp_path / "server.log") as url:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        head = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode()
        body_head = head + (
            b"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            b"Content-Length: 100000\r\n\r\n{"
        )
        # 20 dribble their headers, 10 their body, 10 connect and say nothing.
        kinds = ["headers"] * 20 + ["body"] * 10 + ["silent"] * 10
        socks = {
            _open(port, {"headers": head, "body": body_head, "silent": b""}[kind]): kind
            for kind in kinds
        }
        answers: dict[socket.socket, bytes] = dict.fromkeys(socks, b"")
        open_socks = set(socks)
        started = time.monotonic()

        # Meanwhile a normal client is served.
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("POST", "/mcp", json.dumps(INITIALIZE), HEADERS)
        response = conn.getresponse()
        assert response.status == 200 and b'"id":1' in response.read().replace(b" ", b"")
        conn.close()

        last_drip = 0.0
        while open_socks and time.monotonic() - started < HELD_FOR:
            if time.monotonic() - last_drip >= 1.0:  # one byte a second from each dribbler
                last_drip = time.monotonic()
                for sock in open_socks:
                    if socks[sock] != "silent" and not answers[sock]:
                        with contextlib.suppress(OSError):  # closed: seen by recv below
                            sock.send(b"x")
            # poll, not select(): in a long test run this process's descriptors pass 1024.
            poller = select.poll()
            by_fd = {sock.fileno(): sock for sock in open_socks}
            for fd in by_fd:
                poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
            for fd, _ in poller.poll(200):
                sock = by_fd[fd]
                try:
                    data = sock.recv(4096)
                except OSError:
                    data = b""
                answers[sock] += data
                if not data:
                    open_socks.discard(sock)
        elapsed = time.monotonic() - started
        for sock in socks:
            sock.close()
        assert not open_socks, f"{len(open_socks)} slow connection(s) still held after {elapsed}s"
        assert elapsed < HELD_FOR
        for sock, kind in socks.items():
            if kind != "silent":
                assert answers[sock].startswith(b"HTTP/1.1 408"), (kind, answers[sock][:200])
        # The server still serves.
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("POST", "/mcp", json.dumps(INITIALIZE), HEADERS)
        assert conn.getresponse().status == 200
        conn.close()


def _content() -> str:
    rng = random.Random(7)
    words = ["".join(rng.choice("abcdefghijklmnop") for _ in range(6)) for _ in range(2000)]
    return " ".join(rng.choice(words) for _ in range(14000))[:100_000]


class Call(threading.Thread):
    """One session that calls a slow read tool (a 100,000-character duplicate check)."""

    def __init__(self, port: int, content: str) -> None:
        super().__init__(daemon=True)
        self.port, self.content = port, content
        self.done = threading.Event()
        self.status: int | None = None

    def run(self) -> None:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
            conn.request("POST", "/mcp", json.dumps(INITIALIZE), HEADERS)
            response = conn.getresponse()
            response.read()
            session = {
                **HEADERS,
                "mcp-session-id": response.getheader("mcp-session-id") or "",
                "mcp-protocol-version": "2025-06-18",
            }
            ready = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            conn.request("POST", "/mcp", json.dumps(ready), session)
            conn.getresponse().read()
            call: dict[str, Any] = {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {
                    "name": "mempalace_check_duplicate",
                    "arguments": {"content": self.content},
                },
            }
            conn.request("POST", "/mcp", json.dumps(call), session)
            response = conn.getresponse()
            response.read()
            self.status = response.status
        except OSError:
            pass  # cut off by the stop
        finally:
            self.done.set()


def test_stop_with_hundreds_of_sessions_and_queued_calls_is_within_the_documented_time(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    palace_path = tmp_path / "palace"
    palace = open_palace(str(palace_path))
    assert palace.add_drawer("w", "r", "The backup job runs nightly at two.")["success"]
    palace.close()
    port = free_port()
    env = {**os.environ, "MEMPALACE_HOME": str(home)}
    env.pop("MEMPALACE_MCP_TOKEN", None)
    log = tmp_path / "server.log"
    cmd = [*mempalace_command(), "--palace", str(palace_path), "serve-mcp"]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*cmd, "--transport", "http", "--port", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while "embedding model loaded" not in log.read_text(errors="replace"):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        # 200 sessions opened and left open (initialize, never DELETE).
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for _ in range(200):
            conn.request("POST", "/mcp", json.dumps(INITIALIZE), HEADERS)
            response = conn.getresponse()
            response.read()
            assert response.status == 200
        # 30 slow calls at once: one runs, the others queue behind it.
        content = _content()
        calls = [Call(port, content) for _ in range(30)]
        for call in calls:
            call.start()
        wait_until = time.monotonic() + 120
        while not any(c.done.is_set() for c in calls):
            assert time.monotonic() < wait_until, log.read_text()
            time.sleep(0.05)
        assert any(c.status == 200 for c in calls if c.done.is_set()), log.read_text()
        assert not all(c.done.is_set() for c in calls)  # the rest are still queued
        stopped = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=120)
        took = time.monotonic() - stopped
        conn.close()
        assert code == 0, log.read_text()
        assert took <= GRACEFUL_SECONDS + 2, f"exit took {took:.1f}s\n{log.read_text()[-2000:]}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # What was filed is intact.
    palace = open_palace(str(palace_path))
    try:
        assert palace.status()["total_drawers"] == 1
    finally:
        palace.close()
