"""Hybrid (lexical + vector) search: the default ranking finds what only one side sees, stays in
step with removals, and honours wing/room filters on both sides."""

from __future__ import annotations

from pathlib import Path

import pytest

from mempalace_cli.embedders.base import Embedder
from mempalace_cli.service import Palace, open_palace

# Near neighbours of the query in meaning, none sharing a (stemmed) word with it.
DISTRACTORS = [
    f"The {thing} for the {system} rollout is rotated every {n} days by the on-call engineer."
    for n, (thing, system) in enumerate(
        (t, s)
        for t in (
            "release password",
            "rollout credential",
            "login secret",
            "access token",
            "ship key",
            "launch secret",
            "signing key",
            "vault login",
        )
        for s in (
            "staging",
            "production",
            "canary",
            "billing",
            "search",
            "mobile",
            "edge",
            "payments",
        )
    )
]
QUERY = "zanzibarquux deployment passphrase"
TARGET = "Marta named her garden gnome Zanzibarquux after a trip to the coast."


@pytest.fixture
def palace(home: Path, embedder: Embedder) -> Palace:
    p = open_palace()
    p.add_drawers(
        [{"wing": "ops", "room": "secrets", "content": t} for t in DISTRACTORS]
        + [{"wing": "home", "room": "garden", "content": TARGET}]
    )
    return p


def texts(result: dict) -> list[str]:
    return [r["text"] for r in result["results"]]


def test_keyword_only_match_is_found_by_default_search(palace: Palace) -> None:
    vector = palace.search(QUERY, limit=5, mode="vector")
    assert TARGET not in texts(vector), "the vector side alone should miss the rare keyword"

    default = palace.search(QUERY)
    assert default["mode"] == "hybrid"
    assert TARGET in texts(default)
    hit = next(r for r in default["results"] if r["text"] == TARGET)
    assert "lexical" in hit["matched_by"]
    assert hit["similarity"] is not None  # cosine filled in even when the vector side missed it


def test_semantic_match_without_shared_words_is_found(palace: Palace) -> None:
    result = palace.search("how often do we change the canary credentials", limit=5)
    assert any("canary" in t for t in texts(result))
    lexical_only = palace.search("when is the mobile rollout login rotated", mode="lexical")
    assert lexical_only["results"], "shared words are found by the lexical side alone"


def test_removed_drawer_is_gone_from_both_sides(palace: Palace) -> None:
    found = palace.search(QUERY, limit=5)
    drawer_id = next(r["drawer_id"] for r in found["results"] if r["text"] == TARGET)
    palace.delete_drawer(drawer_id)
    for mode in ("lexical", "vector", "hybrid"):
        ids = [r["drawer_id"] for r in palace.search(QUERY, limit=100, mode=mode)["results"]]
        assert drawer_id not in ids, mode
    # A fresh process view (new service object) agrees.
    again = open_palace().search("Zanzibarquux gnome", mode="lexical")
    assert again["results"] == []


def test_replaced_file_drops_old_text_from_the_lexical_side(
    home: Path, embedder: Embedder, tmp_path: Path
) -> None:
    folder = tmp_path / "proj"
    folder.mkdir()
    note = folder / "note.md"
    note.write_text("# Plans\n\nThe quokkaberry festival is on Friday.\n", encoding="utf-8")
    p = open_palace()
    p.mine(str(folder), wing="proj")
    assert texts(p.search("quokkaberry", mode="lexical"))
    note.write_text("# Plans\n\nThe picnic moved to Saturday.\n", encoding="utf-8")
    p.mine(str(folder), wing="proj")
    assert p.search("quokkaberry", mode="lexical")["results"] == []
    assert any("picnic" in t for t in texts(p.search("picnic Saturday", mode="lexical")))


@pytest.mark.parametrize("mode", ["hybrid", "vector", "lexical"])
def test_filters_apply_to_both_sides(home: Path, embedder: Embedder, mode: str) -> None:
    p = open_palace()
    p.add_drawers(
        [
            {"wing": wing, "room": room, "content": f"The {room} budget for {wing} is ready."}
            for wing in ("alpha", "beta")
            for room in ("travel", "hardware")
        ]
    )
    by_wing = p.search("budget ready", wing="alpha", limit=10, mode=mode)["results"]
    assert by_wing and {r["wing"] for r in by_wing} == {"alpha"}
    by_room = p.search("budget ready", room="hardware", limit=10, mode=mode)["results"]
    assert by_room and {r["room"] for r in by_room} == {"hardware"}
    both = p.search("budget ready", wing="beta", room="travel", limit=10, mode=mode)["results"]
    assert [(r["wing"], r["room"]) for r in both] == [("beta", "travel")]
    assert p.search("budget ready", wing="gamma", mode=mode)["results"] == []


def test_add_drawers_files_many_at_once_idempotently(home: Path, embedder: Embedder) -> None:
    p = open_palace()
    items = [{"wing": "w", "room": "r", "content": f"note number {i}"} for i in range(5)]
    first = p.add_drawers(items + items[:1])
    assert first["added"] == 5 and len(first["drawer_ids"]) == 6
    assert first["drawer_ids"][0] == first["drawer_ids"][5]
    again = p.add_drawers(items)
    assert again["added"] == 0 and again["already_stored"] == 5
    assert p.status()["total_drawers"] == 5
