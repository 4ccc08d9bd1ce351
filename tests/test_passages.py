"""The search highlighter (passages.py) reads text the way the keyword index does: the same
CJK characters, the same stop words."""

from __future__ import annotations

from mempalace_cli.search.passages import best_passage, query_terms, term_spans
from mempalace_cli.storage.catalog import fts_terms


def test_rare_cjk_characters_are_highlighted_like_common_ones() -> None:
    # 𠮷 (U+20BB7, extension B) in a name, and a Hangul jamo run: the keyword index splits
    # both into its bigrams, so the highlighter must see them as CJK too.
    line = "𠮷野家の注文は 𠮷田 が担当; ᄒᄀ 메모"
    terms = query_terms("𠮷田")
    assert terms == {"𠮷", "田"}
    assert [line[a:b] for a, b in term_spans(line, terms)] == ["𠮷", "𠮷", "田"]
    assert [line[a:b] for a, b in term_spans(line, query_terms("ᄒᄀ"))] == ["ᄒ", "ᄀ"]


def test_a_word_the_keyword_side_ignores_is_not_highlighted() -> None:
    query = "what about the rotation not being done"
    kept = {t.strip('"') for t in fts_terms(query)}
    assert kept == {"rotation", "done"}
    assert query_terms(query) == {"rotation", "don"}  # the highlighter's crude stems


def test_the_passage_is_the_lines_holding_the_query_terms() -> None:
    text = "\n".join(["intro"] * 20 + ["the key rotation runbook moved", "outro"])
    passage = best_passage(text, "who owns the key rotation runbook", max_lines=2)
    assert passage.matched and passage.lines[0] == "the key rotation runbook moved"
    assert passage.first == 20 and passage.cut_before and not passage.cut_after
