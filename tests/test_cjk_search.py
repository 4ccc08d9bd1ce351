"""Chinese (and Japanese/Korean) text in the keyword index and in the default search: a real
palace, the real embedder, the CLI. Plus the one-time re-index of a catalogue made before
CJK bigrams."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from mempalace_cli.common.cjk import index_text
from mempalace_cli.embedders.base import Embedder
from mempalace_cli.service import open_palace
from mempalace_cli.storage.catalog import CATALOG_FILE, FTS_META, fts_query

REPORT_ZH = (
    "周三评审会决定：报表导出改成异步任务，导出完成后发邮件通知用户；"
    "超过十万行的报表不再支持直接下载。"
)
GATEWAY_ZH = "老赵负责的网关限流规则已经上线，单个 IP 每秒最多 20 次请求，超过后返回 429。"
OFFSITE_ZH = "团建定在下个月十五号，地点是西湖边的民宿，交通和住宿费用由公司承担。"
REPORT_EN = "The reporting service exports CSV synchronously today; large exports time out."
OFFSITE_EN = "The team offsite is planned for the lake house in spring; travel is reimbursed."
JAPANESE = "来週の会議で、検索機能のリリース日を決めます。担当は佐藤さんです。"
NOTES = {
    "report_zh": REPORT_ZH,
    "gateway_zh": GATEWAY_ZH,
    "offsite_zh": OFFSITE_ZH,
    "report_en": REPORT_EN,
    "offsite_en": OFFSITE_EN,
    "japanese": JAPANESE,
}


@pytest.fixture
def notes_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    for name, text in NOTES.items():
        (folder / f"{name}.md").write_text(text + "\n", encoding="utf-8")
    return folder


@pytest.fixture
def mined(cli_json, notes_dir: Path, tmp_path: Path) -> Path:
    palace = tmp_path / "palace"
    cli_json("--palace", palace, "mine", notes_dir)
    return palace


def top_files(result: dict, n: int = 3) -> list[str]:
    return [Path(r["source_file"]).stem for r in result["results"][:n]]


def test_chinese_keyword_inside_a_sentence_is_found(cli_json, mined: Path) -> None:
    # "异步" is two characters in the middle of a run of Chinese with no spaces.
    result = cli_json("--palace", mined, "search", "异步")
    assert top_files(result, 1) == ["report_zh"]
    assert "lexical" in result["results"][0]["matched_by"]


def test_chinese_paraphrase_finds_the_chinese_note(cli_json, mined: Path) -> None:
    result = cli_json("--palace", mined, "search", "为什么大的报表现在不能直接下载了？")
    assert top_files(result, 1) == ["report_zh"]


def test_chinese_keyword_search_by_lexical_mode_only(cli_json, mined: Path) -> None:
    result = cli_json("--palace", mined, "search", "限流", "--mode", "lexical")
    assert top_files(result) == ["gateway_zh"]


def test_japanese_keyword_is_found(cli_json, mined: Path) -> None:
    result = cli_json("--palace", mined, "search", "検索機能", "--mode", "lexical")
    assert top_files(result, 1) == ["japanese"]


def test_english_keyword_search_still_stems(cli_json, mined: Path) -> None:
    # porter unicode61 is kept for English: "exporting" matches "exports".
    result = cli_json("--palace", mined, "search", "exporting", "--mode", "lexical")
    assert top_files(result, 1) == ["report_en"]


def test_a_latin_word_glued_to_chinese_is_its_own_keyword(home: Path, embedder: Embedder):
    palace = open_palace()
    palace.add_drawer("ops", "cache", "会话缓存用Redis的SETNX实现，过期时间24小时。")
    palace.add_drawer("ops", "other", "日志保存三十天。")
    hits = palace.search("setnx", mode="lexical")["results"]
    assert [h["room"] for h in hits] == ["cache"]
    palace.close()


def test_an_edited_drawer_is_reindexed(home: Path, embedder: Embedder) -> None:
    palace = open_palace()
    drawer_id = palace.add_drawer("ops", "notes", "网关限流规则已经上线。")["drawer_id"]
    with palace.catalog.transaction() as conn:
        conn.execute(
            "UPDATE drawers SET text = ? WHERE id = ?", ("数据库备份改到凌晨。", drawer_id)
        )
    assert palace.catalog.lexical_search("限流", 5) == []
    assert [i for i, _ in palace.catalog.lexical_search("备份", 5)] == [drawer_id]
    palace.close()


class _Notices(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def notices() -> Iterator[list[str]]:
    """The one-time notices the core logs (mempalace.notice), as their messages."""
    handler = _Notices()
    log = logging.getLogger("mempalace.notice")
    log.addHandler(handler)
    yield handler.messages
    log.removeHandler(handler)


def test_old_catalogue_is_reindexed_once_with_a_notice(
    home: Path, embedder: Embedder, notices: list[str]
) -> None:
    palace = open_palace()
    palace.add_drawers(
        [{"wing": "w", "room": "r", "content": t} for t in (REPORT_ZH, GATEWAY_ZH, REPORT_EN)]
    )
    path = palace.path
    palace.close()
    # Make it the catalogue an older version wrote: unicode61 over the raw text, no marker.
    conn = sqlite3.connect(path / CATALOG_FILE)
    for trigger in ("drawers_ai", "drawers_ad", "drawers_au"):
        conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    conn.execute("DROP TABLE drawer_fts")
    conn.execute(
        "CREATE VIRTUAL TABLE drawer_fts USING fts5(text, content='drawers', "
        "content_rowid='rowid', tokenize='porter unicode61 remove_diacritics 2')"
    )
    conn.execute("INSERT INTO drawer_fts(drawer_fts) VALUES ('rebuild')")
    conn.execute("DELETE FROM meta WHERE key = ?", (FTS_META,))
    conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    conn.commit()
    old = [r[0] for r in conn.execute("SELECT rowid FROM drawer_fts WHERE drawer_fts MATCH '异步'")]
    conn.close()
    assert old == []  # the old index can't find a word inside a Chinese sentence

    palace = open_palace()
    hits = palace.search("异步", mode="lexical")["results"]
    assert [h["text"] for h in hits] == [REPORT_ZH]
    assert len(notices) == 1 and "Re-indexed 3 drawers" in notices[0]
    palace.close()

    palace = open_palace()
    assert [h["text"] for h in palace.search("限流", mode="lexical")["results"]] == [GATEWAY_ZH]
    assert len(notices) == 1  # once only
    palace.close()


def test_reindex_notice_reaches_the_cli_user(cli, mined: Path) -> None:
    conn = sqlite3.connect(mined / CATALOG_FILE)
    conn.execute("DELETE FROM meta WHERE key = ?", (FTS_META,))
    conn.commit()
    conn.close()
    result = cli("--palace", mined, "search", "限流", "--json")
    assert "Re-indexed" in result.stderr and "Chinese" in result.stderr
    assert "gateway_zh" in result.stdout
    again = cli("--palace", mined, "search", "限流", "--json")
    assert "Re-indexed" not in again.stderr


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("异步", '"异步"'),
        ("报表导出", '"报表" OR "表导" OR "导出"'),
        ("为什么 Redis", '"redis"'),  # question words are no keyword
        ("谁", '"谁" *'),
        ("用Redis的SETNX", '"redis" OR "setnx"'),
        ("the", '"the"'),
        ("？？", None),
        ('"\ud800"', None),
    ],
)
def test_query_terms(query: str, expected: str | None) -> None:
    assert fts_query(query) == expected


def test_index_text_splits_cjk_runs_and_keeps_latin() -> None:
    assert index_text("用Redis的SETNX实现") == " 用 Redis 的 SETNX 实现 "
    assert index_text("plain English, unchanged") == "plain English, unchanged"
    assert index_text("한국어 검색") == " 한국 국어   검색 "
