"""Drawer ids are unambiguous (wing a_b/room c and wing a/room b_c never share one), ids filed
under the old scheme keep working, and a drawer Chroma would refuse is refused before any
write starts."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from mempalace_cli.common.config import resolve_settings
from mempalace_cli.common.errors import InvalidInputError
from mempalace_cli.service import Palace
from mempalace_cli.service.core import WRITE_IN_PROGRESS
from mempalace_cli.storage.drawer_ids import drawer_id, legacy_drawer_id

TEXT = "The heron count on the east marsh was forty-two this spring."


@pytest.fixture
def palace(tmp_path: Path, embedder: Any) -> Any:
    p = Palace(resolve_settings(str(tmp_path / "palace")))
    yield p
    p.close()


def test_look_alike_wing_and_room_pairs_get_different_ids(palace: Any) -> None:
    one = palace.add_drawer("a_b", "c", TEXT)
    two = palace.add_drawer("a", "b_c", TEXT, check_duplicates=False)
    assert one["success"] and two["success"] and "already_stored" not in two
    assert one["drawer_id"] != two["drawer_id"]
    assert one["drawer_id"].startswith("drawer_a_b_c_") and two["drawer_id"].startswith(
        "drawer_a_b_c_"
    )  # still readable; the digest tells them apart
    first, second = palace.get_drawer(one["drawer_id"]), palace.get_drawer(two["drawer_id"])
    assert (first["wing"], first["room"]) == ("a_b", "c")
    assert (second["wing"], second["room"]) == ("a", "b_c")
    # Idempotent per place: the same content in the same place is not filed twice.
    assert palace.add_drawer("a", "b_c", TEXT)["already_stored"] is True
    many = palace.add_drawers(
        [
            {"wing": "a_b", "room": "c", "content": TEXT},
            {"wing": "a", "room": "b_c", "content": TEXT},
        ]
    )
    assert many["drawer_ids"] == [one["drawer_id"], two["drawer_id"]] and many["added"] == 0


def test_the_id_scheme_is_unambiguous_by_construction() -> None:
    assert drawer_id("a_b", "c", "k") != drawer_id("a", "b_c", "k")
    assert legacy_drawer_id("a_b", "c", "k" * 16) == legacy_drawer_id("a", "b_c", "k" * 16)


def test_a_drawer_filed_under_the_old_id_scheme_is_found_not_filed_again(
    tmp_path: Path, palace: Any, embedder: Any
) -> None:
    """A palace written before this change (or by MemPalace) holds `drawer_{wing}_{room}_{
    sha256(content)[:16]}`: it is read, searched, and recognised by add_drawer; a look-alike
    place (a/b_c for a_b/c) does not mistake it for its own."""
    palace.create()
    digest = hashlib.sha256(TEXT.encode()).hexdigest()
    old_id = legacy_drawer_id("a_b", "c", digest)
    vec = embedder.embed([TEXT])
    col = palace.store.collection(create=True)  # written as another tool would: Chroma only
    col.upsert(
        ids=[old_id],
        embeddings=vec,
        documents=[TEXT],
        metadatas=[{"wing": "a_b", "room": "c", "source_file": "", "filed_at": "2025-01-01"}],
    )
    fresh = Palace(resolve_settings(str(tmp_path / "palace")))
    try:
        assert fresh.get_drawer(old_id)["text"] == TEXT
        assert fresh.search("heron count east marsh", limit=1)["results"][0]["drawer_id"] == old_id
        again = fresh.add_drawer("a_b", "c", TEXT)
        assert again == {
            "success": True,
            "drawer_id": old_id,
            "already_stored": True,
            "secrets_redacted": 0,
        }
        other = fresh.add_drawer("a", "b_c", TEXT, check_duplicates=False)
        assert other["success"] and other["drawer_id"] == drawer_id("a", "b_c", digest)
        assert fresh.get_drawer(old_id)["wing"] == "a_b"  # not overwritten
        assert fresh.catalog.count() == 2
    finally:
        fresh.close()


def test_a_convo_exchange_filed_under_the_old_scheme_is_not_filed_twice(
    tmp_path: Path, palace: Any
) -> None:
    """Mining a grown chat export into a palace where an earlier version filed its first
    exchange under the old id: only the new exchange is added, the old one is kept."""
    import json

    folder = tmp_path / "chats"
    folder.mkdir()
    messages = [
        {"sender": "human", "text": "Where do the herons nest?"},
        {"sender": "assistant", "text": "On the east marsh, in the reeds."},
    ]
    export = folder / "c.json"
    export.write_text(json.dumps([{"uuid": "c1", "name": "birds", "chat_messages": messages}]))
    first = palace.mine(folder, mode="convos")
    assert first["drawers"]["added"] == 1
    # Rewrite that drawer under its old-scheme id, as an older version filed it.
    new_id = palace.catalog.get_file(str(export)).drawer_ids[0]
    row = palace.catalog.get([new_id])[new_id]
    key = next(k for k in _convo_keys(palace, export) if drawer_id(row.wing, row.room, k) == new_id)
    old_id = legacy_drawer_id(row.wing, row.room, key)
    got = palace.store.get([new_id], ["embeddings", "documents", "metadatas"])
    # A palace an older version built: the same drawer under its old id, in Chroma only (the
    # catalogue is rebuilt from Chroma on first use).
    older = Palace(resolve_settings(str(tmp_path / "older")))
    try:
        older.create()
        older.store.collection(create=True).upsert(
            ids=[old_id],
            embeddings=got["embeddings"],
            documents=got["documents"],
            metadatas=got["metadatas"],
        )
        messages += [
            {"sender": "human", "text": "And the egrets?"},
            {"sender": "assistant", "text": "In the willows by the west pond."},
        ]
        export.write_text(json.dumps([{"uuid": "c1", "name": "birds", "chat_messages": messages}]))
        grown = older.mine(folder, mode="convos")
        assert grown["drawers"] == {"added": 1, "replaced": 0, "removed": 0, "unchanged": 1}
        ids = older.catalog.get_file(str(export)).drawer_ids
        assert ids[0] == old_id and len(ids) == 2
        assert older.catalog.count() == 2
    finally:
        older.close()


def _convo_keys(palace: Any, export: Path) -> list[str]:
    from mempalace_cli.miners.convos import detect, plan_drawers, read_exchanges

    fmt = detect(export).format
    return [
        d.key for d in plan_drawers(x for x in read_exchanges(export, fmt) if hasattr(x, "user"))
    ]


@pytest.mark.parametrize(
    "metadata",
    [
        {"nested": {"a": 1}},
        {"listed": [1, 2]},
        {"empty": None},
        {"huge": 2**70},
        {"nan": float("nan")},
        {"chroma:document": "x"},
    ],
)
def test_metadata_chroma_would_refuse_is_refused_before_any_write(
    tmp_path: Path, palace: Any, metadata: dict[str, Any]
) -> None:
    palace.add_drawer("w", "r", "A drawer filed before the bad one.")
    generation = palace.catalog.generation()
    with pytest.raises(InvalidInputError) as err:
        palace.add_drawer("w", "r", "The bad one: " + repr(metadata), metadata=metadata)
    assert err.value.message.endswith("Nothing was written.") and err.value.hint
    assert palace.catalog.get_meta(WRITE_IN_PROGRESS) != "1"
    assert palace.catalog.generation() == generation  # not even the write mark was set
    fresh = Palace(resolve_settings(str(tmp_path / "palace")))
    try:
        assert fresh.sync() == 0  # no rebuild on the next read
        assert fresh.catalog.count() == 1
    finally:
        fresh.close()
