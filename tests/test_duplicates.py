"""The duplicate check blocks a restatement, never an update: a close drawer with other words
(another day, another number, a negation) is filed and reported as similar; the same words with
other case, punctuation or spacing are refused. Real model, real palace."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mempalace_cli.embedders.base import Embedder
from mempalace_cli.search.sameness import says_the_same, words
from mempalace_cli.service import Palace, open_palace

FACT = "The production deploy of the billing service is on Tuesday at 02:00 UTC."
# Each scores 0.88 to 0.998 against FACT with all-MiniLM-L6-v2 and use-multilingual-v3
# (benchmarks/duplicates.py), yet says something else.
UPDATES = [
    "The production deploy of the billing service is on Thursday at 02:00 UTC.",
    "The production deploy of the billing service is on Tuesday at 03:00 UTC.",
    "The production deploy of the billing service is not on Tuesday at 02:00 UTC.",
]
RESTATEMENTS = [
    "the production deploy of the billing service is on tuesday at 2:00 UTC",
    "The production deploy of the billing service is on Tuesday, at 02:00 UTC!",
]


@pytest.fixture
def palace(home: Path, embedder: Embedder) -> Iterator[Palace]:
    p = open_palace(str(home / "palace"))
    yield p
    p.close()


def test_words_ignore_case_punctuation_spacing_and_leading_zeros() -> None:
    assert words("At 02:00, Maya's deploy!") == ["at", "2", "0", "maya", "s", "deploy"]
    assert words("我们决定用Postgres做账单服务") == words("我们决定用 Postgres 做账单服务。")
    assert not says_the_same("rate limit 100", "rate limit 1000")
    assert not says_the_same("Alice pays Bob", "Bob pays Alice")


def test_an_update_is_filed_and_a_restatement_refused(palace: Palace) -> None:
    first = palace.add_drawer("ops", "deploys", FACT)
    assert first["success"] is True
    for text in RESTATEMENTS:
        refused = palace.add_drawer("ops", "deploys", text)
        assert refused["success"] is False and refused["reason"] == "duplicate", text
        assert refused["matches"][0]["drawer_id"] == first["drawer_id"]
        assert palace.check_duplicate(text)["is_duplicate"] is True
    for text in UPDATES:
        check = palace.check_duplicate(text, threshold=0.8)
        assert check["is_duplicate"] is False and check["matches"] == [], text
        assert first["drawer_id"] in [m["drawer_id"] for m in check["similar"]], text
        filed = palace.add_drawer("ops", "deploys", text)
        assert filed["success"] is True, (text, filed)
        assert palace.get_drawer(filed["drawer_id"])["text"] == text
    thursday = palace.search("billing deploy Thursday", mode="lexical")["results"]
    assert thursday[0]["text"] == UPDATES[0]


def test_an_update_lists_the_close_drawer_as_similar(palace: Palace) -> None:
    first = palace.add_drawer("ops", "deploys", FACT)["drawer_id"]
    filed = palace.add_drawer("ops", "deploys", UPDATES[0])
    similar = [m["drawer_id"] for m in filed.get("similar", [])]
    sim = palace.check_duplicate(UPDATES[0], threshold=0.01)["similar"]
    # Listed when it is above the default threshold for this palace's model.
    close = [m for m in sim if m["drawer_id"] == first][0]["similarity"]
    assert (first in similar) == (close >= 0.9)


def test_editing_a_drawer_into_an_update_of_another_is_allowed(palace: Palace) -> None:
    palace.add_drawer("ops", "deploys", FACT)
    other = palace.add_drawer("ops", "misc", "The coffee machine is descaled every Friday.")
    done = palace.update_drawer(other["drawer_id"], content=UPDATES[0])
    assert done["success"] is True and palace.get_drawer(other["drawer_id"])["text"] == UPDATES[0]
    again = palace.update_drawer(other["drawer_id"], content=RESTATEMENTS[1])
    assert again["success"] is False and again["reason"] == "duplicate"
