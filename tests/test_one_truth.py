"""One truth: another program deletes one drawer and adds another straight through chromadb
(the drawer count stays the same), and every reader sees it: a fresh `mempalace search`
(vector-only too), `status --json`, a running `serve-mcp` (real MCP client) and a running
watcher. Embedded store and a real `chroma run` server."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from mempalace_cli.common.config import COLLECTION_NAME
from mempalace_cli.embedders.base import Embedder
from mempalace_cli.storage.catalog import CATALOG_FILE
from mempalace_cli.storage.consistency import SERVER_CHECK_SECONDS
from tests.conftest import NOTES
from tests.test_chroma_server import _server_client, chroma_url  # noqa: F401 (fixture)
from tests.test_mcp_support import McpSession, _session, mempalace_command
from tests.test_watch_support import WatchProcess, cli_env, wait_until

FOREIGN_TEXTS = [
    "The quokka sanctuary opens its night tours on Thursdays after the full moon.",
    "Our sourdough starter is fed with rye flour every morning at seven sharp.",
    "The lighthouse keeper logs every passing tanker in a green leather ledger.",
    "Marmalade from the Seville oranges is bottled on the second weekend of January.",
]
# Round trip of a probe on a server: a long-lived reader sees a change within the bound.
SERVER_BOUND = SERVER_CHECK_SECONDS + 30

FOREIGN_SCRIPT = textwrap.dedent(
    """
    import json, sys, chromadb
    spec = json.loads(sys.argv[1])
    if spec.get("url"):
        from urllib.parse import urlparse
        u = urlparse(spec["url"])
        client = chromadb.HttpClient(host=u.hostname, port=u.port)
    else:
        client = chromadb.PersistentClient(path=spec["palace"])
    col = client.get_collection(spec["collection"])
    before = col.count()
    col.delete(ids=[spec["victim"]])
    col.add(ids=[spec["new_id"]], documents=[spec["text"]], embeddings=[spec["vector"]],
            metadatas=[{"wing": spec["wing"], "room": "general", "source_file": "elsewhere.md"}])
    print(json.dumps({"before": before, "after": col.count()}))
    """
)


class Palace:
    """A mined palace (embedded, or on a Chroma server) and how to reach it from a process."""

    def __init__(self, base: Path, url: str | None) -> None:
        self.base, self.url = base, url
        self.home = base / "home"
        self.home.mkdir()
        if url:
            (self.home / "config.toml").write_text(f'chroma_url = "{url}"\n')
        self.folder = base / "notes"
        shutil.copytree(NOTES / "people", self.folder / "people")
        shutil.copytree(NOTES / "decisions", self.folder / "decisions")
        self.path = base / "palace"
        self.rounds = 0

    def cli(self, *args: str, expect: int = 0) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [*mempalace_command(), "--palace", str(self.path), *args],
            env=cli_env(self.home),
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )
        assert proc.returncode == expect, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        return proc

    def json(self, *args: str) -> Any:
        return json.loads(self.cli(*args, "--json").stdout)

    def drawers(self) -> dict[str, str]:
        """id -> text, read from the catalogue file (read-only, no palace code)."""
        conn = sqlite3.connect(f"file:{self.path / CATALOG_FILE}?mode=ro", uri=True)
        try:
            return dict(conn.execute("SELECT id, text FROM drawers ORDER BY id"))
        finally:
            conn.close()

    def foreign_delete_and_add(self, embedder: Embedder) -> dict[str, str]:
        """Another program: delete one mined drawer, add a new one; the count is unchanged."""
        self.rounds += 1
        victims = sorted(i for i in self.drawers() if "_people_" in i or "_decisions_" in i)
        victim = victims[self.rounds * 3]
        text = FOREIGN_TEXTS[self.rounds - 1]
        spec = {
            "palace": str(self.path),
            "url": self.url,
            "collection": COLLECTION_NAME,
            "victim": victim,
            "victim_text": self.drawers()[victim],
            "new_id": f"drawer_elsewhere_general_{self.rounds:04}",
            "wing": f"elsewhere{self.rounds}",
            "text": text,
            "vector": [float(x) for x in embedder.embed([text])[0]],
        }
        proc = subprocess.run(
            [sys.executable, "-c", FOREIGN_SCRIPT, json.dumps(spec)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        counts = json.loads(proc.stdout)
        assert counts["before"] == counts["after"], counts  # the count cannot tell
        return spec


def search_ids(result: dict[str, Any]) -> list[str]:
    return [r["drawer_id"] for r in result["results"]]


def search(p: Palace, query: str, mode: str, n: int) -> dict[str, Any]:
    """A fresh `mempalace search` process ("--" ends the options: a drawer may start with -)."""
    proc = p.cli("search", "--json", "--mode", mode, "-n", str(n), "--", query)
    return json.loads(proc.stdout)


def assert_fresh_search_sees(p: Palace, change: dict[str, str]) -> None:
    for mode in ("vector", "hybrid"):
        found = search(p, change["text"], mode, 3)
        assert search_ids(found)[0] == change["new_id"], (mode, found)
        old = search(p, change["victim_text"], mode, 10)
        assert change["victim"] not in search_ids(old), mode
    lexical = search(p, change["text"], "lexical", 3)
    assert search_ids(lexical)[0] == change["new_id"]


def assert_status_sees(status: dict[str, Any], change: dict[str, str]) -> None:
    assert status["wings"].get(change["wing"]) == 1, status["wings"]


def mcp_sees(session: McpSession, change: dict[str, str]) -> bool:
    found = session.ok("mempalace_search", {"query": change["text"], "limit": 3})
    old = session.ok("mempalace_search", {"query": change["victim_text"], "limit": 10})
    return bool(
        found["results"]
        and found["results"][0]["drawer_id"] == change["new_id"]
        and change["victim"] not in [r["drawer_id"] for r in old["results"]]
    )


def mcp_stdio(p: Palace) -> Any:
    from mcp.client.stdio import StdioServerParameters, stdio_client

    cmd = mempalace_command()
    env = {"MEMPALACE_HOME": str(p.home), "PATH": os.environ.get("PATH", "")}
    params = StdioServerParameters(
        command=cmd[0], args=[*cmd[1:], "--palace", str(p.path), "serve-mcp"], env=env
    )
    log = p.base / "mcp.log"
    stack = ExitStack()
    errlog = stack.enter_context(log.open("w"))
    session = stack.enter_context(
        _session(stdio_client(params, errlog=errlog), p.path, log, "legacy")
    )
    return stack, session


def run_scenario(p: Palace, embedder: Embedder, bound: float) -> None:
    p.cli("mine", str(p.folder))
    stack, session = mcp_stdio(p)
    watcher: WatchProcess | None = None
    try:
        assert session.ok("mempalace_search", {"query": "who owns the roadmap"})["results"]

        # 1. A fresh `mempalace search` is the first to look (vector-only mode first).
        change = p.foreign_delete_and_add(embedder)
        found = p.cli("search", change["text"], "--mode", "vector", "-n", "3", "--json")
        assert search_ids(json.loads(found.stdout))[0] == change["new_id"]
        assert "repaired" in found.stderr  # never silent
        assert_fresh_search_sees(p, change)
        assert_status_sees(p.json("status"), change)
        wait_until(lambda: mcp_sees(session, change), bound, "the MCP server to see change 1")

        # 2. `status --json` is the first to look; it names what was repaired.
        change = p.foreign_delete_and_add(embedder)
        status = p.json("status")
        assert_status_sees(status, change)
        repair = status["consistency"]["last_repair"]
        assert repair["added"] == 1 and repair["removed"] == 1, repair
        assert repair["ids"]["added"] == [change["new_id"]]
        assert repair["ids"]["removed"] == [change["victim"]]
        assert_fresh_search_sees(p, change)

        # 3. The running MCP server is the first to look.
        change = p.foreign_delete_and_add(embedder)
        wait_until(lambda: mcp_sees(session, change), bound, "the MCP server to see change 3")
        assert_fresh_search_sees(p, change)
        assert_status_sees(p.json("status"), change)

        # 4. A running watcher notices on its own (no file changed) and reports the repair.
        # (Started only now: while it runs, it is the first to notice any change.)
        watcher = WatchProcess(p.home, p.path, p.folder)
        watcher.wait_event("mine")
        change = p.foreign_delete_and_add(embedder)
        event = wait_until(
            lambda: next(
                (
                    e
                    for e in watcher.drain()
                    if e["event"] == "repair" and change["new_id"] in e["ids"]["added"]
                ),
                None,
            ),
            bound + 10,
            "the watcher's repair event",
        )
        assert change["victim"] in event["ids"]["removed"]
        assert_fresh_search_sees(p, change)
        wait_until(lambda: mcp_sees(session, change), bound, "the MCP server to see change 4")
        assert not watcher.errors()
    finally:
        stack.close()
        code = watcher.stop() if watcher is not None else None
    assert code == 0, watcher.stderr() if watcher is not None else ""


@pytest.mark.slow
def test_a_foreign_delete_and_add_is_seen_everywhere_embedded(
    tmp_path: Path, embedder: Embedder
) -> None:
    run_scenario(Palace(tmp_path, None), embedder, bound=30)


@pytest.fixture
def empty_server(chroma_url: str) -> Iterator[str]:  # noqa: F811
    client = _server_client(chroma_url)
    if COLLECTION_NAME in [getattr(c, "name", c) for c in client.list_collections()]:
        client.delete_collection(COLLECTION_NAME)
    yield chroma_url


@pytest.mark.slow
def test_a_foreign_delete_and_add_is_seen_everywhere_on_a_server(
    tmp_path: Path, embedder: Embedder, empty_server: str
) -> None:
    run_scenario(Palace(tmp_path, empty_server), embedder, bound=SERVER_BOUND)


BULK_SCRIPT = textwrap.dedent(
    """
    import sys, chromadb, numpy as np
    col = chromadb.PersistentClient(path=sys.argv[1]).get_collection(sys.argv[2])
    dim = len(col.get(limit=1, include=["embeddings"])["embeddings"][0])  # the palace's model
    rng = np.random.default_rng(7)
    for start in range(0, 1100, 100):
        ids = [f"drawer_far_general_{i:05}" for i in range(start, start + 100)]
        col.add(ids=ids, embeddings=rng.random((100, dim)).astype("float32"),
                documents=[f"Far note {i} about tide tables." for i in range(start, start + 100)],
                metadatas=[{"wing": "far", "room": "general"}] * 100)
    """
)


def test_a_foreign_write_beyond_chromas_log_is_reconciled_in_full(
    tmp_path: Path, embedder: Embedder
) -> None:
    """Chroma purges its log as its vector index persists (every ~1000 writes): a catalogue
    whose recorded head fell out of the log is compared with every drawer instead."""
    p = Palace(tmp_path, None)
    p.cli("mine", str(p.folder / "people"))
    mined = p.json("status")["total_drawers"]
    proc = subprocess.run(
        [sys.executable, "-c", BULK_SCRIPT, str(p.path), COLLECTION_NAME],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    conn = sqlite3.connect(f"file:{p.path / 'chroma.sqlite3'}?mode=ro", uri=True)
    oldest = conn.execute("SELECT min(seq_id) FROM embeddings_queue").fetchone()[0]
    conn.close()
    assert oldest > mined + 1, "Chroma kept its whole log: this test proves nothing"
    status = p.cli("status", "--json")
    data = json.loads(status.stdout)
    assert data["total_drawers"] == mined + 1100 and data["wings"]["far"] == 1100
    repair = data["consistency"]["last_repair"]
    assert (repair["reason"], repair["full"], repair["added"]) == ("log_purged", True, 1100)
    assert repair["removed"] == repair["updated"] == 0
    assert "repaired" in status.stderr
    found = search(p, "Far note 1042 about tide tables.", "lexical", 1)
    assert search_ids(found) == ["drawer_far_general_01042"]
    again = p.cli("status", "--json")  # in step now: nothing more to repair, nothing said
    assert "repaired" not in again.stderr
    assert json.loads(again.stdout)["consistency"]["last_repair"] == repair


UPDATE_SCRIPT = textwrap.dedent(
    """
    import json, sys, chromadb
    from urllib.parse import urlparse
    spec = json.loads(sys.argv[1])
    u = urlparse(spec["url"])
    col = chromadb.HttpClient(host=u.hostname, port=u.port).get_collection(spec["collection"])
    meta = col.get(ids=[spec["victim"]], include=["metadatas"])["metadatas"][0]
    col.update(ids=[spec["victim"]], documents=[spec["text"]], embeddings=[spec["vector"]],
               metadatas=[meta])
    """
)


@pytest.mark.slow
def test_status_verify_finds_an_in_place_update_on_a_server(
    tmp_path: Path, embedder: Embedder, empty_server: str
) -> None:
    """A foreign in-place update keeps the id and the position in Chroma, which no cheap probe
    sees: `status --verify` compares every drawer by content and repairs the index."""
    p = Palace(tmp_path, empty_server)
    p.cli("mine", str(p.folder))
    first = p.cli("status", "--verify")
    assert "the palace index matches it" in first.stdout, first.stdout
    victim = sorted(i for i in p.drawers() if "_people_" in i)[0]
    text = FOREIGN_TEXTS[2]
    spec = {
        "url": empty_server,
        "collection": COLLECTION_NAME,
        "victim": victim,
        "text": text,
        "vector": [float(x) for x in embedder.embed([text])[0]],
    }
    proc = subprocess.run(
        [sys.executable, "-c", UPDATE_SCRIPT, json.dumps(spec)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    status = p.json("status", "--verify")
    verified = status["verified"]
    assert verified["all_matched"] is False
    assert verified["drawers_checked"] == status["total_drawers"]
    repair = verified["repair"]
    assert (repair["reason"], repair["updated"], repair["added"], repair["removed"]) == (
        "verify",
        1,
        0,
        0,
    )
    assert repair["ids"]["updated"] == [victim]
    assert p.drawers()[victim] == text
    for mode in ("lexical", "vector"):
        assert search_ids(search(p, text, mode, 3))[0] == victim, mode
    again = p.json("status", "--verify")["verified"]
    assert again["all_matched"] is True and again["repair"] is None


def test_status_verify_on_an_embedded_palace_in_step(tmp_path: Path) -> None:
    p = Palace(tmp_path, None)
    p.cli("mine", str(p.folder / "people"))
    data = p.json("status", "--verify")
    assert data["verified"]["all_matched"] is True
    assert data["verified"]["drawers_checked"] == data["total_drawers"] > 0
