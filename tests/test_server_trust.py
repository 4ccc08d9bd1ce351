"""A Chroma server that is not ours to trust: down, hanging, refusing our token, or dropping
requests. A real `chroma run` sits behind a small real HTTP proxy that checks a bearer token
(as a reverse proxy in front of a team's server would) and can drop requests."""

from __future__ import annotations

import http.client
import shutil
import socket
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.team_support import Machine, shared_server, unique_database
from tests.test_mcp_support import free_port

TOKEN = "team-token-1"


class TokenProxy:
    """Forwards to `upstream` the requests that carry `Authorization: Bearer TOKEN`; answers
    401 to the others. `drop(method, n)` makes it close the connection, unanswered and not
    forwarded, on the next n requests of that method."""

    def __init__(self, upstream: str) -> None:
        self.upstream = urllib.parse.urlparse(upstream)
        self.to_drop: dict[str, int] = {}
        self.forwarded: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with proxy.lock:
                    if proxy.to_drop.get(self.command, 0) > 0:
                        proxy.to_drop[self.command] -= 1
                        self.close_connection = True
                        return
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    payload = b'{"error":"Unauthorized","message":"bad or missing token"}'
                    self.send_response(401)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                with proxy.lock:
                    proxy.forwarded.append((self.command, self.path))
                conn = http.client.HTTPConnection(
                    proxy.upstream.hostname, proxy.upstream.port, timeout=60
                )
                headers = {"Content-Type": self.headers.get("Content-Type", "application/json")}
                conn.request(self.command, self.path, body=body or None, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                self.send_response(resp.status)
                self.send_header("Content-Type", resp.getheader("Content-Type", "application/json"))
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                conn.close()

            do_GET = do_POST = do_PUT = do_DELETE = _handle  # noqa: N815

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def drop(self, method: str, n: int) -> None:
        with self.lock:
            self.to_drop[method] = n

    def writes(self) -> list[tuple[str, str]]:
        with self.lock:
            return [
                f
                for f in self.forwarded
                if f[1].rsplit("/", 1)[-1] in ("add", "upsert", "update", "delete")
            ]


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with shared_server(tmp_path_factory.mktemp("trust-chroma")) as url:
        yield url


@pytest.fixture
def proxy(server_url: str) -> Iterator[TokenProxy]:
    p = TokenProxy(server_url)
    p.thread.start()
    try:
        yield p
    finally:
        p.server.shutdown()
        p.server.server_close()


def _machine(tmp_path: Path, url: str) -> Machine:
    return Machine(tmp_path / "m", url, unique_database())


def test_a_server_that_is_down_is_named_with_what_to_do(tmp_path: Path) -> None:
    m = _machine(tmp_path, f"http://127.0.0.1:{free_port()}")
    error = m.json("status", expect=13)["error"]
    assert error["kind"] == "server_unavailable"
    assert m.url in error["message"] and "chroma run" in error["hint"]
    plain = m.run("kg", "add", "A", "uses", "B", expect=13)
    assert "Could not reach the Chroma server" in plain.stderr
    assert "Traceback" not in plain.stderr and plain.stdout == ""  # nothing reported done


def test_a_server_that_never_answers_times_out(tmp_path: Path) -> None:
    with socket.socket() as hung:  # accepts connections, never answers
        hung.bind(("127.0.0.1", 0))
        hung.listen(16)
        m = _machine(tmp_path, f"http://127.0.0.1:{hung.getsockname()[1]}")
        (m.home / "config.toml").write_text("chroma_timeout_seconds = 1\n")
        error = m.json("status", expect=13)["error"]
    assert error["kind"] == "server_timeout"
    assert "did not answer within 1 s" in error["message"]
    assert "chroma_timeout_seconds" in error["hint"]


def test_the_token_goes_to_the_server_and_a_refusal_is_clear(
    tmp_path: Path, proxy: TokenProxy, embedder: Any
) -> None:
    m = _machine(tmp_path, proxy.url)
    missing = m.json("status", expect=14)["error"]
    assert missing["kind"] == "server_auth" and "requires a token" in missing["message"]
    assert "MEMPALACE_CHROMA_TOKEN" in missing["hint"]
    wrong = m.json("status", expect=14, MEMPALACE_CHROMA_TOKEN="guess")["error"]
    assert "refused our token" in wrong["message"]
    # The right token, from the environment, from config.toml, and from the flag.
    added = m.json(
        "kg", "add", "Harbor", "uses", "MinIO", "--from", "2026-01-15", MEMPALACE_CHROMA_TOKEN=TOKEN
    )
    assert added["created"] is True
    (m.home / "config.toml").write_text(f'chroma_token = "{TOKEN}"\n')
    facts = m.json("kg", "query", "Harbor")
    assert [f["object"] for f in facts["facts"]] == ["MinIO"]
    (m.home / "config.toml").write_text("")
    flagged = m.json("--chroma-token", TOKEN, "kg", "query", "Harbor")
    assert flagged["count"] == 1


def test_reads_are_retried_and_writes_are_not(
    tmp_path: Path, proxy: TokenProxy, embedder: Any
) -> None:
    m = _machine(tmp_path, proxy.url)
    token = {"MEMPALACE_CHROMA_TOKEN": TOKEN}
    m.json("kg", "add", "Harbor", "uses", "MinIO", **token)
    # Two dropped reads in a row: the query still answers.
    proxy.drop("GET", 1)
    proxy.drop("POST", 2)  # a get is a POST in Chroma's API: reads retried through it
    assert m.json("kg", "query", "Harbor", **token)["count"] == 1
    # A write whose request is dropped is reported failed, not retried, not done.
    writes_before = len(proxy.writes())
    proxy.drop("POST", 0)
    failing = _drop_next_write(proxy)
    result = m.run("kg", "add", "Harbor", "uses", "Postgres", "--json", expect=13, **token)
    assert '"created"' not in result.stdout and failing.wait(30)
    assert len(proxy.writes()) == writes_before  # the dropped write was not sent again
    assert m.json("kg", "query", "Harbor", **token)["count"] == 1
    # Run again: it goes through.
    assert m.json("kg", "add", "Harbor", "uses", "Postgres", **token)["created"] is True


def _drop_next_write(proxy: TokenProxy) -> threading.Event:
    """Drop the next `add` request (a write) the proxy sees; the event is set when it was."""
    dropped = threading.Event()
    handler = proxy.server.RequestHandlerClass
    original = handler._handle  # type: ignore[attr-defined]

    def handle(self: Any) -> None:
        if self.command == "POST" and self.path.endswith("/add") and not dropped.is_set():
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            self.close_connection = True
            dropped.set()
            return
        original(self)

    handler.do_POST = handle  # type: ignore[attr-defined]
    return dropped


def _certificates(folder: Path) -> tuple[Path, Path, Path]:
    """A throwaway authority and a certificate for 127.0.0.1 it signed (real openssl)."""
    import subprocess

    ca_key, ca, key, csr, cert = (folder / n for n in ("ca.key", "ca.pem", "k.pem", "r", "c.pem"))
    ext = folder / "ext"
    ext.write_text("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n")
    for cmd in (
        [
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            ca_key,
            "-out",
            ca,
            "-days",
            "2",
            "-subj",
            "/CN=mempalace test CA",
        ],
        [
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            key,
            "-out",
            csr,
            "-subj",
            "/CN=127.0.0.1",
        ],
        [
            "x509",
            "-req",
            "-in",
            csr,
            "-CA",
            ca,
            "-CAkey",
            ca_key,
            "-CAcreateserial",
            "-out",
            cert,
            "-days",
            "2",
            "-extfile",
            ext,
        ],
    ):
        subprocess.run(["openssl", *map(str, cmd)], check=True, capture_output=True)
    return ca, cert, key


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_tls_with_our_own_authority(tmp_path: Path, proxy: TokenProxy, embedder: Any) -> None:
    import ssl

    ca, cert, key = _certificates(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    proxy.server.socket = context.wrap_socket(proxy.server.socket, server_side=True)
    m = _machine(tmp_path, proxy.url.replace("http://", "https://"))
    token = {"MEMPALACE_CHROMA_TOKEN": TOKEN}
    untrusted = m.json("kg", "query", "Harbor", expect=13, **token)["error"]
    assert untrusted["kind"] == "server_unavailable" and "TLS" in untrusted["message"]
    assert "chroma_ca_file" in untrusted["hint"]
    trusted = {**token, "MEMPALACE_CHROMA_CA_FILE": str(ca)}
    assert m.json("kg", "add", "Harbor", "uses", "MinIO", **trusted)["created"] is True
    assert m.json("kg", "query", "Harbor", **trusted)["count"] == 1
    missing = m.json("status", expect=7, MEMPALACE_CHROMA_CA_FILE=str(tmp_path / "nope.pem"))
    assert "CA file" in missing["error"]["message"]
