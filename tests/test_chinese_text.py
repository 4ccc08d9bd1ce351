"""Chinese text in the parts that read text besides search: AAAK summaries, room routing,
wake-up's budget fitting and mining's chunk sizes."""

from __future__ import annotations

from pathlib import Path

from mempalace_cli.common.cjk import chinese_names, estimate_tokens
from mempalace_cli.memory import aaak
from mempalace_cli.memory.layers import fit_text
from mempalace_cli.miners.chunking import chunk_text
from mempalace_cli.miners.rooms import Room, detect_rooms, route_file

DECISION_ZH = (
    "周五架构评审会上，我们决定把消息推送从轮询改为长连接，原因是轮询每天多花两千元流量费。"
    "孙浩负责灰度发布，大家都担心老版本客户端的兼容性。"
)


def test_aaak_reads_a_chinese_decision() -> None:
    rec = aaak.analyze(DECISION_ZH, {"wing": "app", "room": "push"})
    assert "DECISION" in rec.flags and rec.hall == "decisions"
    assert "孙浩" in rec.entities.values()
    assert "anx" in rec.emotions
    assert rec.importance >= 3
    # The key is one of the two sentences, not the whole text.
    assert rec.key in {s.rstrip("。") + "。" for s in DECISION_ZH.split("。") if s}
    line = aaak.encode(DECISION_ZH, {"wing": "app", "room": "push"})
    assert aaak.parse(line).entities == rec.entities


def test_chinese_names_need_context() -> None:
    assert chinese_names("由王磊负责，预计六月底完成。") == ["王磊"]
    assert chinese_names("周末加班的方案还没定。") == []


def test_rooms_from_chinese_folder_names(tmp_path: Path) -> None:
    for folder, name in (("会议纪要", "周会.md"), ("设计文档", "搜索架构.md")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / name).write_text("内容", encoding="utf-8")
    rooms = detect_rooms(tmp_path)
    assert [r.name for r in rooms] == ["会议纪要", "设计文档"]
    assert route_file("会议纪要/周会.md", "", rooms) == "会议纪要"
    # By keywords in the text: two-character Chinese words count.
    topical = [Room("infra", ["部署", "集群"]), Room("people", ["招聘", "面试"])]
    assert route_file("notes/a.md", "下周招聘两名后端，面试安排在周三和周四。", topical) == "people"


def test_wake_up_cuts_chinese_between_characters() -> None:
    text = "我们决定把搜索服务迁移到新的集群，迁移前要先做压测。" * 5
    fitted = fit_text(text, estimate_tokens, 20)
    assert fitted.endswith(" …") and estimate_tokens(fitted) <= 20
    assert len(fitted) > 10  # before: no space to cut at, so nothing was kept


def test_chinese_chunks_hold_about_as_many_tokens_as_english_ones() -> None:
    zh = "".join(
        f"第{i}条：数据库备份每天凌晨两点执行，保留三十天，失败时通知值班同学。" for i in range(40)
    )
    chunks = chunk_text(zh)
    assert len(chunks) > 4
    assert all(estimate_tokens(c.text) <= 300 for c in chunks)
    assert "".join(c.text for c in chunks).startswith(zh[:100])
    # English chunking is unchanged: 800 characters.
    en = "The nightly backup runs at two and keeps thirty days of copies. " * 40
    assert max(len(c.text) for c in chunk_text(en)) <= 800
