"""`mempalace migrate`: a palace through a real `chroma run` and back, interrupted and resumed,
and a MemPalace 3.x palace moved to the server."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mempalace_cli.common.config import resolve_settings
from mempalace_cli.embedders.base import MODEL_NAME, get_embedder
from mempalace_cli.memory.kg import KG_FILE, KnowledgeGraph
from mempalace_cli.service import Palace
from mempalace_cli.service.migration import VECTOR_TOLERANCE
from mempalace_cli.storage.catalog import CATALOG_FILE
from tests.conftest import NOTES
from tests.team_support import shared_server, unique_database
from tests.test_mcp_support import mempalace_command


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with shared_server(tmp_path_factory.mktemp("migrate-chroma")) as url:
        yield url


def _env(home: Path, database: str, **extra: str) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMPALACE_")}
    env.update(MEMPALACE_HOME=str(home), MEMPALACE_CHROMA_DATABASE=database, **extra)
    return env


def _run(home: Path, database: str, *args: Any, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*mempalace_command(), *map(str, args)],
        env=_env(home, database, **extra),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=600,
    )


def _ok(home: Path, database: str, *args: Any, **extra: str) -> Any:
    proc = _run(home, database, *args, "--json", **extra)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return json.loads(proc.stdout)


def _drawers(palace: Path) -> dict[str, tuple[str, dict[str, Any], Any]]:
    """Every drawer of an embedded palace: id -> (text, metadata, vector)."""
    owner = Palace(resolve_settings(str(palace)))  # the store with the palace's model record
    store = owner.store
    out = {}
    for page in store.iter_all(("documents", "metadatas", "embeddings")):
        for i, d, m, v in zip(
            page["ids"], page["documents"], page["metadatas"], page["embeddings"], strict=True
        ):
            out[i] = (d, m, np.asarray(v, dtype=np.float32))
    store.reset_handle()
    owner.close()
    return out


def _facts(palace: Path) -> list[tuple]:
    kg = KnowledgeGraph(palace)
    try:
        return sorted((r.fact.id, r.fact, r.subject_type, r.object_type) for r in kg.export_facts())
    finally:
        kg.close()


def _fingerprint(palace: Path) -> dict[str, Any]:
    """The source's files byte for byte, except Chroma's own file (opening it to read bumps
    SQLite's change counter in its header): its drawers are compared by content."""
    files = {
        name: (palace / name).read_bytes()
        for name in (KG_FILE, CATALOG_FILE)
        if (palace / name).exists()
    }
    drawers = {i: (t, m, v.tobytes()) for i, (t, m, v) in _drawers(palace).items()}
    return {"files": files, "drawers": drawers}


def test_round_trip_through_the_server_keeps_everything(
    server_url: str, tmp_path: Path, embedder: Any
) -> None:
    home, database = tmp_path / "home", unique_database()
    home.mkdir()
    source = tmp_path / "source"
    folder = tmp_path / "notes"
    shutil.copytree(NOTES / "decisions", folder)
    _ok(home, database, "--palace", source, "mine", folder)
    _ok(
        home,
        database,
        "--palace",
        source,
        "kg",
        "add",
        "Harbor",
        "uses",
        "MinIO",
        "--from",
        "2026-01-15",
        "--subject-type",
        "project",
        "--source-file",
        "adr-0002.md",
    )
    _ok(
        home,
        database,
        "--palace",
        source,
        "kg",
        "add",
        "Harbor",
        "uses",
        "NFS",
        "--from",
        "2025-01-01",
        "--to",
        "2026-01-15",
    )
    _ok(home, database, "--palace", source, "diary", "write", "claude", "Moved blobs to MinIO.")
    (home / "identity.txt").write_text("I am the Harbor team's memory.\n")
    before = _fingerprint(source)

    up = _ok(home, database, "--palace", source, "migrate", "--to", server_url, "--batch", "7")
    assert up["drawers"]["copied"] == up["drawers"]["total"] > 7
    assert up["facts"] == {"total": 2, "copied": 2}
    assert _fingerprint(source) == before  # the source was only read

    back = tmp_path / "back"
    home2 = tmp_path / "home2"
    home2.mkdir()
    down = _ok(home2, database, "--palace", back, "migrate", "--from", server_url)
    assert down["verified"]["drawers"]["target"] == up["verified"]["drawers"]["source"]

    src, dst = _drawers(source), _drawers(back)
    assert sorted(src) == sorted(dst)
    for drawer_id, (text, meta, vec) in src.items():
        assert dst[drawer_id][0] == text and dst[drawer_id][1] == meta
        # Chroma re-normalises cosine vectors: equal up to the last bit of a float32.
        assert np.max(np.abs(dst[drawer_id][2] - vec)) <= VECTOR_TOLERANCE
    assert _facts(back) == _facts(source)
    assert (home2 / "identity.txt").read_text() == "I am the Harbor team's memory.\n"

    # The copy is a working palace: keyword search, facts as of a date, the diary.
    hits = _ok(home2, database, "--palace", back, "search", "MinIO object storage")
    assert hits["results"] and "MinIO" in hits["results"][0]["text"]
    then = _ok(home2, database, "--palace", back, "kg", "query", "Harbor", "--as-of", "2025-06-01")
    assert [f["object"] for f in then["facts"]] == ["NFS"]
    diary = _ok(home2, database, "--palace", back, "diary", "read", "claude")
    assert diary["entries"][0]["content"] == "Moved blobs to MinIO."

    # The server palace itself answers too (another machine pointed at it).
    home3 = tmp_path / "home3"
    home3.mkdir()
    remote = ("--palace", tmp_path / "p3", "--chroma-url", server_url)
    woke = _ok(home3, database, *remote, "wake-up")
    assert "Harbor team's memory" in json.dumps(woke)


def test_migrate_resumes_after_being_killed_half_way(
    server_url: str, tmp_path: Path, embedder: Any
) -> None:
    home, database = tmp_path / "home", unique_database()
    home.mkdir()
    source = tmp_path / "source"
    folder = tmp_path / "notes"
    shutil.copytree(NOTES / "people", folder)
    mined = _ok(home, database, "--palace", source, "mine", folder)
    total = mined["drawers"]["added"]
    assert total > 20
    killed = _run(
        home,
        database,
        "--palace",
        source,
        "migrate",
        "--to",
        server_url,
        "--batch",
        "5",
        MEMPALACE_TEST_CRASH_AT="migrate_page:2",
    )
    assert killed.returncode == -9, killed.stderr  # SIGKILL after the second page
    resumed = _ok(home, database, "--palace", source, "migrate", "--to", server_url, "--batch", "5")
    assert resumed["drawers"]["already_there"] >= 10
    assert resumed["drawers"]["copied"] == total - resumed["drawers"]["already_there"]
    verified = resumed["verified"]["drawers"]
    assert verified["source"] == verified["target"] and verified["target"]["count"] == total


def _mempalace3_palace(base: Path) -> tuple[Path, Path]:
    """A palace as MemPalace 3.x leaves it: its Chroma collection (default embedding function
    registered) in the palace folder, and its knowledge graph file elsewhere, with its own
    column names (source_closet, extracted_at)."""
    import chromadb

    palace = base / "their_palace"
    client = chromadb.PersistentClient(path=str(palace))
    col = client.get_or_create_collection("mempalace_drawers", metadata={"hnsw:space": "cosine"})
    texts = [
        "We picked Postgres because we need row level locking for the job queue.",
        "Sarah prefers written async updates over meetings.",
    ]
    col.add(
        ids=["drawer_proj_decisions_0", "drawer_proj_people_1"],
        # MemPalace 3.x embeds with all-MiniLM-L6-v2 (384-d), not with our default model.
        embeddings=get_embedder(MODEL_NAME).embed(texts).tolist(),
        documents=texts,
        metadatas=[
            {"wing": "proj", "room": room, "source_file": f"/notes/{i}.md", "chunk_index": 0}
            for i, room in enumerate(["decisions", "people"])
        ],
    )
    del col, client
    kg = base / "knowledge_graph.sqlite3"
    conn = sqlite3.connect(kg)
    conn.executescript(
        """
        CREATE TABLE entities (id TEXT PRIMARY KEY, name TEXT NOT NULL, type TEXT DEFAULT
            'unknown', properties TEXT DEFAULT '{}', created_at TEXT DEFAULT CURRENT_TIMESTAMP);
        CREATE TABLE triples (id TEXT PRIMARY KEY, subject TEXT NOT NULL, predicate TEXT NOT
            NULL, object TEXT NOT NULL, valid_from TEXT, valid_to TEXT, confidence REAL DEFAULT
            1.0, source_closet TEXT, source_file TEXT, extracted_at TEXT DEFAULT
            CURRENT_TIMESTAMP);
        INSERT INTO entities(id, name, type) VALUES ('sarah', 'Sarah', 'person'),
            ('acme', 'Acme', 'unknown');
        INSERT INTO triples(id, subject, predicate, object, valid_from, source_closet,
            extracted_at) VALUES ('t_sarah_works_at_acme', 'sarah', 'works_at', 'acme',
            '2025-03-01', 'drawer_proj_people_1', '2026-01-05 10:00:00');
        """
    )
    conn.commit()
    conn.close()
    return palace, kg


def test_a_mempalace_3_palace_moves_to_the_server(
    server_url: str, tmp_path: Path, embedder: Any
) -> None:
    home, database = tmp_path / "home", unique_database()
    home.mkdir()
    palace, kg = _mempalace3_palace(tmp_path)
    moved = _ok(home, database, "--palace", palace, "migrate", "--to", server_url, "--kg", kg)
    assert moved["drawers"]["total"] == 2 and moved["facts"]["copied"] == 1
    remote = ("--palace", tmp_path / "desk", "--chroma-url", server_url)
    hits = _ok(home, database, *remote, "search", "how does Sarah like to get updates")
    assert hits["results"][0]["drawer_id"] == "drawer_proj_people_1"
    facts = _ok(home, database, *remote, "kg", "query", "Sarah", "--as-of", "2025-06-01")
    assert [(f["object"], f["source_drawer_id"]) for f in facts["facts"]] == [
        ("Acme", "drawer_proj_people_1")
    ]


def test_migrate_needs_exactly_one_direction(tmp_path: Path, cli_json: Any) -> None:
    error = cli_json("--palace", tmp_path / "p", "migrate", expect=2)
    assert error["error"]["kind"] == "invalid_input" and "--to URL" in error["error"]["message"]


def test_settings_carry_the_server_options(tmp_path: Path, home: Path, monkeypatch: Any) -> None:
    (home / "config.toml").write_text(
        'chroma_url = "https://chroma.example:8443"\nchroma_timeout_seconds = 3\n'
        'chroma_database = "team"\n'
    )
    monkeypatch.setenv("MEMPALACE_CHROMA_TOKEN", "s3cret")
    settings = resolve_settings(str(tmp_path / "p"))
    assert settings.chroma_token == "s3cret" and settings.chroma_timeout == 3.0
    assert settings.chroma_database == "team"
    assert "s3cret" not in repr(settings)  # the token never shows in a repr or a log line
    flagged = resolve_settings(str(tmp_path / "p"), chroma_token="flag", chroma_database="x")
    assert flagged.chroma_token == "flag" and flagged.chroma_database == "x"


def test_migrating_a_palace_that_is_not_there_creates_nothing(
    tmp_path: Path, server_url: str
) -> None:
    home, database = tmp_path / "home", unique_database()
    home.mkdir()
    missing = tmp_path / "no-such-palace"
    proc = _run(home, database, "--palace", missing, "migrate", "--to", server_url, "--json")
    assert proc.returncode == 4, proc.stderr
    assert json.loads(proc.stdout)["error"]["kind"] == "not_found"
    assert not missing.exists()
