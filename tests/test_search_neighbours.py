"""A chat turn is read with the turns beside it (fusion.with_neighbours): in a mined
conversation the exchange that answers "did they book it?" says only "we went for it and
booked it"; the exchange before it names the guesthouse. Mined (each exchange a chunk of its
chat file), the answer ranks right after the exchange it continues; the same exchanges filed
by hand (no place in a chat) rank it below unrelated mentions of the same words. The real
default model, searched through `mempalace search --json`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mempalace_cli.common.config import resolve_settings
from mempalace_cli.embedders.base import Embedder
from mempalace_cli.service import Palace
from tests.conftest import run_cli as run
from tests.conftest import search_hits as search

EXCHANGES = [
    (
        "Morning! Did the plumber ever come about the kitchen sink?",
        "He came on Tuesday and replaced the trap, it drains fine now.",
    ),
    (
        "We watched a documentary about the palaces around Lisbon.",
        "Pena Palace in Sintra is the most colourful one, and there are guesthouses all around it.",
    ),
    (
        "I've been reading a novel about a lighthouse keeper, it's slow but lovely.",
        "Those quiet books are the best for winter evenings.",
    ),
    (
        "The dog chewed through another charging cable last night.",
        "Maybe a bitter spray on the cables would stop him.",
    ),
    (
        "My sister keeps asking me to join her pottery class on Thursdays.",
        "You should try it once, clay is very relaxing.",
    ),
    (
        "I keep thinking about that little guesthouse in Sintra, the one near the palace with "
        "blue tiles, for our anniversary.",
        "It looked lovely in the photos, and it's close to the train station.",
    ),
    (
        "So, we went for it and booked it.",
        "Wonderful! Two nights, and you leave on Friday morning.",
    ),
    (
        "I finally fixed the wobbly bookshelf with a couple of wall anchors.",
        "Nice, those anchors make all the difference.",
    ),
    (
        "Work has been hectic, the quarterly report is due next week.",
        "Block an afternoon for it and turn off your notifications.",
    ),
    (
        "Apparently Sintra gets really foggy in April, even the guesthouse owners complain.",
        "The fog makes the palaces look even more mysterious.",
    ),
    (
        "I need new running shoes, mine are falling apart.",
        "Try them on in the afternoon when your feet are a bit bigger.",
    ),
    (
        "The neighbours are repainting their fence bright yellow.",
        "Bold choice, it will certainly brighten the street.",
    ),
    ("We had pizza with the kids on Saturday.", "Homemade or from the place on the corner?"),
    (
        "My colleague stayed at a guesthouse in Porto for his anniversary and loved the breakfast.",
        "Porto guesthouses are famous for their pastries.",
    ),
]
ANSWER, ASKED = "we went for it and booked it", "little guesthouse in Sintra"
QUESTION = "Did they book the Sintra guesthouse for the anniversary?"


def rank_of(hits: list[dict[str, Any]], words: str) -> int | None:
    return next((n for n, h in enumerate(hits, 1) if words in h["text"]), None)


@pytest.fixture(scope="module")
def palaces(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> dict[str, Path]:
    """`mined`: the chat mined with `mine --mode convos` (each exchange a chunk of the chat
    file); `loose`: the very same drawer texts filed by hand, without a place in a chat."""
    base = tmp_path_factory.mktemp("neighbours")
    chats = base / "chats"
    chats.mkdir()
    chat = "\n\n".join(f"User: {u}\nAssistant: {a}" for u, a in EXCHANGES)
    (chats / "2026-05-02-chat.txt").write_text(chat + "\n", encoding="utf-8")
    mined = base / "mined"
    run("--palace", mined, "mine", chats, "--mode", "convos", "--wing", "home", "--json")
    palace = Palace(resolve_settings(mined, home=base / "home"))
    rows = sorted(palace.catalog.iter_drawers(wing="home"), key=lambda r: r.chunk_index)
    palace.close()
    assert len(rows) == len(EXCHANGES)  # one drawer per exchange, numbered in chat order
    loose = base / "loose"
    palace = Palace(resolve_settings(loose, home=base / "home"))
    palace.add_drawers([{"wing": "home", "room": r.room, "content": r.text} for r in rows])
    palace.close()
    return {"mined": mined, "loose": loose}


def test_the_answer_turn_ranks_right_after_the_turn_it_continues(palaces: dict) -> None:
    hits = search(palaces["mined"], QUESTION, "-n", "5")
    assert rank_of(hits, ASKED) == 1
    assert rank_of(hits, ANSWER) == 2


def test_without_its_place_in_the_chat_the_same_turn_ranks_below_other_mentions(
    palaces: dict,
) -> None:
    hits = search(palaces["loose"], QUESTION, "-n", "10")
    assert rank_of(hits, ASKED) is not None and rank_of(hits, ASKED) <= 2
    answer = rank_of(hits, ANSWER)
    assert answer is None or answer > 3  # below the other Sintra / guesthouse exchanges


def test_a_hit_shows_its_own_similarity_not_its_neighbours(palaces: dict) -> None:
    """The neighbours lift the ranking only: the similarity a hit shows is the cosine of the
    question and its own text, the same as for the hand-filed copy."""
    mined = {h["text"]: h["similarity"] for h in search(palaces["mined"], QUESTION, "-n", "14")}
    loose = {h["text"]: h["similarity"] for h in search(palaces["loose"], QUESTION, "-n", "14")}
    answer = next(t for t in mined if ANSWER in t)
    assert mined[answer] == loose[answer]


@pytest.mark.parametrize("mode", ["vector", "lexical"])
def test_one_side_alone_ranks_as_before(palaces: dict, mode: str) -> None:
    """`--mode vector` and `--mode lexical` keep their side's own order: a drawer's place in
    its chat changes only the fused ranking."""
    order = {
        name: [h["text"] for h in search(path, QUESTION, "--mode", mode, "-n", "8")]
        for name, path in palaces.items()
    }
    assert order["mined"] == order["loose"]
