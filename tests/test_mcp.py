"""`mempalace serve-mcp` driven by the MCP SDK's own client, over stdio and streamable HTTP.

One server subprocess per transport (the module fixture is parametrised, so pytest runs every
test against the stdio server, then every test against the HTTP server), each on its own small
mined palace.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mempalace_cli.cli import app
from mempalace_cli.embedders.base import Embedder
from mempalace_cli.mcp.tools import MCP_TOOL_NAMES, READ_TOOLS
from mempalace_cli.service import open_palace
from tests.test_mcp_support import McpSession, http_session, stdio_session

NOTES = Path(__file__).resolve().parent.parent / "examples" / "notes"
# Two wings sharing the room "decisions", so the palace graph has a tunnel.
FIXTURE = {
    "atlas": [
        "decisions/0001-postgres-for-metadata.md",
        "decisions/0002-minio-object-storage.md",
        "project/architecture.md",
        "project/release-checklist.md",
    ],
    "bramble": ["decisions/0007-pricing-tiers.md", "people/maya-okafor.md"],
}
DIARY_TEXT = "Reviewed the storage decision; MinIO stays. Next: benchmark restores."
NEW_TEXT = "The staging cluster is rebuilt every Sunday night at 02:00 UTC by the infra cron job."
MINE_ROOT = "agent-may-mine"  # next to the palace: the fixture's servers start with --mine-root


def mine_fixture(base: Path) -> Path:
    palace = base / "palace"
    for wing, files in FIXTURE.items():
        for rel in files:
            dest = base / wing / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(NOTES / rel, dest)
        result = CliRunner().invoke(app, ["--palace", str(palace), "mine", str(base / wing)])
        assert result.exit_code == 0, result.stdout + result.stderr
    return palace


@pytest.fixture(scope="module", params=["stdio", "http"])
def mcp(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, embedder: Embedder
) -> Iterator[McpSession]:
    base = tmp_path_factory.mktemp(f"mcp-{request.param}")
    palace = mine_fixture(base)
    home = base / "home"
    home.mkdir()
    (base / MINE_ROOT).mkdir()  # the one folder these servers may mine over MCP
    start = stdio_session if request.param == "stdio" else http_session
    with start(palace, home, base / "server.log", "--mine-root", str(base / MINE_ROOT)) as session:
        yield session


def test_initialize_returns_the_protocol_as_instructions(mcp: McpSession) -> None:
    expected = open_palace(str(mcp.palace)).protocol()
    assert mcp.instructions == expected
    assert "mempalace_search" in expected


def test_tools_list_has_every_tool_with_described_fields(mcp: McpSession) -> None:
    tools = {t.name: t for t in mcp.list_tools()}
    assert set(tools) == set(MCP_TOOL_NAMES)
    for tool in tools.values():
        assert tool.description, tool.name
        assert tool.input_schema["type"] == "object"
        for field, spec in tool.input_schema.get("properties", {}).items():
            assert spec.get("description"), f"{tool.name}.{field} has no description"
        # No stray indentation or line breaks carried over from source code.
        assert tool.description == " ".join(tool.description.split()), tool.name
        assert tool.input_schema.get("additionalProperties") is False
        assert tool.output_schema and tool.output_schema["type"] == "object", tool.name
        assert tool.output_schema["properties"], tool.name
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is (tool.name in READ_TOOLS)
        assert tool.annotations.read_only_hint is not tool.name.startswith(
            (
                "mempalace_add",
                "mempalace_delete",
                "mempalace_update",
                "mempalace_mine",
                "mempalace_diary_write",
                "mempalace_kg_add",
                "mempalace_kg_invalidate",
                "mempalace_kg_supersede",
                "mempalace_create_tunnel",
                "mempalace_checkpoint",
                "mempalace_sync",
                "mempalace_hook_settings",
                # the coordination log's writes (mcp/tools_log.py)
                "mempalace_event_append",
                "mempalace_event_ack",
                "mempalace_task_create",
                "mempalace_artifact_put",
                "mempalace_patch_submit",
            )
        ), tool.name
    assert tools["mempalace_delete_drawer"].annotations.destructive_hint is True
    assert tools["mempalace_add_drawer"].annotations.destructive_hint is False
    search = tools["mempalace_search"].input_schema
    assert search["required"] == ["query"]
    assert "mempalace_status" in search["properties"]["wing"]["description"]
    assert tools["mempalace_kg_add"].input_schema["required"] == ["subject", "predicate", "object"]


def test_status_gives_overview_protocol_and_dialect(mcp: McpSession) -> None:
    status = mcp.ok("mempalace_status")
    assert set(status) == {
        "total_drawers",
        "embedding_model",
        "wings",
        "taxonomy",
        "rooms",
        "palace_path",
        "protocol",
        "aaak_dialect",
    }
    assert status["palace_path"] == str(mcp.palace)
    assert set(status["wings"]) == {"atlas", "bramble"}
    assert status["total_drawers"] == sum(status["wings"].values()) > 0
    assert status["protocol"] == mcp.instructions
    assert status["aaak_dialect"]
    # The model queries are embedded with: an agent reads it to know which language to search in.
    assert status["embedding_model"] == "use-multilingual-v3"
    assert "all-MiniLM-L6-v2" in status["protocol"]

    assert set(mcp.ok("mempalace_list_wings")["wings"]) == {"atlas", "bramble"}
    rooms = mcp.ok("mempalace_list_rooms", {"wing": "bramble"})["rooms"]
    assert "decisions" in rooms
    taxonomy = mcp.ok("mempalace_get_taxonomy")["taxonomy"]
    assert taxonomy["bramble"] == rooms
    assert mcp.ok("mempalace_get_aaak_spec")["aaak_spec"] == status["aaak_dialect"]


def test_search_returns_verbatim_drawers_and_the_filters(mcp: McpSession) -> None:
    found = mcp.ok("mempalace_search", {"query": "why did we pick MinIO for object storage"})
    assert found["query"] == "why did we pick MinIO for object storage"
    assert found["filters"] == {"wing": None, "room": None}
    results = found["results"]
    assert 0 < len(results) <= 5
    top = results[0]
    assert set(top) == {
        "drawer_id",
        "text",
        "wing",
        "room",
        "source_file",
        "date",
        "similarity",
        "matched_by",
    }
    assert top["source_file"].endswith("0002-minio-object-storage.md")
    assert top["date"] == "2026-01-15"  # the ADR's Date: line, not the file's time
    assert set(top["matched_by"]) == {"vector", "lexical"}
    assert (
        top["text"]
        in (mcp.palace.parent / "atlas/decisions/0002-minio-object-storage.md").read_text()
    )
    assert 0 < top["similarity"] <= 1

    only = mcp.ok("mempalace_search", {"query": "pricing", "wing": "bramble", "limit": 2})
    assert only["filters"] == {"wing": "bramble", "room": None}
    assert 0 < len(only["results"]) <= 2
    assert {r["wing"] for r in only["results"]} == {"bramble"}
    # One name rule: a filter is read the way names are filed.
    capital = mcp.ok("mempalace_search", {"query": "pricing", "wing": "Bramble", "limit": 2})
    assert capital["results"] == only["results"]
    missed = mcp.ok("mempalace_search", {"query": "pricing", "wing": "bramblee"})
    assert missed["results"] == [] and "bramble" in missed["hint"]
    # A search loads chromadb and onnxruntime in the server; nothing they print reached stdout.
    assert mcp.transport_errors == []


QUESTION_ZH = "我们为什么选择这个对象存储"  # why did we choose this object storage


@pytest.mark.xfail(
    strict=True,
    reason="known miss since the worst-fold fusion (keywords x4, vector spread floor 0.1): the "
    "MinIO ADR, which the vector side ranks first, falls out of the top 3 for this question "
    "because the dictionary bridge (x16 its share) outweighs the vector side; the fix is the "
    "bridge weight, to be chosen by the same worst-fold CV (see benchmarks/README.md)",
)
def test_search_says_which_side_found_a_chinese_questions_english_note(mcp: McpSession) -> None:
    """An agent is told a hit came through the dictionary, not only that it ranked."""
    found = mcp.ok("mempalace_search", {"query": QUESTION_ZH, "limit": 3})
    by_file = {Path(r["source_file"]).name: r for r in reversed(found["results"])}
    minio = by_file["0002-minio-object-storage.md"]
    assert "translated" in minio["matched_by"] and "lexical" not in minio["matched_by"]


@pytest.mark.xfail(
    strict=True,
    reason="known miss: ADR-0001 holds a word for each of 我们, 选择, 对象 and 存储 (we, "
    "options, object, store) while ADR-0002 has none for 选择, and the dictionary bridge "
    "outweighs the vector side, which prefers ADR-0002; the MinIO note is 3rd",
)
def test_a_chinese_question_ranks_its_english_note_first(mcp: McpSession) -> None:
    found = mcp.ok("mempalace_search", {"query": QUESTION_ZH, "limit": 3})
    assert found["results"][0]["source_file"].endswith("0002-minio-object-storage.md")


def test_add_drawer_rejects_duplicates_then_delete(mcp: McpSession) -> None:
    added = mcp.ok(
        "mempalace_add_drawer",
        {"wing": "atlas", "room": "ops", "content": NEW_TEXT, "added_by": "test-agent"},
    )
    assert added["success"] is True
    drawer_id = added["drawer_id"]
    assert drawer_id.startswith("drawer_atlas_ops_")

    again = mcp.ok("mempalace_add_drawer", {"wing": "atlas", "room": "ops", "content": NEW_TEXT})
    assert again["success"] is True and again["drawer_id"] == drawer_id

    near = mcp.ok(
        "mempalace_add_drawer",
        {"wing": "bramble", "room": "ops", "content": NEW_TEXT.replace("02:00", "2:00")},
    )
    assert near["success"] is False and near["reason"] == "duplicate"
    assert near["matches"][0]["drawer_id"] == drawer_id

    dup = mcp.ok("mempalace_check_duplicate", {"content": NEW_TEXT})
    assert dup["is_duplicate"] is True
    assert dup["matches"][0]["drawer_id"] == drawer_id and dup["matches"][0]["similarity"] >= 0.9
    stored = open_palace(str(mcp.palace)).get_drawer(drawer_id)
    assert stored["text"] == NEW_TEXT
    assert stored["metadata"]["added_by"] == "test-agent" and stored["filed_at"]

    assert mcp.ok("mempalace_delete_drawer", {"drawer_id": drawer_id})["success"] is True
    assert mcp.ok("mempalace_check_duplicate", {"content": NEW_TEXT})["is_duplicate"] is False
    message = mcp.error("mempalace_delete_drawer", {"drawer_id": drawer_id})
    assert "No drawer with id" in message and "drawer_id" in message


def test_knowledge_graph_round_trip(mcp: McpSession) -> None:
    fact = {
        "subject": "Maya",
        "predicate": "works_on",
        "object": "Atlas",
        "valid_from": "2025-01-01",
    }
    added = mcp.ok("mempalace_kg_add", fact)
    assert added["created"] is True and added["triple_id"]
    assert mcp.ok("mempalace_kg_add", fact)["created"] is False
    mcp.ok(
        "mempalace_kg_add",
        {
            "subject": "Maya",
            "predicate": "lives_in",
            "object": "Lisbon",
            "valid_from": "2025-09-01",
        },
    )

    now = mcp.ok("mempalace_kg_query", {"entity": "Maya"})
    assert now["entity"] == "Maya" and now["count"] == 2 and len(now["facts"]) == 2
    assert {"entity", "as_of", "facts", "count"} <= set(now)

    ended = mcp.ok(
        "mempalace_kg_invalidate",
        {"subject": "Maya", "predicate": "works_on", "object": "Atlas", "ended": "2026-01-01"},
    )
    assert ended["invalidated"] == 1
    before = mcp.ok("mempalace_kg_query", {"entity": "Maya", "as_of": "2025-06-01"})
    assert {f["predicate"] for f in before["facts"]} == {"works_on"}
    after = mcp.ok("mempalace_kg_query", {"entity": "Maya", "as_of": "2026-06-01"})
    assert {f["predicate"] for f in after["facts"]} == {"lives_in"}
    incoming = mcp.ok("mempalace_kg_query", {"entity": "Atlas", "direction": "incoming"})
    assert incoming["count"] == 1  # invalidated, not deleted

    timeline = mcp.ok("mempalace_kg_timeline", {"entity": "Maya"})
    assert timeline["count"] == 2
    stats = mcp.ok("mempalace_kg_stats")
    assert (stats["triples"], stats["current_facts"], stats["expired_facts"]) == (2, 1, 1)
    assert stats["entities"] == 3 and stats["predicates"] == {"lives_in": 1, "works_on": 1}


def test_kg_source_closet_switch_over_day_and_supersede(mcp: McpSession) -> None:
    added = mcp.ok(
        "mempalace_kg_add",
        {"subject": "Orion", "predicate": "stored_in", "object": "S3", "source_closet": "D-17"},
    )
    assert added["source_closet"] == "D-17"
    fact = mcp.ok("mempalace_kg_query", {"entity": "Orion"})["facts"][0]
    assert fact["source"] == "D-17" and fact["source_closet"] == "D-17"

    for obj, start, end in (("Auth0", "2025-06-01", "2026-03-12"), ("Clerk", "2026-03-12", None)):
        args = {"subject": "Orion", "predicate": "uses", "object": obj, "valid_from": start}
        mcp.ok("mempalace_kg_add", args | ({"valid_to": end} if end else {}))
    day = mcp.ok("mempalace_kg_query", {"entity": "Orion", "as_of": "2026-03-12"})
    assert {f["object"] for f in day["facts"] if f["predicate"] == "uses"} == {"Auth0", "Clerk"}

    switched = mcp.ok(
        "mempalace_kg_supersede",
        {
            "subject": "Orion",
            "predicate": "stored_in",
            "old_object": "S3",
            "new_object": "MinIO",
            "at": "2026-05-01",
        },
    )
    assert switched["started"]["object"] == "MinIO"
    facts = mcp.ok("mempalace_kg_query", {"entity": "Orion"})["facts"]
    current = [f["object"] for f in facts if f["predicate"] == "stored_in" and f["current"]]
    assert current == ["MinIO"]

    page = mcp.ok("mempalace_kg_timeline", {"entity": "Orion", "limit": 2, "offset": 1})
    everything = mcp.ok("mempalace_kg_timeline", {"entity": "Orion"})["facts"]
    assert [f["triple_id"] for f in page["facts"]] == [f["triple_id"] for f in everything[1:3]]


def test_diary_write_then_read(mcp: McpSession) -> None:
    # MemPalace's argument names...
    written = mcp.ok(
        "mempalace_diary_write",
        {"agent_name": "claude", "entry": DIARY_TEXT, "topic": "storage"},
    )
    assert written["success"] is True and written["topic"] == "storage"
    assert written["agent"] == "claude" and written["wing"] == "wing_claude"
    assert written["drawer_id"].startswith("drawer_wing_claude_")
    read = mcp.ok("mempalace_diary_read", {"agent_name": "claude"})
    assert read["wing"] == "wing_claude" and read["total"] == len(read["entries"]) == 1
    entry = read["entries"][0]
    assert entry["content"] == DIARY_TEXT and entry["topic"] == "storage"
    assert entry["drawer_id"] == written["drawer_id"] and entry["timestamp"] == written["timestamp"]
    # ...and this server's earlier names, as aliases.
    mcp.ok("mempalace_diary_write", {"agent": "claude", "content": "Second entry."})
    last = mcp.ok("mempalace_diary_read", {"agent": "claude", "last": 1})
    assert [e["content"] for e in last["entries"]] == ["Second entry."]
    assert mcp.ok("mempalace_diary_read", {"agent_name": "claude", "last_n": 5})["total"] == 2
    nameless = mcp.error("mempalace_diary_write", {"agent_name": "🎉🎉", "entry": "secret"})
    assert "no letters or digits" in nameless


def test_palace_graph_navigation(mcp: McpSession) -> None:
    walked = mcp.ok("mempalace_traverse", {"start_room": "decisions", "max_hops": 2})
    assert walked["found"] is True and walked["start"] == "decisions"
    hops = {r["room"]: r["hop"] for r in walked["results"]}
    # decisions is in both wings: one hop reaches atlas's project and bramble's people.
    assert hops == {"decisions": 0, "project": 1, "people": 1} and walked["count"] == 3
    tunnels = mcp.ok("mempalace_find_tunnels", {"wing_a": "atlas", "wing_b": "bramble"})
    assert tunnels["count"] == 1 and tunnels["tunnels"][0]["room"] == "decisions"
    assert tunnels["tunnels"][0]["wings"] == ["atlas", "bramble"]
    stats = mcp.ok("mempalace_graph_stats")
    # Other tests in this module may add a diary wing (its own room, no tunnel).
    mined = {w: n for w, n in stats["rooms_per_wing"].items() if w in FIXTURE}
    assert mined == {"atlas": 2, "bramble": 2} and stats["tunnels"] == 1
    assert stats["wings"] == len(stats["rooms_per_wing"])
    assert stats["top_tunnels"][0]["room"] == "decisions"


def test_wake_up_fits_its_budget(mcp: McpSession) -> None:
    woke = mcp.ok("mempalace_wake_up", {"budget": 400})
    assert woke["text"].strip()
    assert woke["budget"] == 400 and woke["total_tokens"] <= 400


def test_new_drawer_tools_round_trip(mcp: McpSession) -> None:
    added = mcp.ok(
        "mempalace_add_drawer", {"wing": "Team Notes", "room": "Infra", "content": NEW_TEXT}
    )
    drawer_id = added["drawer_id"]
    assert (added["wing"], added["room"]) == ("team_notes", "infra")
    found = mcp.ok("mempalace_search", {"query": "staging cluster rebuild", "wing": "Team Notes"})
    assert [r["drawer_id"] for r in found["results"]] == [drawer_id]

    assert mcp.ok("mempalace_get_drawer", {"drawer_id": drawer_id})["text"] == NEW_TEXT
    got = mcp.ok("mempalace_get_drawers", {"drawer_ids": [drawer_id, "drawer_nope"]})
    assert [d["drawer_id"] for d in got["drawers"]] == [drawer_id]
    assert got["missing"] == ["drawer_nope"]
    listed = mcp.ok("mempalace_list_drawers", {"wing": "Team Notes", "limit": 5})
    assert [d["drawer_id"] for d in listed["drawers"]] == [drawer_id] and listed["total"] == 1

    edited = "The coffee machine on floor three is descaled every second Friday by Lena."
    done = mcp.ok("mempalace_update_drawer", {"drawer_id": drawer_id, "content": edited})
    assert done["success"] is True and done["content_changed"] is True
    after = mcp.ok("mempalace_search", {"query": "coffee machine descaling", "wing": "team_notes"})
    assert after["results"][0]["drawer_id"] == drawer_id
    assert after["results"][0]["text"] == edited
    gone = mcp.ok("mempalace_search", {"query": "staging cluster rebuild", "wing": "team_notes"})
    assert NEW_TEXT not in [r["text"] for r in gone["results"]]

    dry = mcp.ok("mempalace_delete_drawers", {"drawer_ids": [drawer_id], "dry_run": True})
    assert dry["dry_run"] is True and dry["removed"] == 0 and dry["matched"] == 1
    assert mcp.ok("mempalace_get_drawer", {"drawer_id": drawer_id})["drawer_id"] == drawer_id
    removed = mcp.ok("mempalace_delete_drawers", {"drawer_ids": [drawer_id], "dry_run": False})
    assert removed["removed"] == 1
    assert "No drawer with id" in mcp.error("mempalace_get_drawer", {"drawer_id": drawer_id})


def test_delete_by_source_and_mine(mcp: McpSession) -> None:
    folder = mcp.palace.parent / MINE_ROOT / "mined-by-agent"
    (folder / "ops").mkdir(parents=True)
    (folder / "ops" / "runbook.md").write_text(
        "# Runbook\n\nRestart the ingest worker with systemctl restart ingest after a deploy.\n"
    )
    dry = mcp.ok("mempalace_mine", {"source": str(folder), "dry_run": True})
    assert dry["dry_run"] is True and dry["files"]["mined"] == 1
    mined = mcp.ok("mempalace_mine", {"source": str(folder), "wing": "agent_mined"})
    assert mined["wing"] == "agent_mined" and mined["drawers"]["added"] >= 1
    again = mcp.ok("mempalace_mine", {"source": str(folder), "wing": "agent_mined"})
    assert again["files"]["unchanged"] == 1 and again["drawers"]["added"] == 0

    # A bare file name is no source: it could match every same-named file in the palace.
    assert "No drawers come from" in mcp.error(
        "mempalace_delete_by_source", {"source_file": "runbook.md"}
    )
    preview = mcp.ok("mempalace_delete_by_source", {"source_file": str(folder), "dry_run": True})
    assert preview["matched"] == mined["drawers"]["added"] and preview["removed"] == 0
    deleted = mcp.ok("mempalace_delete_by_source", {"source_file": str(folder), "dry_run": False})
    assert deleted["removed"] == preview["matched"]
    found = mcp.ok(
        "mempalace_search", {"query": "restart the ingest worker", "wing": "agent_mined"}
    )
    assert found["results"] == [] and "hint" in found
    # MemPalace's include_ignored is accepted, and the result says it was not acted on.
    dry = mcp.ok(
        "mempalace_mine", {"source": str(folder), "include_ignored": ["x"], "dry_run": True}
    )
    assert ".gitignore" in dry["ignored_arguments"]["include_ignored"]


def test_unknown_arguments_are_errors_naming_them(mcp: McpSession) -> None:
    message = mcp.error("mempalace_search", {"query": "storage", "n_results": 1})
    assert "unknown argument 'n_results'" in message
    assert "accepted: query, limit, wing, room" in message
    message = mcp.error("mempalace_status", {"verbose": True})
    assert "unknown argument 'verbose'" in message and "accepted: none" in message
    # A MemPalace argument is accepted; a value its schema does not allow is still refused.
    message = mcp.error("mempalace_search", {"query": "x", "candidate_strategy": "bm25"})
    assert "'candidate_strategy' is invalid: use one of vector, union" in message
    clash = mcp.error("mempalace_diary_read", {"agent": "a", "agent_name": "b"})
    assert "mean the same thing" in clash


BIG = "x" * 5_000_000
BAD_CALLS = [
    ("mempalace_search", {}, ["'query' is required"]),
    ("mempalace_search", {"query": 42}, ["'query' is invalid", "valid string"]),
    ("mempalace_search", {"query": "q" * 15_000_000}, ["15,000,000 characters", "at most"]),
    ("mempalace_search", {"query": "storage", "limit": "many"}, ["'limit'", "integer"]),
    ("mempalace_search", {"query": "storage", "limit": 0}, ["'limit'", "1"]),
    ("mempalace_search", {"query": "   "}, ["query is empty"]),
    ("mempalace_delete_drawer", {"drawer_id": "drawer_nope_nope_0000"}, ["No drawer with id"]),
    (
        "mempalace_add_drawer",
        {"wing": "atlas", "room": "ops", "content": BIG},
        ["5,000,000 characters", "Split it"],
    ),
    ("mempalace_check_duplicate", {"content": BIG}, ["5,000,000 characters"]),
    ("mempalace_kg_add", {"subject": "Maya", "predicate": "likes"}, ["'object' is required"]),
    (
        "mempalace_kg_query",
        {"entity": "Maya", "as_of": "last tuesday"},
        ["not a date", "YYYY-MM-DD"],
    ),
    ("mempalace_kg_query", {"entity": "Maya", "direction": "sideways"}, ["'direction'"]),
]


@pytest.mark.parametrize(
    ("tool", "args", "says"), BAD_CALLS, ids=[f"{t}-{i}" for i, (t, _, _) in enumerate(BAD_CALLS)]
)
def test_bad_call_is_a_tool_error_and_the_server_keeps_serving(
    mcp: McpSession, tool: str, args: dict[str, Any], says: list[str]
) -> None:
    message = mcp.error(tool, args)
    for part in says:
        assert part in message, message
    assert "x" * 100 not in message  # the oversized value is never echoed back
    assert mcp.ok("mempalace_list_wings")["wings"]


def test_unknown_tool_is_an_error_too(mcp: McpSession) -> None:
    assert "mempalace_nope" in mcp.error("mempalace_nope", {})
    assert mcp.ok("mempalace_list_wings")["wings"]
