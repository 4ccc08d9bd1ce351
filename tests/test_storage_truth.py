"""Storage-level silent wrongs (issue 26), each against real components:

- a full reconcile of a team palace while another writer deletes drawers keeps every drawer
  the server still holds (it reads by id, not by an offset that a delete shifts);
- `migrate` from a palace folder whose name holds `#` and `?` copies every fact and creates
  nothing beside the folder (SQLite URIs are quoted, in one place);
- `status` and `search` on a palace another tool owns (MemPalace 3.11's shape) write nothing
  into its folder: our index lives in the cache.

The server tests use a real `chroma run` (.ci/run's, or one started here)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mempalace_cli.common.config import COLLECTION_NAME, resolve_settings
from mempalace_cli.service import Palace
from mempalace_cli.storage.chroma_server import ServerOptions, connect
from mempalace_cli.storage.sqlite_db import connect_read_only, sqlite_uri
from tests.team_support import shared_server, unique_database
from tests.test_mcp_support import mempalace_command


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with shared_server(tmp_path_factory.mktemp("storage-truth-chroma")) as url:
        yield url


def _run(home: Path, *args: Any, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMPALACE_")}
    return subprocess.run(
        [*mempalace_command(), *map(str, args)],
        env={**base, "MEMPALACE_HOME": str(home), **env},
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=600,
    )


def _ok(home: Path, *args: Any, **env: str) -> Any:
    proc = _run(home, *args, "--json", **env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return json.loads(proc.stdout)


def _tree(folder: Path) -> list[str]:
    """Every path under `folder` (relative), files and folders."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


# -- 1. a reconcile while another writer deletes ------------------------------------------------
def test_a_reconcile_while_another_writer_deletes_keeps_every_drawer_the_server_holds(
    server_url: str, tmp_path: Path, home: Path, embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Machine b mirrors a 1,100-drawer team palace for the first time (a full reconcile).
    While it reads, another program deletes the ten oldest drawers. Read by offset, the rows
    behind the read position shift down by ten, ten drawers the server still holds are never
    read and b's catalogue drops them (and, the count then agreeing, records that it is in
    step). Read by id, every drawer the server still holds is in b's catalogue, and the next
    check drops the ten the other program deleted."""
    from chromadb.api.models.Collection import Collection

    database = unique_database()
    a = Palace(resolve_settings(str(tmp_path / "a"), server_url, chroma_database=database))
    b = Palace(resolve_settings(str(tmp_path / "b"), server_url, chroma_database=database))
    try:
        added = a.add_drawers(
            [
                {"wing": "ops", "room": "runbooks", "content": f"Runbook {n}: rotate key k{n}."}
                for n in range(1100)
            ]
        )
        assert added["added"] == 1100
        other = connect(ServerOptions(url=server_url, database=database))
        foreign = other.get_collection(COLLECTION_NAME, embedding_function=None)
        oldest = list(foreign.get(limit=10, offset=0, include=[])["ids"])

        # The other program deletes at the moment b has read its first drawers' content: a
        # wrapper around the real Chroma call picks the moment, the delete is a real one.
        real_get = Collection.get
        armed = [True]

        def get(self: Any, *args: Any, **kwargs: Any) -> Any:
            got = real_get(self, *args, **kwargs)
            include = kwargs.get("include") or []
            if armed[0] and self.name == COLLECTION_NAME and "documents" in include:
                armed[0] = False
                foreign.delete(ids=oldest)
            return got

        monkeypatch.setattr(Collection, "get", get)
        b.create()
        b.sync()
        monkeypatch.setattr(Collection, "get", real_get)
        assert not armed[0], "the other program's delete never ran"

        on_server = set(foreign.get(include=[])["ids"])
        assert len(on_server) == 1090
        assert on_server - b.catalog.all_ids() == set()  # no drawer the server holds was lost
        hits = b.search("Runbook 1005 rotate key k1005", mode="lexical")["results"]
        assert hits and hits[0]["text"] == "Runbook 1005: rotate key k1005."

        b.consistency._server_checked_at = None  # the probe's interval is over (no sleep)
        b.sync()
        assert b.catalog.all_ids() == on_server  # the ten deleted ones are gone too
        assert b.status()["total_drawers"] == 1090
    finally:
        a.close()
        b.close()


# -- 2. SQLite URIs of paths with `#` and `?` ---------------------------------------------------
def _notes(base: Path) -> Path:
    folder = base / "notes"
    folder.mkdir()
    (folder / "db.md").write_text("# Database\n\nProduction runs Postgres 16 since January.\n")
    return folder


def test_a_read_only_sqlite_open_of_a_folder_named_a_hash_b_question_c(tmp_path: Path) -> None:
    folder = tmp_path / "a#b?c"
    folder.mkdir()
    path = folder / "facts.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x)")
        conn.execute("INSERT INTO t VALUES (42)")
    conn.close()
    before = _tree(tmp_path)
    assert "%23" in sqlite_uri(path, mode="ro") and "%3F" in sqlite_uri(path, mode="ro")
    ro = connect_read_only(path)
    try:
        assert ro.execute("SELECT x FROM t").fetchall() == [(42,)]
        with pytest.raises(sqlite3.OperationalError):
            ro.execute("INSERT INTO t VALUES (1)")  # read-only, as asked
    finally:
        ro.close()
    with pytest.raises(sqlite3.OperationalError):
        connect_read_only(folder / "missing.sqlite3").execute("SELECT 1")
    assert _tree(tmp_path) == before  # no stray file (`a`), nothing created


def test_migrate_from_a_folder_named_a_hash_b_question_c_copies_every_fact(
    server_url: str, tmp_path: Path, embedder: Any
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    database = unique_database()
    palace = tmp_path / "a#b?c"
    env = {"MEMPALACE_CHROMA_DATABASE": database}
    _ok(home, "--palace", palace, "mine", _notes(tmp_path))
    _ok(home, "--palace", palace, "kg", "add", "Harbor", "uses", "Postgres", "--from", "2025-01-01")
    _ok(home, "--palace", palace, "kg", "add", "Harbor", "uses", "MinIO", "--from", "2026-01-15")
    before = _tree(tmp_path)

    moved = _ok(home, "--palace", palace, "migrate", "--to", server_url, **env)
    assert moved["facts"] == {"total": 2, "copied": 2}
    assert moved["verified"]["facts"]["source"]["count"] == 2
    assert moved["verified"]["facts"]["target"]["count"] == 2
    assert moved["drawers"]["total"] == 1
    assert not (tmp_path / "a").exists()  # no stray empty file where the URI was cut
    new = [p for p in _tree(tmp_path) if p not in before and not p.startswith("home")]
    # (a read-only SQLite reader of a WAL file may leave its -wal/-shm companions)
    assert [p for p in new if not p.endswith(("-wal", "-shm"))] == []

    desk = ("--palace", tmp_path / "desk", "--chroma-url", server_url)
    facts = _ok(home, *desk, "kg", "query", "Harbor", "--as-of", "2026-02-01", **env)["facts"]
    assert sorted(f["object"] for f in facts) == ["MinIO", "Postgres"]


def test_migrate_refuses_a_knowledge_graph_file_without_facts_table(
    server_url: str, tmp_path: Path, embedder: Any
) -> None:
    """A file that is not a knowledge graph is named, never read as "0 facts"."""
    home = tmp_path / "home"
    home.mkdir()
    palace = tmp_path / "palace"
    _ok(home, "--palace", palace, "mine", _notes(tmp_path))
    other = tmp_path / "notes.sqlite3"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE notes (x)")
    conn.close()
    proc = _run(
        home,
        "--palace",
        palace,
        "migrate",
        "--to",
        server_url,
        "--kg",
        other,
        "--json",
        MEMPALACE_CHROMA_DATABASE=unique_database(),
    )
    assert proc.returncode != 0, proc.stdout
    error = json.loads(proc.stdout)["error"]
    assert str(other) in error["message"] and "no facts table" in error["message"]
    assert "--kg" in (error["hint"] or "")


# -- 3. a palace another tool owns -------------------------------------------------------------
MEMPALACE_TEXTS = [
    "We picked Postgres because we need row level locking for the job queue.",
    "Sarah prefers written async updates over meetings.",
    "The deploy pipeline runs on GitHub Actions with a manual approval gate.",
]


def _mempalace_311_palace(palace: Path) -> None:
    """A palace as MemPalace 3.11 leaves it: its Chroma store in the folder (the collection
    `mempalace_drawers` with Chroma's default embedding function registered, MiniLM vectors,
    MemPalace's metadata keys) and nothing of ours."""
    import chromadb

    from mempalace_cli.embedders.base import get_embedder

    client = chromadb.PersistentClient(path=str(palace))
    col = client.get_or_create_collection("mempalace_drawers", metadata={"hnsw:space": "cosine"})
    col.add(
        ids=[f"drawer_proj_general_{i}" for i in range(3)],
        embeddings=get_embedder("all-MiniLM-L6-v2").embed(MEMPALACE_TEXTS).tolist(),
        documents=MEMPALACE_TEXTS,
        metadatas=[
            {
                "wing": "proj",
                "room": room,
                "source_file": f"/notes/{i}.md",
                "chunk_index": 0,
                "added_by": "mempalace",
                "filed_at": "2026-01-05T10:00:00",
            }
            for i, room in enumerate(["decisions", "people", "ops"])
        ],
    )
    del col, client


def test_reading_a_mempalace_311_palace_writes_nothing_into_its_folder(
    tmp_path: Path, embedder: Any
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    palace = tmp_path / "their_palace"
    _mempalace_311_palace(palace)
    before = _tree(palace)

    first = _run(home, "--palace", palace, "status")
    assert first.returncode == 0, first.stderr
    assert "3 drawers" in first.stdout
    assert "Indexed 3 drawers" in first.stderr and "repaired" not in first.stderr
    assert "belongs to another tool: no files of ours were written" in first.stderr
    assert _tree(palace) == before

    for mode in ("hybrid", "vector", "lexical"):
        query = "how does Sarah like updates"
        hits = _ok(home, "--palace", palace, "search", query, "--mode", mode)
        assert hits["results"][0]["drawer_id"] == "drawer_proj_general_1", mode
    status = _run(home, "--palace", palace, "status", "--json")
    assert status.returncode == 0 and status.stderr == ""  # indexed once, then in step
    assert json.loads(status.stdout)["total_drawers"] == 3
    assert _tree(palace) == before  # no catalogue, vector index or lock in their folder

    # Our index of their palace is in the cache, and follows their writes.
    cached = list((home / "cache" / "palaces").glob("their_palace-*/mempalace_index.sqlite3"))
    assert len(cached) == 1
    import chromadb

    from mempalace_cli.embedders.base import get_embedder

    client = chromadb.PersistentClient(path=str(palace))
    text = "Backups of the job queue database run nightly at 02:00."
    client.get_collection("mempalace_drawers").add(
        ids=["drawer_proj_general_3"],
        embeddings=get_embedder("all-MiniLM-L6-v2").embed([text]).tolist(),
        documents=[text],
        metadatas=[{"wing": "proj", "room": "ops", "source_file": "/notes/3.md"}],
    )
    del client
    after = _tree(palace)
    hits = _ok(home, "--palace", palace, "search", "nightly backups", "--mode", "lexical")
    assert hits["results"][0]["drawer_id"] == "drawer_proj_general_3"
    assert _ok(home, "--palace", palace, "status")["total_drawers"] == 4
    assert _tree(palace) == after


def test_our_own_palace_keeps_its_index_in_its_folder(tmp_path: Path, embedder: Any) -> None:
    """A palace this tool made is ours even with its catalogue moved aside: rebuilt in place."""
    home = tmp_path / "home"
    home.mkdir()
    palace = tmp_path / "palace"
    mined = _ok(home, "--palace", palace, "mine", _notes(tmp_path))
    assert (palace / "mempalace_index.sqlite3").is_file()
    for name in ("mempalace_index.sqlite3", "mempalace_index.sqlite3-wal"):
        if (palace / name).exists():
            (palace / name).rename(palace / f"{name}.bad")
    (palace / "mempalace_index.sqlite3-shm").unlink(missing_ok=True)
    status = _ok(home, "--palace", palace, "status")
    assert status["total_drawers"] == mined["drawers"]["added"]
    assert (palace / "mempalace_index.sqlite3").is_file()
    assert not (home / "cache" / "palaces").exists()
