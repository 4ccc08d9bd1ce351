"""Helpers for the team-palace tests (no tests here): a real `chroma run` on loopback (the one
.ci/run exports, or one started here), and "machines": separate MEMPALACE_HOMEs whose commands
run as separate `mempalace` processes against one server database."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.test_mcp_support import McpSession, _session, free_port, mempalace_command

TEST_URL_ENV = "MEMPALACE_TEST_CHROMA_URL"
RUN_TIMEOUT = 300


def heartbeat(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


@contextmanager
def chroma_server(data: Path) -> Iterator[str]:
    """A `chroma run` of our own on a free loopback port, stopped on exit."""
    exe = shutil.which("chroma", path=str(Path(sys.executable).parent)) or shutil.which("chroma")
    assert exe, "the chroma CLI (shipped with chromadb) is not installed"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    data.mkdir(parents=True, exist_ok=True)
    log_path = data / "server.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [exe, "run", "--path", str(data / "db"), "--host", "127.0.0.1", "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 60
            while not heartbeat(url):
                assert proc.poll() is None, log_path.read_text()[-2000:]
                assert time.monotonic() < deadline, "chroma run did not come up"
                time.sleep(0.2)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@contextmanager
def shared_server(data: Path) -> Iterator[str]:
    """The CI's server when there is one (read by conftest before it isolates the
    environment), else our own."""
    from tests.conftest import _TEST_CHROMA_URL

    url = _TEST_CHROMA_URL or os.environ.get(TEST_URL_ENV, "")
    if url:
        yield url.rstrip("/")
        return
    with chroma_server(data) as url:
        yield url


def unique_database() -> str:
    """Every test gets its own database on the server: no test sees another's palace."""
    return "t_" + uuid.uuid4().hex[:16]


class Machine:
    """One machine of a team: its own MEMPALACE_HOME and palace folder, pointed at the
    server's database through the environment, each command a fresh process."""

    def __init__(self, root: Path, url: str, database: str) -> None:
        self.home = root / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.palace = root / "palace"
        self.url, self.database = url, database

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMPALACE_")}
        env.update(
            MEMPALACE_HOME=str(self.home),
            MEMPALACE_PALACE=str(self.palace),
            MEMPALACE_CHROMA_URL=self.url,
            MEMPALACE_CHROMA_DATABASE=self.database,
            **extra,
        )
        return env

    def run(self, *args: Any, expect: int | None = 0, **extra: str) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            [*mempalace_command(), *map(str, args)],
            env=self.env(**extra),
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=RUN_TIMEOUT,
        )
        if expect is not None:
            assert proc.returncode == expect, (
                f"mempalace {' '.join(map(str, args))}: exit {proc.returncode} != {expect}\n"
                f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
            )
        return proc

    def json(self, *args: Any, expect: int | None = 0, **extra: str) -> Any:
        return json.loads(self.run(*args, "--json", expect=expect, **extra).stdout)

    @contextmanager
    def mcp(self, log: Path) -> Iterator[McpSession]:
        """`mempalace serve-mcp` (stdio) on this machine, driven by the SDK's client."""
        from mcp.client.stdio import StdioServerParameters, stdio_client

        cmd = mempalace_command()
        env = {k: v for k, v in self.env().items() if k.startswith("MEMPALACE_")}
        params = StdioServerParameters(
            command=cmd[0], args=[*cmd[1:], "serve-mcp"], env={**env, "PATH": os.environ["PATH"]}
        )
        with (
            log.open("w") as errlog,
            _session(stdio_client(params, errlog=errlog), self.palace, log, mode="legacy") as s,
        ):
            yield s


def server_drawer_ids(url: str, database: str) -> list[str]:
    """Every drawer id on the server, as Chroma lists them (duplicates would show)."""
    from mempalace_cli.common.config import COLLECTION_NAME
    from mempalace_cli.storage.chroma_server import ServerOptions, connect

    client = connect(ServerOptions(url=url, database=database))
    col = client.get_collection(COLLECTION_NAME, embedding_function=None)
    ids: list[str] = []
    while True:
        page = col.get(limit=1000, offset=len(ids), include=[])
        if not page["ids"]:
            return ids
        ids += page["ids"]
