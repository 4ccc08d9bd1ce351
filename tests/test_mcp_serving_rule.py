"""The one rule for serving over HTTP (mempalace_cli/serving/access.py), against real
`mempalace serve-mcp --transport http` processes: whatever spelling --host is given in, the
server either refuses to start without a token, with a message that says why, or it binds a
loopback address and refuses every request whose Host or Origin names another site (DNS
rebinding), touching nothing."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from mempalace_cli.common.errors import InvalidInputError
from mempalace_cli.serving.auth import TOKEN_ENV, check_http_options, is_loopback
from tests.test_mcp_http_auth import ADD_DRAWER
from tests.test_mcp_support import START_TIMEOUT, free_port, mempalace_command
from tests.test_mcp_wire import INITIALIZE, post

TOKEN = "rule-token-for-tests"
FORGED = {"Host": "attacker.example", "Origin": "http://attacker.example"}


def _resolves(name: str) -> str | None:
    try:
        infos = socket.getaddrinfo(name, 0, type=socket.SOCK_STREAM)
    except OSError:
        return None
    infos.sort(key=lambda info: info[0] != socket.AF_INET)
    return str(infos[0][4][0])


def _can_bind(address: str) -> bool:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    try:
        with socket.socket(family) as sock:
            sock.bind((address, 0))
    except OSError:
        return False
    return True


# Every spelling found from outside: where it must be served (None: refused at start).
SPELLINGS: dict[str, str | None] = {
    "LOCALHOST": "127.0.0.1",
    "Localhost": "127.0.0.1",
    "localhost.": _resolves("localhost."),  # resolves on some machines, not on others
    "127.1": "127.0.0.1",
    "127.0.0.2": "127.0.0.2",
    "0x7f.0.0.1": "127.0.0.1",
    "::ffff:127.0.0.1": "127.0.0.1",
    " 127.0.0.1": "127.0.0.1",
    "[::1]": "::1" if _can_bind("::1") else None,
    "no-such-host.invalid": None,
}


class Started:
    def __init__(self, proc: subprocess.Popen[bytes], log: Path, port: int) -> None:
        self.proc, self.log, self.port = proc, log, port
        self.url: str | None = None  # None: the server refused to start

    def text(self) -> str:
        return self.log.read_text(errors="replace")


@contextmanager
def serve(tmp_path: Path, host: str, *extra: str) -> Iterator[Started]:
    """`serve-mcp --transport http --host HOST` as a subprocess, until it serves (its URL read
    from its log) or exits."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {**os.environ, "MEMPALACE_HOME": str(home)}
    env.pop(TOKEN_ENV, None)
    port = free_port()
    log = tmp_path / "server.log"
    cmd = [*mempalace_command(), "--palace", str(tmp_path / "palace"), "serve-mcp"]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*cmd, "--transport", "http", "--host", host, "--port", str(port), *extra],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    started = Started(proc, log, port)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while proc.poll() is None:
            found = re.search(r" at (http://\S+/mcp)", started.text())
            if found:
                started.url = found.group(1)
                break
            assert time.monotonic() < deadline, (
                f"server neither served nor exited:\n{started.text()}"
            )
            time.sleep(0.1)
        yield started
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.mark.parametrize("host", list(SPELLINGS), ids=[repr(h) for h in SPELLINGS])
def test_every_spelling_is_refused_or_served_on_loopback_behind_the_host_check(
    tmp_path: Path, host: str
) -> None:
    expected = SPELLINGS[host]
    with serve(tmp_path, host) as server:
        if expected is None:
            assert server.proc.wait(timeout=60) == 2, server.text()
            text = server.text()
            assert "The server did not start" in text or "Cannot listen" in text, text
            assert "--host" in text, text
            assert "Unknown error" not in text and "Traceback" not in text, text
            assert server.url is None
            return
        shown = f"[{expected}]" if ":" in expected else expected
        assert server.url == f"http://{shown}:{server.port}/mcp", server.text()
        url = server.url
        # A web page that rebinds its own name to this address: refused, whatever it asks.
        for body in (INITIALIZE, ADD_DRAWER):
            status, text = post(url, body, FORGED)
            assert status == 421, (status, text)
            assert "DNS rebinding" in json.loads(text)["hint"]
        # The right Host but a foreign page's Origin: refused too.
        status, text = post(url, INITIALIZE, {"Origin": "http://attacker.example"})
        assert status == 403, (status, text)
        # Nothing was touched.
        assert not (tmp_path / "palace").exists()
        # An MCP client naming the address, or localhost, is served.
        assert post(url, INITIALIZE)[0] == 200
        assert post(url, INITIALIZE, {"Host": f"localhost:{server.port}"})[0] == 200
        origin = {"Origin": f"http://{shown}:{server.port}"}
        assert post(url, INITIALIZE, origin)[0] == 200
        assert server.proc.poll() is None


def test_a_token_server_off_loopback_refuses_the_forged_request(tmp_path: Path) -> None:
    with serve(tmp_path, "0.0.0.0", "--token", TOKEN) as server:
        assert server.url == f"http://0.0.0.0:{server.port}/mcp", server.text()
        url = f"http://127.0.0.1:{server.port}/mcp"
        for body in (INITIALIZE, ADD_DRAWER):
            status, _ = post(url, body, FORGED)
            assert status == 401
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        # With the token, a page of another site is still refused...
        status, _ = post(url, INITIALIZE, {**bearer, "Origin": "http://attacker.example"})
        assert status == 403
        assert not (tmp_path / "palace").exists()
        # ...and a client on any name of the machine is served.
        assert post(url, INITIALIZE, bearer)[0] == 200


def test_the_rule_as_a_function() -> None:
    """`check_http_options` (http_access.plan_http_access): what a later web UI reuses."""
    access = check_http_options("LOCALHOST", None, 8765)
    assert (access.address, access.loopback, access.token) == ("127.0.0.1", True, None)
    assert access.allowed_hosts == {"127.0.0.1:8765", "localhost:8765"}
    assert access.allowed_origins == {"http://127.0.0.1:8765", "http://localhost:8765"}
    assert check_http_options("::ffff:127.0.0.2", None, 80).allowed_hosts == {
        "127.0.0.2:80",
        "localhost:80",
        "127.0.0.2",
        "localhost",
    }
    ipv6 = check_http_options(" [::1] ", None, 9000)
    assert (ipv6.address, ipv6.url("/mcp")) == ("::1", "http://[::1]:9000/mcp")
    anywhere = check_http_options("0.0.0.0", f"  {TOKEN} ", 8765)
    assert (anywhere.loopback, anywhere.token) == (False, TOKEN)
    assert anywhere.allowed_hosts is None and anywhere.allowed_origins is None
    assert is_loopback("127.1") and is_loopback("localhost") and not is_loopback("0.0.0.0")
    assert not is_loopback("no-such-host.invalid")

    def refusal(host: str, token: str | None = None) -> str:
        with pytest.raises(InvalidInputError) as caught:
            check_http_options(host, token, 8765)
        return f"{caught.value.message} {caught.value.hint}"

    assert "does not resolve" in refusal("no-such-host.invalid")
    assert "the address is empty" in refusal("  ")
    assert "--port 8765" in refusal("127.0.0.1:8765")
    assert "needs a bearer token" in refusal("0.0.0.0")
    assert "needs a bearer token" in refusal("::")
    assert "token is empty" in refusal("127.0.0.1", " ")


def test_two_host_or_origin_headers_are_refused(tmp_path: Path) -> None:
    """Only the first of two Host headers used to be read: a good one then a foreign one
    passed. A request with two Host (or Origin) headers is now refused whatever their order."""

    with serve(tmp_path, "127.0.0.1") as server:
        assert server.url is not None, server.text()
        good, evil = f"127.0.0.1:{server.port}", "attacker.example"
        body = json.dumps(INITIALIZE).encode()
        for extra in (
            f"Host: {good}\r\nHost: {evil}\r\n",
            f"Host: {evil}\r\nHost: {good}\r\n",
            f"Host: {good}\r\nOrigin: http://{good}\r\nOrigin: http://{evil}\r\n",
        ):
            with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
                sock.sendall(
                    (
                        f"POST /mcp HTTP/1.1\r\n{extra}Content-Type: application/json\r\n"
                        "Accept: application/json, text/event-stream\r\n"
                        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
                    ).encode()
                    + body
                )
                answer = b""
                while chunk := sock.recv(65536):
                    answer += chunk
            status = int(answer.split(b" ", 2)[1])
            assert status in (400, 421), (extra, answer[:300])
        assert not (tmp_path / "palace").exists()
        assert server.proc.poll() is None
