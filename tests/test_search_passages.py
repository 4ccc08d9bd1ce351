"""A long drawer is scored by its best passage (storage/passage_vectors.py): the passages'
vectors live in the catalogue and the vector index, tied to the drawer, never shown as drawers;
they go with their drawer; a palace made before them opens as it is and gets them on
`mempalace reembed`. The real default model throughout."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mempalace_cli.common.config import resolve_settings
from mempalace_cli.embedders.base import Embedder
from mempalace_cli.service import Palace
from mempalace_cli.storage.catalog import Catalog, DrawerRow
from mempalace_cli.storage.passage_vectors import PASSAGES_FROM, passage_texts, text_size
from mempalace_cli.storage.vector_index import VectorIndex
from tests.conftest import run_cli as run
from tests.conftest import search_hits as search

# A chat between two people planning a camping trip; one line, in the middle, answers QUESTION.
TRANSCRIPT = "\n".join(
    [
        "Maya: Did you finish packing the tent for the weekend?",
        "Sam: Almost, I still need the stove and the water filter.",
        "Maya: The forecast says rain on Saturday morning, clearing in the afternoon.",
        "Sam: Then we start hiking after lunch and camp by the lake.",
        "Maya: Bring the blue tarp, the green one has a hole.",
        "Sam: Noted. Should we take the long trail past the waterfall?",
        "Maya: Only if the river crossing is not flooded.",
        "Sam: I will check the park's trail report on Friday.",
        "Maya: By the way, my sister's wedding in Lisbon is on the 14th of June, so I am away "
        "that week.",
        "Sam: Nice! Are you flying or taking the train?",
        "Maya: Flying, the train takes two days.",
        "Sam: OK. Back to the trip: who brings the food?",
        "Maya: I'll do breakfast and snacks, you do dinners.",
        "Sam: Pasta on Saturday, curry on Sunday.",
        "Maya: Sounds good. Do we need bear spray there?",
        "Sam: The ranger said no bears this season, but hang the food anyway.",
        "Maya: Fine. I'll bring the rope and the headlamps.",
        "Sam: And the first-aid kit, last time we forgot it.",
        "Maya: Right. Meet at the trailhead at 1 pm?",
        "Sam: 1 pm works. I'll drive, I have the roof box.",
        "Maya: Great, see you Saturday.",
        "Sam: One more thing: the parking at the trailhead costs five dollars in cash.",
        "Maya: I have coins. Should we also book the campsite online?",
        "Sam: It is first come, first served, so arriving early matters.",
        "Maya: Then let us leave town by noon at the latest.",
        "Sam: Agreed. I'll text Priya in case she wants to join us.",
    ]
)
QUESTION = "When is the sister's wedding in Lisbon?"
# Short drawers the model finds closer to the question than the transcript as a whole (cosine
# 0.06-0.20 against 0.06), but not closer than the transcript's passage holding the answer.
OTHERS = [
    "Priya is flying to Porto in July for a conference.",
    "Maya is away the week of the team offsite.",
    "Sam drives to the trailhead on Saturday.",
    "Our June release is scheduled for the 14th.",
    "Packing list for the camping trip: tent, stove, tarp.",
]


def cosine(embedder: Embedder, query: str, texts: list[str]) -> list[float]:
    q = embedder.embed_query(query)
    m = embedder.embed(texts)
    return [float(x) for x in (m @ q) / (np.linalg.norm(m, axis=1) * np.linalg.norm(q))]


@pytest.fixture(scope="module")
def filed(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("passages")
    home = base / "home"
    home.mkdir()
    palace = Palace(resolve_settings(base / "palace", home=home))
    drawers = [{"wing": "chats", "room": "trips", "content": TRANSCRIPT}]
    drawers += [{"wing": "chats", "room": "notes", "content": t} for t in OTHERS]
    ids = palace.add_drawers(drawers)["drawer_ids"]
    palace.close()
    return {"palace": base / "palace", "long": ids[0], "ids": ids, "base": base}


def test_the_transcript_is_long_enough_to_have_passages() -> None:
    assert text_size(TRANSCRIPT) > PASSAGES_FROM
    assert len(passage_texts(TRANSCRIPT)) >= 3


def test_a_long_drawer_is_found_by_its_best_passage(filed: dict, embedder: Embedder) -> None:
    """As one vector the transcript is the least close drawer but one (its average topic is
    camping); its passage holding the answer is the closest of all, and that is what search
    ranks by and shows as its similarity."""
    whole = cosine(embedder, QUESTION, [TRANSCRIPT])[0]
    others = cosine(embedder, QUESTION, OTHERS)
    best = max(cosine(embedder, QUESTION, passage_texts(TRANSCRIPT)))
    assert sum(o > whole for o in others) >= 3  # nothing to find without passages
    assert best > max(others)

    for mode in ("vector", "hybrid"):
        hits = search(filed["palace"], QUESTION, "--mode", mode, "-n", "6")
        assert hits[0]["drawer_id"] == filed["long"], [h["text"][:40] for h in hits]
        assert hits[0]["text"] == TRANSCRIPT  # the drawer, whole: not a passage
        assert hits[0]["similarity"] == pytest.approx(best, abs=3e-3)
    # A date filter ranks from the catalogue's vectors in memory (not the index): the same.
    dated = search(filed["palace"], QUESTION, "--mode", "vector", "--since", "2000-01-01")
    assert dated[0]["drawer_id"] == filed["long"]
    assert dated[0]["similarity"] == pytest.approx(best, abs=3e-3)


def test_passages_are_not_drawers(filed: dict) -> None:
    status = json.loads(run("--palace", filed["palace"], "status", "--json").stdout)
    assert status["total_drawers"] == len(filed["ids"])
    hits = search(filed["palace"], QUESTION, "--mode", "vector", "-n", "20")
    assert sorted(h["drawer_id"] for h in hits) == sorted(filed["ids"])  # each drawer once
    shown = json.loads(run("--palace", filed["palace"], "show", filed["long"], "--json").stdout)
    assert shown["drawer"]["text"] == TRANSCRIPT
    catalog = Catalog(filed["palace"])
    try:
        (stored,) = catalog.conn.execute(
            "SELECT count(*) FROM passages p JOIN drawers d ON d.rowid = p.drawer WHERE d.id = ?",
            (filed["long"],),
        ).fetchone()
        short = catalog.conn.execute(
            "SELECT count(*) FROM passages p JOIN drawers d ON d.rowid = p.drawer WHERE d.id != ?",
            (filed["long"],),
        ).fetchone()[0]
    finally:
        catalog.close()
    assert stored == len(passage_texts(TRANSCRIPT)) and short == 0


def test_passages_go_with_their_drawer(tmp_path: Path, embedder: Embedder) -> None:
    home = tmp_path / "home"
    home.mkdir()
    palace = Palace(resolve_settings(tmp_path / "palace", home=home))
    first = palace.add_drawers([{"wing": "w", "room": "r", "content": TRANSCRIPT}])
    kept = palace.add_drawers([{"wing": "w", "room": "r", "content": OTHERS[0]}])
    count = "SELECT count(*) FROM passages"
    assert palace.catalog.conn.execute(count).fetchone()[0] == len(passage_texts(TRANSCRIPT))
    palace.delete_drawer(first["drawer_ids"][0])
    assert palace.catalog.conn.execute(count).fetchone()[0] == 0
    hits = palace.search(QUESTION, mode="vector")["results"]
    assert [h["drawer_id"] for h in hits] == kept["drawer_ids"]
    palace.close()


def test_a_drawer_with_many_passages_leaves_room_for_the_others(tmp_path: Path) -> None:
    """The index ranks rows, and a long drawer's passages are many rows near one another: the
    nearest drawers are still `depth` distinct drawers, the long one once."""
    rng = np.random.default_rng(7)
    dim = 64
    query = rng.normal(size=dim).astype(np.float32)
    catalog = Catalog(tmp_path)
    rows = [DrawerRow(f"d{i}", "w", "r", "", i, "", f"drawer {i}", {}) for i in range(80)]
    vectors = rng.normal(size=(80, dim)).astype(np.float32)
    near = query + 0.3 * rng.normal(size=(300, dim)).astype(np.float32)  # 300 close passages
    with catalog.transaction() as conn:
        catalog.upsert_drawers(conn, rows, vectors, {"d0": near})
    index = VectorIndex(tmp_path, catalog.conn)
    assert index.current() is not None
    found = index.nearest(query, 50)
    assert found is not None
    ids = [i for i, _ in found]
    assert len(ids) == 50 == len(set(ids))
    assert ids[0] == "d0"
    catalog.close()


def test_a_palace_made_before_passages_opens_and_reembed_gives_them(
    filed: dict, embedder: Embedder, tmp_path: Path
) -> None:
    """The same palace as a version without passages left it (no passages table, schema 3,
    its vector index in the older format): it opens and searches (the transcript by its own
    vector), and `mempalace reembed` with the palace's own model adds the long drawer's
    passages, after which search finds it by them."""
    old = tmp_path / "old"
    shutil.copytree(filed["palace"], old)
    catalog = Catalog(old)
    with catalog.transaction() as conn:
        conn.execute("DROP TRIGGER passages_drawer_gone")
        conn.execute("DROP TRIGGER passages_drawer_changed")
        conn.execute("DROP TABLE passages")
        conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    catalog.close()
    header = old / "vector_index" / "header.json"
    if header.exists():
        data = json.loads(header.read_text())
        data.pop("passages", None)
        header.write_text(json.dumps(data | {"format": 2}))

    whole = cosine(embedder, QUESTION, [TRANSCRIPT])[0]
    before = {h["drawer_id"]: h for h in search(old, QUESTION, "--mode", "vector", "-n", "6")}
    assert before[filed["long"]]["similarity"] == pytest.approx(whole, abs=3e-3)

    said = run("--palace", old, "reembed", "--model", "use-multilingual-v3")
    assert "1 long drawers got passage vectors" in said.stdout
    again = json.loads(
        run("--palace", old, "reembed", "--model", "use-multilingual-v3", "--json").stdout
    )
    assert again["passages_added"] == 0 and again["switched"] is False

    after = search(old, QUESTION, "--mode", "vector", "-n", "6")
    assert after[0]["drawer_id"] == filed["long"]
    best = max(cosine(embedder, QUESTION, passage_texts(TRANSCRIPT)))
    assert after[0]["similarity"] == pytest.approx(best, abs=3e-3)
