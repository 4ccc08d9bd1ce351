"""The confidence-aware fusion (mempalace_cli/search/fusion.py) on hand-made score lists: what each
rule is for, shown on the case it was made for. The end-to-end effect is measured in
benchmarks/tune_fusion.py and exercised through real searches in test_hybrid.py and
test_cjk_search.py."""

from __future__ import annotations

from mempalace_cli.search import fusion
from mempalace_cli.search.fusion import CJK, LATIN, FusionParams, fuse, script_of

DEFAULT = FusionParams(one_script_rrf=False)  # the confidence rules themselves

# A flat vector side: 20 candidates between 0.30 and 0.40.
FLAT = [(f"v{i}", 0.40 - i * 0.005) for i in range(20)]


def test_a_confident_vector_match_beats_a_weak_keyword_match() -> None:
    # The vector side is sure (0.80 against a crowd near 0.35); the keyword side matched one
    # common word of a ten-term question (BM25 2 of a possible 20).
    vector = [("answer", 0.80), *FLAT]
    lexical = [("v7", 2.0)]
    assert fuse(vector, lexical, params=DEFAULT, query_weight=20.0)[0] == "answer"


def test_a_strong_keyword_match_lifts_a_drawer_the_vector_side_hesitates_on() -> None:
    lexical = [("v12", 18.0), ("v3", 3.0)]
    assert fuse(FLAT, lexical, params=DEFAULT, query_weight=20.0)[0] == "v12"


def test_agreement_of_both_sides_wins() -> None:
    vector = [("a", 0.62), ("b", 0.61), *FLAT]
    lexical = [("b", 9.0), ("c", 9.5)]
    assert fuse(vector, lexical, params=DEFAULT, query_weight=20.0)[0] == "b"


def test_a_keyword_match_in_another_script_counts_less() -> None:
    # A Chinese question naming "Kafka": its Chinese answer is the vector side's pick, and an
    # English note matches only on the name.
    vector = [("zh-answer", 0.55), ("en-kafka", 0.50), *FLAT]
    lexical = [("en-kafka", 10.0)]
    scripts = {"zh-answer": CJK, "en-kafka": LATIN}
    undamped = DEFAULT.with_(cross_script_lexical=1.0)
    assert fuse(vector, lexical, CJK, scripts, undamped, query_weight=12.0)[0] == "en-kafka"
    damped = DEFAULT.with_(cross_script_lexical=0.0)
    assert fuse(vector, lexical, CJK, scripts, damped, query_weight=12.0)[0] == "zh-answer"
    # The same keyword match from an English question is same-script evidence: it counts.
    assert fuse(vector, lexical, LATIN, scripts, damped, query_weight=12.0)[0] == "en-kafka"


def test_one_side_empty_keeps_the_other_sides_order() -> None:
    assert fuse(FLAT, [], params=DEFAULT) == [d for d, _ in FLAT]
    lexical = [("x", 5.0), ("y", 4.0), ("z", 1.0)]
    assert fuse([], lexical, params=DEFAULT, query_weight=10.0) == ["x", "y", "z"]
    assert fuse([], []) == []


def test_ties_break_on_the_id() -> None:
    assert fuse([("b", 0.5), ("a", 0.5)], [], params=DEFAULT) == ["a", "b"]


def test_rrf_is_still_available_for_comparison() -> None:
    rrf = FusionParams(method="rrf", lexical_weight=2.0)
    assert fuse([("a", 0.9), ("b", 0.8)], [("b", 1.0)], params=rrf)[0] == "b"


def test_script_of() -> None:
    assert script_of("订单服务的幂等校验用 Redis 的 SETNX 实现") == CJK
    assert script_of("We moved the webhooks to Kafka (支付).") == LATIN
    assert script_of("") == LATIN


def test_one_script_candidates_fuse_by_rrf_by_default() -> None:
    # English question, English palace: weighted RRF (keywords x2), as CV chose.
    ranked = fuse([("a", 0.9), ("b", 0.8)], [("b", 1.0)], query_weight=10.0)
    assert ranked[0] == "b"


def test_each_tuned_model_is_a_model_the_palace_can_use() -> None:
    """BY_MODEL is keyed by the names palaces record; a renamed model would silently fall back
    to DEFAULT."""
    from mempalace_cli.embedders import MODELS
    from mempalace_cli.search.fusion import BY_MODEL, DEFAULT, for_model

    assert set(BY_MODEL) <= set(MODELS)
    assert for_model("multilingual-e5-small-q4") == DEFAULT
    # MemPalace palaces (MiniLM): an English search is still rank fusion with keywords x2.
    minilm = for_model("all-MiniLM-L6-v2")
    vector, lexical = [("a", 0.9), ("b", 0.5), ("d", 0.4)], [("b", 10.0), ("c", 5.0)]
    rrf = fusion.FusionParams(method="rrf", lexical_weight=2.0)
    assert fusion.fuse_scores(vector, lexical, params=minilm) == fusion.fuse_scores(
        vector, lexical, params=rrf
    )


def test_capped_scores_tie_break_on_similarity_not_on_the_id() -> None:
    """Two vector hits far above 48 weak ones both reach the z cap; the closer one must
    still come first (it used to be whichever id sorted first)."""
    weak = [(f"a{i:02d}", 0.10 + i * 0.0001) for i in range(48)]
    vector = sorted([("zz-closer", 0.91), ("aa-farther", 0.90), *weak], key=lambda x: -x[1])
    params = FusionParams(lexical_weight=3.0, z_cap=3.0, one_script_rrf=False)
    assert fuse(vector, [], params=params)[:2] == ["zz-closer", "aa-farther"]


# A conversation's sessions as USE scores them for most questions: cosines crowded between
# 0.20 and 0.30 (a spread of ~0.03), the vector side's pick barely above the rest.
CROWD = [(f"s{i}", 0.29 - i * 0.004) for i in range(26)]


def test_a_vector_side_with_no_signal_cannot_drag_a_clear_keyword_match_down() -> None:
    vector = sorted([("near-miss", 0.31), ("answer", 0.245), *CROWD], key=lambda x: -x[1])
    lexical = [("answer", 8.0), ("near-miss", 2.0)]  # half the question against one word
    use = fusion.for_model(fusion.USE)
    assert use.vector_sd_floor > 0
    assert fuse(vector, lexical, params=use, query_weight=16.0)[0] == "answer"
    # Read against its own spread, the same flat side looked as sure as a clear match and won:
    # LoCoMo's hybrid fell below its own keyword side (issue 27).
    own_spread = use.with_(vector_sd_floor=0.0, lexical_weight=3.0)
    assert fuse(vector, lexical, params=own_spread, query_weight=16.0)[0] == "near-miss"


def test_a_clear_vector_match_still_beats_a_weak_keyword_match_with_the_spread_floor() -> None:
    vector = sorted([("answer", 0.62), *CROWD], key=lambda x: -x[1])
    lexical = [("s3", 3.0)]  # one common word of the question
    use = fusion.for_model(fusion.USE)
    assert fuse(vector, lexical, params=use, query_weight=16.0)[0] == "answer"


def test_a_drawer_whose_file_also_answers_outranks_a_passing_mention() -> None:
    """ "on-call rotation" over examples/notes: ADR-0008's opening chunk and a postmortem's
    action table (which mentions the rotation once) score about the same; the ADR's other
    chunk scored too, so the ADR's file is about the question and its chunk goes first."""
    scores = {"adr#1": 5.99, "adr#13": 5.27, "postmortem#39": 6.34, "postmortem#1": 1.20}
    source = {d: d.split("#")[0] + ".md" for d in scores}
    lifted = fusion.with_siblings(scores, source, fusion.for_model(fusion.USE).sibling_weight)
    assert max(lifted, key=lifted.__getitem__) == "adr#1"
    assert max(scores, key=scores.__getitem__) == "postmortem#39"  # before the lift
    # A drawer without a source file (filed by hand) has no siblings; no weight, no change.
    assert fusion.with_siblings({"a": 1.0, "b": 2.0}, {}, 0.5) == {"a": 1.0, "b": 2.0}
    assert fusion.with_siblings(scores, source, 0.0) == scores
    # Each drawer is lifted by its best sibling, never by itself.
    alone = fusion.with_siblings({"x#1": 3.0, "y#1": 1.0}, {"x#1": "x", "y#1": "y"}, 0.5)
    assert alone == {"x#1": 3.0, "y#1": 1.0}


def test_the_default_models_fusion_reads_siblings() -> None:
    assert fusion.for_model(fusion.USE).sibling_weight > 0
