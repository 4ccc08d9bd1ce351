"""The dictionary bridge (crosslingual.py): a Chinese question also searched by its English
words, read by the fusion for notes written in English. Real CC-CEDICT from the installed
wheel, the real default model, a real palace."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from mempalace_cli.embedders import USE_NAME
from mempalace_cli.search import crosslingual, fusion
from mempalace_cli.service import Palace
from mempalace_cli.service.searching import MAX_QUERY_CHARS
from mempalace_cli.storage.catalog import translated_share
from tests.conftest import palace_of_notes

# Written for this test: one English note and Chinese notes on neighbouring topics (reports,
# email, printing, billing), the situation where the model alone prefers a Chinese note.
NOTES = {
    "en-invoices": "Decision (June 4, Lena): customer invoices are now generated as PDF files "
    "by a nightly batch job and emailed through Postmark; the old print queue is retired.",
    "zh-reports": "财务报表导出改成异步任务，生成后通过站内信通知申请人下载。",
    "zh-emails": "营销邮件统一用新的模板发送，退订链接放在页脚，每周最多发两封。",
    "zh-printing": "办公室打印机每周五上午由行政部检查一次墨盒和纸张。",
    "zh-billing": "套餐价格从下个月起上调百分之十，老用户保留原价到年底。",
}
QUESTION = "客户发票现在是怎么生成和发送的？"  # How are customer invoices generated and sent?


@pytest.fixture(scope="module")
def palace(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Any:
    found = palace_of_notes(tmp_path_factory.mktemp("bridge"), NOTES)
    yield found
    found.close()


def test_the_default_model_searches_with_the_bridge() -> None:
    assert fusion.for_model(USE_NAME).translated_weight > 0


def test_a_chinese_question_finds_the_english_note_through_the_dictionary(
    palace: Palace,
) -> None:
    assert palace.binding().model == USE_NAME
    hits = palace.search(QUESTION, limit=3)["results"]
    by_note = {h["source_file"]: h for h in hits}
    assert "en-invoices" in by_note, [h["source_file"] for h in hits]
    assert "translated" in by_note["en-invoices"]["matched_by"]
    # The bridge only speaks for notes in another script than the question.
    for hit in hits:
        if hit["source_file"].startswith("zh-"):
            assert "translated" not in hit["matched_by"]


def test_the_bridge_stays_out_of_other_modes_and_english_questions(palace: Palace) -> None:
    for mode in ("vector", "lexical"):
        for hit in palace.search(QUESTION, limit=5, mode=mode)["results"]:
            assert "translated" not in hit["matched_by"]
    assert not palace.searching._bridges("How are customer invoices sent?")
    assert palace.searching._bridges(QUESTION)
    hits = palace.search("How are customer invoices sent?", limit=5)["results"]
    assert hits[0]["source_file"] == "en-invoices"
    assert all("translated" not in h["matched_by"] for h in hits)


def words(groups: list[list[str]]) -> set[str]:
    return {w for group in groups for w in group}


def test_the_translation_reads_the_dictionary() -> None:
    groups = crosslingual.translate(QUESTION)
    assert {"customer", "invoice", "generate"} <= words(groups)
    # One group per word of the question: 客户, 发票, 现在, 生成, 发送 (是, 和, 的 and 怎么 are
    # function and question words).
    assert len(groups) == 5, groups
    # Question words (怎么 "how", 什么时候 "when") say nothing about which note answers.
    assert crosslingual.translate("什么时候？怎么") == []
    assert crosslingual.translate("How are invoices sent?") == []
    # Latin words of a mixed query are kept as they are, one group each.
    assert crosslingual.translate("v1接口")[0] == ["v1"]
    # Traditional characters are headwords too.
    assert "invoice" in words(crosslingual.translate("發票"))


def test_a_chinese_verb_is_also_read_as_the_english_noun() -> None:
    """Chinese writes 支付 for "pay" and "payment", 存储 for "store" and "storage"; stemming
    keeps those English pairs apart, so the group holds the nouns too."""
    assert {"pay", "payment"} <= words(crosslingual.translate("支付"))
    assert {"store", "storage"} <= words(crosslingual.translate("存储"))
    assert {"notify", "notification"} <= words(crosslingual.translate("通知"))
    assert {"migrate", "migration"} <= words(crosslingual.translate("迁移"))
    # Short stems that would make unrelated words are left alone.
    assert "station" not in crosslingual.noun_forms("state")
    assert "savage" not in crosslingual.noun_forms("save")
    assert crosslingual.noun_forms("go") == []
    assert crosslingual.noun_forms("log-in") == []


def test_a_payment_note_answers_a_question_about_paying(tmp_path: Path) -> None:
    """The note says "payment failures"; the question says 支付 and 失败 (CC-CEDICT: "to pay",
    "to fail"), stems that "payment" and "failures" don't share. In a MiniLM palace, where
    the model reads no Chinese, only the nouns can put the note first: without them the
    deploy note, which says "fails", would win."""
    notes = {
        "en-payments": "Payment failures spike on Mondays because the card processor "
        "rate-limits our batch of renewals.",
        "en-deploys": "The deploy pipeline fails when the build cache is cold; rerun it once.",
        "en-release": "The mobile release train leaves every second Tuesday.",
        "zh-queue": "消息队列的消费者每五分钟检查一次积压，超过一万条时告警。",
        "zh-refund": "退款申请由客服审核，金额超过五百元需要主管批准。",
    }
    found = palace_of_notes(tmp_path, notes, model="all-MiniLM-L6-v2")
    try:
        hits = found.search("支付为什么会失败？", limit=3)["results"]
        assert hits[0]["source_file"] == "en-payments", [h["source_file"] for h in hits]
        assert "translated" in hits[0]["matched_by"]
    finally:
        found.close()


@pytest.mark.parametrize(
    "query",
    [
        "\ud800发票\udfff",  # lone surrogates around a word
        "𠀀𠀁𠀂",  # extension B characters the dictionary lacks
        "的了吗呢" * 50,  # function characters only
        "发票\x00\x1b[31m生成",  # NUL and a terminal escape between words
        "ＡＢＣ发票１２３",  # full-width Latin letters and digits
        "发" * 10_000,  # one character repeated
    ],
)
def test_hostile_queries_translate_or_come_back_empty(query: str) -> None:
    groups = crosslingual.translate(query)
    assert isinstance(groups, list)
    assert len(groups) <= crosslingual.MAX_WORDS
    assert all(group and all(isinstance(w, str) and w for w in group) for group in groups)


def test_a_huge_chinese_query_stays_bounded(palace: Palace) -> None:
    query = "客户发票生成发送" * 5000  # 40,000 characters
    started = time.perf_counter()
    groups = crosslingual.translate(query)
    assert 0 < len(groups) <= crosslingual.MAX_WORDS
    assert time.perf_counter() - started < 30  # a bound on runaway work, not a benchmark
    # The longest query a search accepts (MAX_QUERY_CHARS) still answers.
    hits = palace.search(query[:MAX_QUERY_CHARS], limit=3)["results"]
    assert hits


def test_without_the_dictionary_wheel_search_runs_without_the_bridge(
    palace: Palace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(crosslingual, "DICT_PACKAGE", "no_such_dictionary_package")
    monkeypatch.setattr(crosslingual, "_loaded", None)
    assert crosslingual.dictionary_path() is None
    assert crosslingual.translate(QUESTION) == []
    hits = palace.search(QUESTION, limit=5)["results"]
    assert hits and all("translated" not in h["matched_by"] for h in hits)


def test_the_dictionary_is_the_wheels_file_read_without_importing_it() -> None:
    import sys

    path = crosslingual.dictionary_path()
    assert path is not None and path.is_file() and isinstance(path, Path)
    crosslingual.dictionary()
    assert crosslingual.DICT_PACKAGE not in sys.modules


def test_translated_hits_lift_only_notes_in_another_script() -> None:
    vector = [("zh-near", 0.40), ("en-right", 0.30), ("zh-other", 0.10)]
    scripts = {"zh-near": fusion.CJK, "zh-other": fusion.CJK, "en-right": fusion.LATIN}
    translated = {"en-right": 0.6, "zh-near": 0.6, "en-far": 0.05}
    params = fusion.for_model(USE_NAME)
    without = fusion.fuse(vector, [], fusion.CJK, scripts, params.with_(translated_weight=0.0))
    with_bridge = fusion.fuse(vector, [], fusion.CJK, scripts, params, 0.0, translated)
    assert without[0] == "zh-near"
    assert with_bridge[0] == "en-right"
    score = fusion.fuse_scores(vector, [], fusion.CJK, scripts, params, 0.0, translated)
    same = fusion.fuse_scores(vector, [], fusion.CJK, scripts, params, 0.0, {})
    assert score["zh-near"] == same["zh-near"]  # a same-script note gets nothing from it


def test_the_share_counts_each_word_once_and_reads_stems() -> None:
    texts = {
        "a": "Customer invoices are generated nightly.",
        "b": "The customer portal moved to a new host.",
        "c": "客户发票",  # no English words: holds nothing
        "d": "Lunch menu for Friday.",
    }
    groups = [["customer", "client"], ["invoice", "receipt", "bill"], ["generate", "produce"]]
    share = translated_share(groups, texts)
    assert set(share) == {"a", "b"}
    assert share["a"] == pytest.approx(1.0)  # holds a word of every group
    assert 0 < share["b"] < 0.5  # only "customer", also held by "a": the least specific word
    assert translated_share([], texts) == {} and translated_share(groups, {}) == {}


def test_the_bridge_reads_only_the_searchs_candidates(palace: Palace) -> None:
    groups = crosslingual.translate(QUESTION)
    _, vector, lexical = palace.searching.search_candidates(QUESTION, None, None, 2)
    shares = translated_share(groups, palace.searching.candidate_texts(vector, lexical))
    candidates = {h[0] for h in vector} | {i for i, _ in lexical}
    assert set(shares) <= candidates


def test_a_minilm_palace_answers_a_chinese_question_from_an_english_note(
    tmp_path: Path,
) -> None:
    """MemPalace palaces stay on all-MiniLM-L6-v2, which reads no Chinese: the bridge is what
    lets a Chinese question reach their English notes."""
    found = palace_of_notes(tmp_path, NOTES, model="all-MiniLM-L6-v2")
    try:
        assert found.binding().model == "all-MiniLM-L6-v2"
        hits = found.search(QUESTION, limit=3)["results"]
        by_note = {h["source_file"]: h for h in hits}
        assert "en-invoices" in by_note, [h["source_file"] for h in hits]
        assert "translated" in by_note["en-invoices"]["matched_by"]
        english = found.search("How are customer invoices generated?", limit=1)["results"]
        assert english[0]["source_file"] == "en-invoices"
        # The memory protocol tells agents to search such a palace's Chinese notes in Chinese.
        printer = found.search("打印机的墨盒什么时候检查？", limit=1)["results"]
        assert printer[0]["source_file"] == "zh-printing"
    finally:
        found.close()


def test_the_designs_own_chinese_query_finds_the_decision(cli_json: Any, mined_notes: dict) -> None:
    """The design's end-to-end example searches the example notes in Chinese for why the team
    chose Clerk; the answer is the English ADR. Through the CLI, as a user runs it."""
    found = cli_json(
        "search", "决定用 Clerk 的原因", "-n", "3", "--palace", str(mined_notes["palace"])
    )
    top = found["results"][0]
    assert Path(top["source_file"]).name == "0006-auth0-to-clerk.md", found["results"]
    assert "translated" in top["matched_by"]
