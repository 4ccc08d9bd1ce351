"""The catalogue of a server palace as a cache (consistency.py with the team change log of
storage/team_log.py), two palaces ("machines") in one process against a real `chroma run`: in
step by the change token, catching up from the change log by what changed, falling back to a
full comparison by content."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mempalace_cli.common.config import COLLECTION_NAME, resolve_settings
from mempalace_cli.service import Palace
from mempalace_cli.storage.catalog import DrawerRow
from mempalace_cli.storage.chroma_server import ServerOptions, connect
from mempalace_cli.storage.team_log import SERVER_TOKEN
from tests.team_support import shared_server, unique_database


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with shared_server(tmp_path_factory.mktemp("mirror-chroma")) as url:
        yield url


@pytest.fixture
def pair(tmp_path: Path, server_url: str, home: Path, embedder: Any) -> Iterator[tuple]:
    database = unique_database()
    a = Palace(resolve_settings(str(tmp_path / "a"), server_url, chroma_database=database))
    b = Palace(resolve_settings(str(tmp_path / "b"), server_url, chroma_database=database))
    try:
        yield a, b, database
    finally:
        a.close()
        b.close()


def _catalog_ids(p: Palace) -> set[str]:
    return p.catalog.all_ids()


def _server_ids(p: Palace) -> set[str]:
    return {i for page in p.store.iter_all(()) for i in page["ids"]}


def test_in_step_costs_no_refresh_and_a_write_is_caught_up_by_what_changed(pair: tuple) -> None:
    a, b, _ = pair
    first = a.add_drawers(
        [
            {"wing": "ops", "room": "notes", "content": f"Runbook step {n}: restart the queue."}
            for n in range(12)
        ]
    )
    assert first["added"] == 12
    b.create()
    assert b.sync() == 12  # first mirror: everything
    assert b.sync() == 0  # in step: nothing re-read
    assert b.catalog.get_meta(SERVER_TOKEN) == b.store.ledger.token()
    added = a.add_drawer("ops", "notes", "The dead-letter queue is drained every hour.")
    assert b.sync() == 1  # caught up by the one drawer that changed, not all 13
    assert _catalog_ids(b) == _server_ids(b)
    a.delete_drawer(added["drawer_id"])
    assert b.sync() == 1
    assert added["drawer_id"] not in _catalog_ids(b)
    hits = b.search("dead-letter queue drained", mode="lexical")["results"]
    assert all("dead-letter" not in h["text"] for h in hits)


def test_our_own_write_keeps_the_catalogue_in_step(pair: tuple) -> None:
    a, _b, _ = pair
    a.add_drawer("ops", "notes", "Backups run at 01:00 UTC.")
    a.add_drawer("ops", "notes", "Restores are tested monthly.")
    assert a.catalog.get_meta(SERVER_TOKEN) == a.store.ledger.token()
    assert a.sync() == 0


def test_a_writer_without_the_ledger_is_caught_by_content(pair: tuple, embedder: Any) -> None:
    """MemPalace (or any tool) writing straight into the collection keeps no change log: the
    change token stays, and consistency.py's tail probe (re-run by a long-lived process every
    SERVER_CHECK_SECONDS) finds the change and reconciles by content."""
    a, b, database = pair
    a.add_drawer("ops", "notes", "Certificates renew 30 days before expiry.")
    b.create()
    b.sync()
    client = connect(ServerOptions(url=a.settings.chroma_url or "", database=database))
    col = client.get_collection(COLLECTION_NAME, embedding_function=None)
    text = "Foreign tool: the VPN concentrator reboots on Sundays."
    col.add(
        ids=["drawer_ops_notes_foreign"],
        embeddings=embedder.embed([text]).tolist(),
        documents=[text],
        metadatas=[{"wing": "ops", "room": "notes", "source_file": ""}],
    )
    b.consistency._server_checked_at = None  # the probe's interval is over (instead of a sleep)
    assert b.sync() == 1
    hits = b.search("VPN concentrator reboots", mode="lexical")["results"]
    assert hits and hits[0]["drawer_id"] == "drawer_ops_notes_foreign"


def test_a_write_interrupted_before_the_catalogue_is_repaired(pair: tuple) -> None:
    """A writer that dies after the server write leaves its change record: others catch up,
    and its own catalogue, marked mid-write, is rebuilt by content."""
    a, b, _ = pair
    b.create()
    b.sync()
    row = DrawerRow("drawer_ops_notes_half", "ops", "notes", "", None, "", "Half-written.", {})
    vec = a.embedder.embed([row.text])
    a.create()
    a.consistency.begin_write()
    a.store.upsert([row.id], vec, [row.text], [{"wing": "ops", "room": "notes"}])
    # (the process "dies" here: no catalogue write, the mark stays)
    assert b.sync() == 1 and "drawer_ops_notes_half" in _catalog_ids(b)
    fresh = Palace(a.settings)
    try:
        assert fresh.sync() >= 1
        assert "drawer_ops_notes_half" in _catalog_ids(fresh)
    finally:
        fresh.close()


def test_the_identity_is_shared_through_the_server(pair: tuple, cli: Any) -> None:
    a, b, database = pair
    a.add_drawer("ops", "notes", "Standups are async in the #harbor channel.")
    assert b.identity()["text"] is None
    a.set_identity("We are the Harbor team: photo storage for architects.\n")
    assert b.identity() == {
        "text": "We are the Harbor team: photo storage for architects.\n",
        "where": a.settings.chroma_url,
    }
    woke = b.wake_up()
    assert "photo storage for architects" in str(woke)
    shown = cli("--chroma-url", a.settings.chroma_url, "--chroma-database", database, "identity")
    assert "photo storage for architects" in shown.stdout
