"""The Chroma server backend against a real `chroma run` on loopback.

`.ci/run` starts one and exports MEMPALACE_TEST_CHROMA_URL; without it this module starts its
own, so plain `pytest` runs these tests too."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mempalace_cli.common.config import COLLECTION_NAME, resolve_settings
from mempalace_cli.service import Palace
from mempalace_cli.storage.consistency import SERVER_CHECK_SECONDS
from tests.conftest import NOTES
from tests.test_watch_support import wait_until


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _up(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def chroma_url(tmp_path_factory: pytest.TempPathFactory, test_chroma_url: str) -> Iterator[str]:
    if test_chroma_url:  # conftest reads MEMPALACE_TEST_CHROMA_URL before clearing MEMPALACE_*
        yield test_chroma_url
        return
    exe = shutil.which("chroma", path=str(Path(sys.executable).parent)) or shutil.which("chroma")
    assert exe, "the chroma CLI (shipped with chromadb) is not installed"
    data = tmp_path_factory.mktemp("chroma-server")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = (data / "server.log").open("w")
    proc = subprocess.Popen(
        [exe, "run", "--path", str(data / "db"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not _up(url):
            assert proc.poll() is None, (data / "server.log").read_text()[-2000:]
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
        log.close()


def _server_client(url: str) -> Any:
    from urllib.parse import urlparse

    import chromadb

    parts = urlparse(url)
    return chromadb.HttpClient(host=parts.hostname, port=parts.port)


@pytest.fixture
def server(chroma_url: str) -> str:
    """The server, with no drawer collection (each test starts from an empty one)."""
    client = _server_client(chroma_url)
    if COLLECTION_NAME in [getattr(c, "name", c) for c in client.list_collections()]:
        client.delete_collection(COLLECTION_NAME)
    return chroma_url


def _palace(path: Path, url: str) -> Palace:
    return Palace(resolve_settings(str(path), url))


def test_mine_search_status_against_a_server(
    server: str, tmp_path: Path, home: Path, cli_json: Any
) -> None:
    # The server path, with the model the similarity bar below was set for (MemPalace's); the
    # default model's miss on this query is recorded in test_multilingual.py.
    (home / "config.toml").write_text('embedding_model = "all-MiniLM-L6-v2"\n')
    folder = tmp_path / "notes"
    shutil.copytree(NOTES / "people", folder)
    palace = tmp_path / "palace"
    report = cli_json("--palace", palace, "--chroma-url", server, "mine", folder)
    assert report["drawers"]["added"] > 0
    status = cli_json("--palace", palace, "--chroma-url", server, "status")
    assert status["store"] == server and status["total_drawers"] == report["drawers"]["added"]
    # Drawers live on the server; the palace folder keeps the catalogue only.
    assert not (palace / "chroma.sqlite3").exists()
    assert (palace / "mempalace_index.sqlite3").exists()
    col = _server_client(server).get_collection(COLLECTION_NAME)
    assert col.count() == status["total_drawers"]
    hits = cli_json(
        "--palace",
        palace,
        "--chroma-url",
        server,
        "search",
        "who prefers async updates",
        "--mode",
        "vector",
    )
    assert hits["results"] and hits["results"][0]["similarity"] > 0.3
    again = cli_json("--palace", palace, "--chroma-url", server, "mine", folder)
    assert again["drawers"]["added"] == 0 and again["files"]["unchanged"] > 0


def test_add_and_delete_through_the_env_var(
    server: str, tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch, embedder: Any
):
    monkeypatch.setenv("MEMPALACE_CHROMA_URL", server)
    p = Palace(resolve_settings(str(tmp_path / "palace")))
    try:
        assert p.settings.chroma_url == server
        added = p.add_drawer("ops", "deploys", "Deploys freeze every Friday after 3pm.")
        assert added["success"]
        hits = p.search("when are deploys frozen", limit=1)["results"]
        assert hits[0]["drawer_id"] == added["drawer_id"]
        assert p.delete_drawer(added["drawer_id"])["success"]
        assert p.status()["total_drawers"] == 0
        assert _server_client(server).get_collection(COLLECTION_NAME).count() == 0
    finally:
        p.close()


def test_a_second_machine_sees_the_same_drawers(
    server: str, tmp_path: Path, home: Path, embedder: Any
) -> None:
    """Two palace folders (two machines) on one server: the second rebuilds its catalogue
    from the server, so lexical and vector search both work there."""
    (home / "config.toml").write_text(f'chroma_url = "{server}"\n')
    first = Palace(resolve_settings(str(tmp_path / "laptop")))
    second = Palace(resolve_settings(str(tmp_path / "desktop")))
    try:
        assert first.settings.chroma_url == server  # from config.toml
        first.add_drawer("ops", "oncall", "The pager rotation changes on Mondays at 9am.")
        second.create()
        assert second.status()["total_drawers"] == 1
        hits = second.search("pager rotation", mode="lexical")["results"]
        assert hits and hits[0]["wing"] == "ops"
        first.add_drawer("ops", "oncall", "Escalate to the platform lead after 30 minutes.")
        # A long-lived palace re-checks the server at most every SERVER_CHECK_SECONDS.
        started = time.monotonic()
        wait_until(
            lambda: second.search("escalate platform lead", mode="lexical")["results"],
            timeout=SERVER_CHECK_SECONDS + 10,
            what="the second machine to see the new drawer",
        )
        assert time.monotonic() - started < SERVER_CHECK_SECONDS + 10
    finally:
        first.close()
        second.close()


def test_a_collection_from_another_model_is_refused(
    server: str, tmp_path: Path, cli_json: Any
) -> None:
    client = _server_client(server)
    client.create_collection(
        COLLECTION_NAME,
        embedding_function=None,
        metadata={"hnsw:space": "cosine", "embedding_model": "text-embedding-3-small"},
    )
    error = cli_json("--palace", tmp_path / "p", "--chroma-url", server, "status", expect=6)
    assert "text-embedding-3-small" in error["error"]["message"]
    assert error["error"]["kind"] == "incompatible"


def test_a_collection_of_other_dimensions_is_refused(
    server: str, tmp_path: Path, cli_json: Any
) -> None:
    col = _server_client(server).create_collection(
        COLLECTION_NAME, embedding_function=None, metadata={"hnsw:space": "cosine"}
    )
    col.add(ids=["x"], embeddings=[[0.1] * 768], documents=["from another tool"])
    folder = tmp_path / "notes"
    shutil.copytree(NOTES / "people", folder)
    error = cli_json("--palace", tmp_path / "p", "--chroma-url", server, "mine", folder, expect=6)
    assert "768-d" in error["error"]["message"]
    assert col.count() == 1  # nothing was written


def test_an_unreachable_server_is_a_clear_error(tmp_path: Path, cli: Any) -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    result = cli("--palace", tmp_path / "p", "--chroma-url", url, "status", expect=None)
    assert result.exit_code != 0
    assert f"Could not reach the Chroma server at {url}" in result.stderr
    assert "chroma run" in result.stderr and "Traceback" not in result.stderr
