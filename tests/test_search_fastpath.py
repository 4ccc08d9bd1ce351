"""A CLI search answers from the catalogue alone (no chromadb import) when the catalogue is known
to mirror the drawer store, gives the same results as the Chroma path, and notices a store
changed behind its back (MemPalace writing, a catalogue from before vectors were mirrored)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from mempalace_cli.embedders.base import Embedder
from mempalace_cli.service import open_palace
from mempalace_cli.storage.catalog import CATALOG_FILE

QUERIES = [
    ("backup schedule", [], "hybrid"),
    ("who owns the roadmap", [], "hybrid"),
    ("database migration", ["--wing", "notes"], "vector"),
]


@pytest.fixture
def palace(mined_notes: dict, tmp_path: Path) -> Path:
    """A private copy of the mined notes palace, in step and stamped (as after a mine)."""
    dest = tmp_path / "palace"
    shutil.copytree(mined_notes["palace"], dest)
    p = open_palace(str(dest))
    p.sync(restamp=True)  # other tests may have opened the store since: re-stamp it
    p.close()
    return dest


def run_search(palace: Path, home: Path, *args: str) -> tuple[dict[str, Any], bool]:
    """`mempalace search ... --json` in a fresh process: (result, whether chromadb was imported)."""
    proc = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "mempalace_cli",
            "--palace",
            str(palace),
            "search",
            *args,
            "--json",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "MEMPALACE_HOME": str(home)},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    # Any chromadb module in -X importtime's report (the package's own line is not always
    # printed when a submodule's import is what loads it).
    names = [line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()]
    imported = any(n == "chromadb" or n.startswith("chromadb.") for n in names)
    return json.loads(proc.stdout), imported


def summary(result: dict[str, Any]) -> list[tuple]:
    return [(r["drawer_id"], r["matched_by"], r["text"]) for r in result["results"]]


def similarities(result: dict[str, Any]) -> list[float]:
    return [r["similarity"] for r in result["results"]]


def assert_same_hits(fast: dict[str, Any], expected: dict[str, Any], query: str) -> None:
    """The same hits in the same order, found by the same sides, with the same similarity up
    to the last of its three decimals: the catalogue's exact float32 cosine and Chroma's
    distance (its own SIMD arithmetic) may round to neighbouring thousandths."""
    assert summary(fast) == summary(expected), query
    for got, want in zip(similarities(fast), similarities(expected), strict=True):
        assert abs(got - want) <= 0.0011, (query, similarities(fast), similarities(expected))


def test_cli_search_skips_chromadb_and_matches_the_chroma_path(
    palace: Path, home: Path, embedder: Embedder
) -> None:
    chroma_path = open_palace(str(palace))
    chroma_path.core.catalog_trusted = lambda: False  # type: ignore[method-assign]
    for query, filters, mode in QUERIES:
        fast, imported = run_search(palace, home, query, *filters, "--mode", mode, "-n", "8")
        assert not imported, "a search on an in-step palace must not import chromadb"
        wing = filters[1] if filters else None
        expected = chroma_path.search(query, wing=wing, limit=8, mode=mode)
        assert fast["results"], query
        assert_same_hits(fast, expected, query)
    chroma_path.close()


def add_behind_our_back(palace: Path, text: str, vector: list[float]) -> None:
    """File a drawer straight through chromadb, as MemPalace would, in another process."""
    script = textwrap.dedent(
        """
        import json, sys, chromadb
        palace, text, vector = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
        col = chromadb.PersistentClient(path=palace).get_collection("mempalace_drawers")
        col.add(ids=["drawer_elsewhere_1"], documents=[text], embeddings=[vector],
                metadatas=[{"wing": "elsewhere", "room": "general", "source_file": "x.md"}])
        """
    )
    subprocess.run(
        [sys.executable, "-c", script, str(palace), text, json.dumps(vector)],
        check=True,
        timeout=120,
    )


def test_a_drawer_filed_by_another_tool_is_noticed(
    palace: Path, home: Path, embedder: Embedder
) -> None:
    text = "The quokka sanctuary opens its night tours on Thursdays."
    add_behind_our_back(palace, text, [float(x) for x in embedder.embed([text])[0]])

    result, imported = run_search(palace, home, "quokka night tours")
    assert imported, "a changed store must be checked through Chroma"
    assert result["results"][0]["text"] == text
    assert set(result["results"][0]["matched_by"]) == {"vector", "lexical"}

    # The sync re-stamped the catalogue: the next search is fast again and still finds it.
    again, imported = run_search(palace, home, "quokka night tours")
    assert not imported
    assert_same_hits(again, result, "quokka night tours")


def test_a_catalogue_without_vectors_still_searches_and_is_backfilled(
    palace: Path, home: Path, embedder: Embedder
) -> None:
    before, _ = run_search(palace, home, "backup schedule")
    # Make it a catalogue as an older version wrote it: no vector column, no stamp.
    conn = sqlite3.connect(palace / CATALOG_FILE)
    for trigger in ("passages_drawer_gone", "passages_drawer_changed"):  # newer than that
        conn.execute(f"DROP TRIGGER {trigger}")
    conn.execute("DROP TABLE passages")
    conn.execute("ALTER TABLE drawers DROP COLUMN embedding")
    conn.execute("DELETE FROM meta WHERE key IN ('vectors', 'store_head')")
    conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()

    old, imported = run_search(palace, home, "backup schedule")
    assert imported
    assert_same_hits(old, before, "backup schedule")

    conn = sqlite3.connect(palace / CATALOG_FILE)
    assert conn.execute("SELECT COUNT(*) FROM drawers WHERE embedding IS NULL").fetchone() == (0,)
    conn.close()
    new, imported = run_search(palace, home, "backup schedule")
    assert not imported
    assert (summary(new), similarities(new)) == (summary(before), similarities(before))
