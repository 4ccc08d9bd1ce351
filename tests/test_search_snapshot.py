"""Search while another process deletes drawers: every hit is a filed drawer with its text,
wing and room (one consistent read of the catalogue per search: candidates, fusion and the
hits' rows), never an empty hit, never an error, in every mode. The other process forgets, one
at a time, the drawer that currently ranks first, so its deletes land among the hits being
read; it stops after DELETES drawers or RACE_SECONDS, whichever comes first, so the race is
bounded on any machine. Run on an embedded palace and on a Chroma server palace (the CI's
`chroma run`, or one started here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mempalace_cli.common.config import resolve_settings
from mempalace_cli.embedders.base import Embedder
from mempalace_cli.service import Palace
from tests.team_support import shared_server, unique_database

QUERY = "harbor crane repair invoice paid"
DRAWERS = 80
DELETES = 60
RACE_SECONDS = 10.0  # the deleter stops then, deletes done or not (the test's bound)
MODES = ("hybrid", "vector", "lexical")  # lexical: the keyword mode

DELETER = """
import sys, time
from mempalace_cli.service import open_palace
palace = open_palace(sys.argv[1])
query, deletes, seconds = sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
modes = ("lexical", "hybrid", "vector")
palace.search(query, mode="vector", limit=1)  # the model loaded before the race starts
print("ready", flush=True)
sys.stdin.readline()
end, done = time.monotonic() + seconds, 0
while done < deletes and time.monotonic() < end:
    hits = palace.search(query, mode=modes[done % 3], limit=1)["results"]
    done += palace.forget(drawer_ids=[hits[0]["drawer_id"]])["removed"]  # mempalace forget
palace.close()
print(done, flush=True)
"""


FORGET_ALL = """
import sys
from mempalace_cli.service import open_palace
palace = open_palace(sys.argv[1])
print(palace.forget(wing="accounts")["removed"])
palace.close()
"""
# How search reads drawers' rows (Catalog.get): the statement that reads the hits' text.
READ_ROWS = "SELECT id, wing, room, source_file, chunk_index, filed_at, text, metadata"


def _text(n: int) -> str:
    return (
        f"Invoice {n:03d}: the harbor crane repair was paid by the port authority "
        f"on day {n % 28 + 1}, batch {n % 7}."
    )


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with shared_server(tmp_path_factory.mktemp("snapshot-chroma")) as url:
        yield url


@pytest.fixture(params=["embedded", "server"])
def where(request: pytest.FixtureRequest, home: Path) -> dict[str, str]:
    """The palace's environment: embedded, or on its own database of a Chroma server."""
    if request.param == "embedded":
        return {}
    url = request.getfixturevalue("server_url")
    return {"MEMPALACE_CHROMA_URL": url, "MEMPALACE_CHROMA_DATABASE": unique_database()}


def _in_another_process(path: Path, home: Path, where: dict[str, str], script: str) -> str:
    """Run `script` on the palace in a separate process (as tests/other_process.py does, with
    the palace's server settings); its stdout."""
    proc = subprocess.run(
        [sys.executable, "-c", script, str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, "MEMPALACE_HOME": str(home), **where},
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip()


def _palace(path: Path, where: dict[str, str]) -> Palace:
    return Palace(
        resolve_settings(
            str(path),
            where.get("MEMPALACE_CHROMA_URL"),
            chroma_database=where.get("MEMPALACE_CHROMA_DATABASE"),
        )
    )


def test_search_never_returns_a_drawer_deleted_mid_search(
    tmp_path: Path, home: Path, embedder: Embedder, where: dict[str, str]
) -> None:
    path = tmp_path / "palace"
    palace = _palace(path, where)
    items = [{"wing": "accounts", "room": "invoices", "content": _text(n)} for n in range(DRAWERS)]
    assert palace.add_drawers(items)["added"] == DRAWERS
    deleter = subprocess.Popen(
        [sys.executable, "-c", DELETER, str(path), QUERY, str(DELETES), str(RACE_SECONDS)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "MEMPALACE_HOME": str(home), **where},
    )
    searched = {mode: 0 for mode in MODES}
    empty: list[tuple[str, dict[str, Any]]] = []
    try:
        assert deleter.stdout is not None and deleter.stdin is not None
        assert deleter.stdout.readline().strip() == "ready", deleter.stderr.read()
        deleter.stdin.write("go\n")
        deleter.stdin.flush()
        while deleter.poll() is None:
            for mode in MODES:
                for hit in palace.search(QUERY, mode=mode, limit=10)["results"]:
                    if not (hit["text"] and hit["wing"] == "accounts" and hit["room"]):
                        empty.append((mode, hit))
                searched[mode] += 1
        assert deleter.wait(timeout=300) == 0, deleter.stderr.read()[-3000:]
        deleted = int(deleter.stdout.read().split()[-1])
    finally:
        if deleter.poll() is None:
            deleter.kill()
            deleter.wait()
    assert not empty, empty[:3]
    assert min(searched.values()) > 0, searched
    assert deleted > 0
    # After the race: exactly the drawers still filed, each with its own text.
    left = {r["drawer_id"]: r for r in palace.list_drawers(limit=100)["drawers"]}
    assert len(left) == DRAWERS - deleted
    for mode in MODES:
        hits = palace.search(QUERY, mode=mode, limit=DRAWERS - deleted)["results"]
        assert {h["drawer_id"] for h in hits} == set(left), mode
        assert all(h["text"].startswith(left[h["drawer_id"]]["preview"][:40]) for h in hits)
    palace.close()


@pytest.mark.parametrize("mode", MODES)
def test_a_delete_landing_between_ranking_and_reading_the_hits(
    tmp_path: Path, home: Path, embedder: Embedder, where: dict[str, str], mode: str
) -> None:
    """The race made exact: the moment this search first reads drawers' rows (after both
    sides ranked), another process forgets every drawer. The search answers from the palace
    as it was when it started reading (whole hits), the next one finds nothing."""
    path = tmp_path / "palace"
    palace = _palace(path, where)
    items = [{"wing": "accounts", "room": "invoices", "content": _text(n)} for n in range(20)]
    palace.add_drawers(items)
    palace.search(QUERY, mode=mode, limit=5)  # warm: what the first search sets up is done
    removed: list[str] = []

    def on_statement(sql: str) -> None:
        if not removed and sql.lstrip().startswith(READ_ROWS):
            removed.append(_in_another_process(path, home, where, FORGET_ALL))

    palace.catalog.conn.set_trace_callback(on_statement)
    try:
        hits = palace.search(QUERY, mode=mode, limit=5)["results"]
    finally:
        palace.catalog.conn.set_trace_callback(None)
    assert removed == ["20"]
    assert len(hits) == 5
    for hit in hits:
        assert hit["text"].startswith("Invoice ") and (hit["wing"], hit["room"]) == (
            "accounts",
            "invoices",
        ), hit
    assert palace.search(QUERY, mode=mode, limit=5)["results"] == []
    palace.close()


ADD_ONE = """
import sys
from mempalace_cli.service import open_palace
palace = open_palace(sys.argv[1])
print(palace.add_drawer("accounts", "invoices", "Invoice 999: the crane's new cable was paid.")[
    "drawer_id"
])
palace.close()
"""


HASH_FILES = """
import hashlib, json, sys
from pathlib import Path
folder = Path(sys.argv[1])
print(json.dumps({
    str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
    for p in sorted(folder.rglob("*"))
    if p.is_file() and not p.name.endswith("-shm")
}))
"""


def _files(folder: Path) -> dict[str, str]:
    """Every file of the palace folder and the hash of its content; SQLite's -shm files
    (shared memory, where readers mark what they read) are left out. Read by another process:
    closing a file this process has SQLite open on would drop this process's locks on it (a
    POSIX rule), and the next process to close the catalogue would think itself its last
    user and fold the write-ahead log into it."""
    out = subprocess.run(
        [sys.executable, "-c", HASH_FILES, str(folder)], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def test_a_search_writes_nothing(tmp_path: Path, home: Path, embedder: Embedder) -> None:
    """The hot read path writes nothing: searches in every mode, in a long-lived process and a
    fresh one, leave every file of an in-step palace as it was, also right after another
    process wrote (writers keep the vector index up to date; a search only reads it)."""
    path = tmp_path / "palace"
    palace = _palace(path, {})
    palace.add_drawers(
        [{"wing": "accounts", "room": "invoices", "content": _text(n)} for n in range(30)]
    )
    for round_ in range(2):
        before = _files(path)
        for mode in MODES:
            for source in ("in-process", "fresh process"):
                if source == "in-process":
                    hits = palace.search(QUERY, mode=mode, limit=5)["results"]
                else:
                    script = (
                        "import sys, json; from mempalace_cli.service import open_palace; "
                        f"print(json.dumps(open_palace(sys.argv[1]).search({QUERY!r}, "
                        f"mode={mode!r}, limit=5)['results']))"
                    )
                    hits = json.loads(_in_another_process(path, home, {}, script))
                assert len(hits) == 5 and all(h["text"] for h in hits), (mode, source)
        after = _files(path)
        changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        assert not changed, (round_, changed)
        if round_ == 0:
            added = _in_another_process(path, home, {}, ADD_ONE)
            top = palace.search("crane cable invoice 999", mode="vector", limit=1)["results"]
            assert top[0]["drawer_id"] == added
    palace.close()
