"""What a search's ranking keeps after fusion (search_rules.py), seen through `mempalace
search --json`, its terminal output and MCP `mempalace_search`: a Chinese question's own-language
notes before English notes only the dictionary reached, copies folded into one hit with a count,
and a diary entry after the drawer it talks about.

The mixed palace of issue 27: examples/notes mined through the CLI, two Chinese notes (written
for this test, consistent with ADR-0006) saying why the team switched from Auth0 to Clerk, and
an agent's diary entry about that decision, written twice. The real default model throughout."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from mempalace_cli.common.config import resolve_settings
from mempalace_cli.embedders.base import Embedder
from mempalace_cli.search.fusion import LATIN, script_of
from mempalace_cli.service import Palace
from tests.conftest import NOTES
from tests.conftest import run_cli as run
from tests.conftest import search_hits as search
from tests.test_mcp_support import stdio_session

# "Why we switched to Clerk": the Auth0 renewal price and the features only on its higher tier.
WHY_CLERK = """# 为什么改用 Clerk

2026 年 3 月，团队决定把 Harbor Cloud 的登录从 Auth0 换成 Clerk。主要原因是价格：Auth0 的续费报价在\
月活跃用户超过 7,500 之后大约每月 1,150 美元，而且通行密钥和自定义域名只在更贵的套餐里。Clerk 在\
一万月活以内免费，之后每个月活 0.02 美元，通行密钥、Google 和 Apple 登录都包含在内。
"""
# "The other reason: single sign-on and integration": prebuilt React components, JWKS.
CLERK_SSO = """# 选择 Clerk 的另一个原因：单点登录和集成

除了价格，我们放弃 Auth0、选择 Clerk 还因为单点登录和前端集成更简单：Clerk 自带的 React 组件可以\
直接用在 PWA 里，社交登录不用自己写；会话令牌通过 JWKS 离线验证，Go 接口处理每个请求时不需要再调用\
认证服务。Tomás 花了三天做原型验证了这些。
"""
CHINESE_NOTES = {"why-clerk-zh.md": WHY_CLERK, "clerk-sso-zh.md": CLERK_SSO}
DIARY = (
    "Reviewed ADR-0006 with Tomás: we switched from Auth0 to Clerk because the Auth0 renewal "
    "got too expensive; the Clerk migration is on track."
)
ADR = "0006-auth0-to-clerk.md"


def name(hit: dict[str, Any]) -> str:
    return Path(hit["source_file"]).name if hit["source_file"] else hit["wing"]


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("mixed")
    notes = base / "notes"
    shutil.copytree(NOTES, notes, ignore=shutil.ignore_patterns("mempalace.toml"))
    for file, text in CHINESE_NOTES.items():
        (notes / "decisions" / file).write_text(text, encoding="utf-8")
    palace = base / "palace"
    run("--palace", palace, "mine", notes, "--json")
    for _ in range(2):  # the agent filed the same entry twice
        run("--palace", palace, "diary", "write", "claude", DIARY, "--topic", "auth")
    return {"palace": palace, "base": base}


def test_a_chinese_question_ranks_the_adr_then_its_own_language_notes(mixed: dict) -> None:
    """The design's own question: the ADR first, then both Chinese notes, above every English
    note that only the dictionary reached (it does not hold the question's name, Clerk; the
    vector side finds it less close than the Chinese notes)."""
    hits = search(mixed["palace"], "决定用 Clerk 的原因", "-n", "10")
    names = [name(h) for h in hits]
    assert names[0] == ADR, names
    chinese = [n for n, h in enumerate(hits) if name(h) in CHINESE_NOTES]
    assert len(chinese) == 2, names
    bridge_only = [
        n
        for n, h in enumerate(hits)
        if script_of(h["text"]) == LATIN
        and "translated" in h["matched_by"]
        and "lexical" not in h["matched_by"]
    ]
    assert bridge_only, "the dictionary reached no English note: nothing was tested"
    assert max(chinese) < min(bridge_only), [
        (n, h["matched_by"]) for n, h in zip(names, hits, strict=True)
    ]


def test_the_note_titled_as_the_question_beats_english_hits_the_vector_side_calls_unrelated(
    mixed: dict,
) -> None:
    """ "为什么改用 Clerk" (why switch to Clerk): every English note mentioning Clerk holds the
    question's words through the dictionary; the ones the vector side finds unrelated
    (similarity about 0) no longer outrank the Chinese note of that title, which both sides
    found (it was 12th, below five of them)."""
    hits = search(mixed["palace"], "为什么改用 Clerk", "-n", "10")
    names = [name(h) for h in hits]
    assert "why-clerk-zh.md" in names, names
    at = names.index("why-clerk-zh.md")
    assert hits[at]["similarity"] > 0.1
    for hit in hits[:at]:
        # Above it: English drawers the vector side found closer than unrelated, the diary
        # entry (the vector side's first), and the ADR chunk that entry talks about.
        assert hit["similarity"] > 0.05 or name(hit) == ADR, (names, hit)


def test_identical_diary_entries_are_one_hit_with_a_count(mixed: dict) -> None:
    entries = json.loads(
        run("--palace", mixed["palace"], "diary", "read", "claude", "--json").stdout
    )["entries"]
    assert len(entries) == 2  # both are stored; search shows them once
    ids = {e["drawer_id"] for e in entries}
    hits = search(mixed["palace"], "why did we switch to Clerk?", "-n", "5")
    diary = [h for h in hits if h["wing"] == "wing_claude"]
    assert len(diary) == 1, [h["drawer_id"] for h in hits]
    assert diary[0]["duplicates"] == 1
    assert {diary[0]["drawer_id"], *diary[0]["duplicate_ids"]} == ids
    assert all("duplicates" not in h for h in hits if h is not diary[0])
    # Five distinct hits: the copy does not take a place.
    assert len(hits) == 5 and len({h["text"] for h in hits}) == 5

    shown = run("--palace", mixed["palace"], "search", "why did we switch to Clerk?", "-n", "5")
    # On the hit's header, after its drawer id (a narrow terminal may wrap it to the next line).
    assert shown.stdout.count("(+1 copy)") == 1
    after_id = shown.stdout.split(diary[0]["drawer_id"], 1)[1]
    assert after_id.lstrip().startswith("(+1 copy)")


def test_a_diary_entry_ranks_below_the_drawer_it_talks_about(mixed: dict) -> None:
    """The entry restates ADR-0006 in a few words, so the fusion scores it above the ADR
    (higher similarity and score); the ADR's chunk that holds most of its words comes first."""
    fusion_put_the_diary_first = []
    # (a third question, asked since the neighbour lift was tried on notes too; kept: on each
    # of them the fusion alone may put the entry above the ADR's first chunk)
    asked = ("why did we switch to Clerk?", "为什么改用 Clerk", "is the Clerk migration on track?")
    for query in asked:
        hits = search(mixed["palace"], query, "-n", "10")
        at_diary = next(n for n, h in enumerate(hits) if h["wing"] == "wing_claude")
        at_adr = next(n for n, h in enumerate(hits) if name(h) == ADR and h["line_start"] == 1)
        assert at_adr < at_diary, [name(h) for h in hits]
        fusion_put_the_diary_first.append(hits[at_diary]["rank_score"] > hits[at_adr]["rank_score"])
    assert any(fusion_put_the_diary_first)  # the rule, not the fusion, put the ADR first
    # With a wing filter the entry has no source to follow and stays where it was.
    own = search(mixed["palace"], "why did we switch to Clerk?", "--wing", "wing_claude")
    assert [h["wing"] for h in own] == ["wing_claude"]


def test_mcp_search_says_how_many_copies_a_hit_stands_for(mixed: dict) -> None:
    home = mixed["base"] / "mcp-home"
    home.mkdir(exist_ok=True)
    with stdio_session(mixed["palace"], home, mixed["base"] / "mcp.log") as mcp:
        found = mcp.ok("mempalace_search", {"query": "why did we switch to Clerk?", "limit": 5})
    diary = [h for h in found["results"] if h["wing"] == "wing_claude"]
    assert len(diary) == 1
    assert diary[0]["duplicates"] == 1 and len(diary[0]["duplicate_ids"]) == 1
    assert diary[0]["duplicate_ids"][0] != diary[0]["drawer_id"]
    assert all("duplicates" not in h for h in found["results"] if h is not diary[0])


def test_near_exact_copies_fold_and_a_changed_fact_does_not(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same words in another wing, or with other case, spacing and punctuation, are
    copies; the same sentence with another day is another fact and stays its own hit."""
    home = tmp_path / "home"
    home.mkdir()
    palace = Palace(resolve_settings(tmp_path / "palace", home=home))
    said = "The staging database restore drill runs on Tuesday at 09:00 UTC."
    filed = palace.add_drawers(
        [
            {"wing": "ops", "room": "drills", "content": said},
            {"wing": "backup", "room": "drills", "content": said},
            {
                "wing": "ops",
                "room": "inbox",
                "content": "the staging database restore drill runs on tuesday, at 09:00 utc",
            },
            {"wing": "ops", "room": "drills", "content": said.replace("Tuesday", "Thursday")},
            {"wing": "ops", "room": "people", "content": "Priya owns the on-call rotation."},
        ]
    )
    assert filed["added"] == 5
    palace.close()
    monkeypatch.setenv("MEMPALACE_HOME", str(home))
    hits = search(tmp_path / "palace", "when is the restore drill?", "-n", "2")
    assert len(hits) == 2
    copies = next(h for h in hits if h.get("duplicates"))
    other = next(h for h in hits if h is not copies)
    assert copies["duplicates"] == 2
    assert {copies["drawer_id"], *copies["duplicate_ids"]} == set(filed["drawer_ids"][:3])
    assert "Thursday" in other["text"]  # the other fact is the other hit
    assert "duplicates" not in other
    shown = run("--palace", tmp_path / "palace", "search", "when is the restore drill?", "-n", "2")
    assert "(+2 copies)" in shown.stdout
