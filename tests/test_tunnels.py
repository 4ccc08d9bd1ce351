"""Explicit tunnels, hallways, checkpoint, sync and MemPalace's argument names, end to end: one
real palace per module (real model, real files), a real `mempalace serve-mcp` over stdio driven
by the official MCP client, and the real CLI on the same palace.

- a tunnel made over MCP is listed by the CLI and walked by traverse (MCP and CLI); made again
  the other way round it is the same tunnel; deleted, traverse no longer crosses it;
- hallways come from knowledge-graph entities rooms share (a mention in a drawer, a fact read
  from a drawer); a hidden one stays hidden when the palace changes and a new process reads it;
- a checkpoint with one bad item writes nothing (drawers and diary counted before and after);
- sync's dry run lists the stale files with their reasons and removes nothing; then removes;
- every argument name MemPalace's schema gives is accepted, the ones with no meaning here
  reported in `ignored_arguments` with why; an invented name is still refused.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mempalace_cli.cli import app
from mempalace_cli.embedders.base import Embedder
from mempalace_cli.memory.kg import FactInput
from mempalace_cli.service import open_palace
from tests.test_mcp_support import McpSession, stdio_session

DECISION = "We chose Postgres for the metadata store after Maya compared it with MySQL."
PRICING = "Maya set the pricing tiers once the Postgres hosting costs were known."
OUTAGE = "The ingest queue stalled for an hour on Tuesday; the consumers were restarted."
CAPACITY = "Next quarter the brokers get twice the disk."
PROJECT = {
    "gone.md": "The old onboarding checklist asked for a VPN token on day one.",
    "moved.md": "Release trains leave every second Thursday; hotfixes ride alone.",
    "scratch/ignored.md": "Scratch numbers for the load test, kept out of version control.",
    "excluded.md": "A generated changelog that mempalace.toml now excludes.",
    "kept.md": "The on-call rotation hands over on Monday at ten.",
}


class World:
    def __init__(self, base: Path) -> None:
        self.base = base
        self.palace = base / "palace"
        self.root = base / "may-mine"  # the server's --mine-root
        self.project = self.root / "proj"
        for rel, text in PROJECT.items():
            path = self.project / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text + "\n", encoding="utf-8")
        p = open_palace(str(self.palace))
        try:
            self.decision = p.add_drawer("atlas", "decisions", DECISION)["drawer_id"]
            self.pricing = p.add_drawer("bramble", "pricing", PRICING)["drawer_id"]
            self.outage = p.add_drawer("ops", "incidents", OUTAGE)["drawer_id"]
            self.capacity = p.add_drawer("ops", "capacity", CAPACITY)["drawer_id"]
            p.kg_add(FactInput("Maya", "decided", "Postgres"))
            # Kafka is in no drawer's text: the facts were read from these two drawers.
            p.kg_add(FactInput("ingest", "runs_on", "Kafka", source_drawer_id=self.outage))
            p.kg_add(FactInput("Kafka", "needs", "disk", source_drawer_id=self.capacity))
            mined = p.mine(str(self.project))
            assert mined["drawers"]["added"] == len(PROJECT), mined
        finally:
            p.close()

    def cli(self, *args: str, expect: int = 0) -> Any:
        result = CliRunner().invoke(app, ["--palace", str(self.palace), *map(str, args)])
        assert result.exit_code == expect, result.stdout + result.stderr
        return result

    def cli_json(self, *args: str, expect: int = 0) -> Any:
        return json.loads(self.cli(*args, "--json", expect=expect).stdout)


@pytest.fixture(scope="module")
def world(
    tmp_path_factory: pytest.TempPathFactory, embedder: Embedder
) -> Iterator[tuple[World, McpSession]]:
    base = tmp_path_factory.mktemp("tunnels")
    world = World(base)
    home = base / "home"
    home.mkdir()
    with stdio_session(
        world.palace, home, base / "server.log", "--mine-root", str(world.root)
    ) as mcp:
        yield world, mcp


def _reached(traverse: dict[str, Any], room: str) -> dict[str, Any] | None:
    return next((r for r in traverse["results"] if r["room"] == room), None)


def test_a_tunnel_round_trips_over_mcp_and_the_cli_and_traverse_walks_it(
    world: tuple[World, McpSession],
) -> None:
    w, mcp = world
    # Rooms of two wings with no room name in common: one hop from decisions stays in atlas.
    before = mcp.ok("mempalace_traverse", {"start_room": "decisions", "max_hops": 1})
    assert _reached(before, "pricing") is None

    made = mcp.ok(
        "mempalace_create_tunnel",
        {
            "source_wing": "atlas",
            "source_room": "decisions",
            "target_wing": "bramble",
            "target_room": "pricing",
            "label": "pricing follows the database choice",
        },
    )
    assert made["created"] is True
    tid = made["tunnel"]["id"]

    listed = w.cli_json("tunnels", "list")
    assert [t["id"] for t in listed["tunnels"]] == [tid]
    assert listed["tunnels"][0]["label"] == "pricing follows the database choice"
    assert listed["tunnels"][0]["missing_ends"] == []

    # The same two ends the other way round, from the CLI: the same tunnel, label updated.
    again = w.cli_json("tunnels", "create", "bramble/pricing", "atlas/decisions", "-l", "costs")
    assert again["created"] is False and again["tunnel"]["id"] == tid
    assert again["tunnel"]["label"] == "costs"

    walked = mcp.ok("mempalace_traverse", {"start_room": "decisions", "max_hops": 1})
    hop = _reached(walked, "pricing")
    assert hop is not None and hop["hop"] == 1
    assert hop["via"]["explicit"] == tid and hop["via"]["label"] == "costs"
    shown = w.cli("traverse", "decisions", "--max-hops", "1").stdout
    assert "pricing" in shown and "via tunnel costs" in shown
    assert w.cli_json("traverse", "--stats")["explicit_tunnels"] == 1
    assert "-.-" in w.cli("traverse", "--export", "mermaid").stdout

    followed = mcp.ok("mempalace_follow_tunnels", {"wing": "bramble", "room": "pricing"})
    assert followed["count"] == 1
    link = followed["connections"][0]
    assert (link["direction"], link["connected_wing"], link["connected_room"]) == (
        "incoming",
        "atlas",
        "decisions",
    )
    assert "atlas/decisions" in w.cli("tunnels", "follow", "bramble/pricing").stdout

    # A tunnel between two drawers names them; follow shows the far drawer's words.
    drawers = mcp.ok(
        "mempalace_create_tunnel",
        {
            "source_wing": "ops",
            "source_room": "incidents",
            "target_wing": "ops",
            "target_room": "capacity",
            "source_drawer_id": w.outage,
            "target_drawer_id": w.capacity,
        },
    )
    far = mcp.ok("mempalace_follow_tunnels", {"wing": "ops", "room": "incidents"})
    assert far["connections"][0]["drawer_preview"] == CAPACITY
    # A drawer that is not in the room named is refused, and nothing is made.
    wrong = mcp.error(
        "mempalace_create_tunnel",
        {
            "source_wing": "ops",
            "source_room": "incidents",
            "target_wing": "ops",
            "target_room": "capacity",
            "target_drawer_id": w.decision,
        },
    )
    assert "is filed in atlas/decisions" in wrong and "nothing was changed" in wrong
    # An unknown room: not found, with the rooms there are; nothing is made.
    missing = w.cli("tunnels", "create", "atlas/decsions", "bramble/pricing", expect=4)
    assert "has no room 'decsions'" in missing.stderr and "decisions" in missing.stderr
    assert mcp.ok("mempalace_list_tunnels", {})["count"] == 2

    mcp.ok("mempalace_delete_tunnel", {"tunnel_id": drawers["tunnel"]["id"]})
    gone = mcp.ok("mempalace_delete_tunnel", {"tunnel_id": tid})
    assert gone["deleted"] == tid
    assert w.cli_json("tunnels", "list")["tunnels"] == []
    after = mcp.ok("mempalace_traverse", {"start_room": "decisions", "max_hops": 1})
    assert _reached(after, "pricing") is None
    again_gone = mcp.error("mempalace_delete_tunnel", {"tunnel_id": tid})
    assert "No tunnel with id" in again_gone


def test_hallways_come_from_shared_entities_and_a_hidden_one_stays_hidden(
    world: tuple[World, McpSession],
) -> None:
    w, mcp = world
    found = mcp.ok("mempalace_list_hallways", {})
    by_rooms = {
        frozenset({(h["wing_a"], h["room_a"]), (h["wing_b"], h["room_b"])}): h
        for h in found["hallways"]
    }
    # Mentioned in both drawers' text.
    maya = by_rooms[frozenset({("atlas", "decisions"), ("bramble", "pricing")})]
    assert {"Maya", "Postgres"} <= set(maya["entities"]) and maya["cross_wing"] is True
    # In no drawer's text: the facts about it were read from these two drawers.
    kafka = by_rooms[frozenset({("ops", "incidents"), ("ops", "capacity")})]
    assert kafka["entities"] == ["Kafka"] and kafka["cross_wing"] is False
    assert found["hidden"] == 0

    # Proposals are cross-wing hallways no tunnel links yet.
    proposed = w.cli_json("tunnels", "propose")
    assert proposed["dry_run"] is True and proposed["created"] == []
    assert any(
        {(p["source_wing"], p["source_room"]), (p["target_wing"], p["target_room"])}
        == {("atlas", "decisions"), ("bramble", "pricing")}
        for p in proposed["proposals"]
    )

    hidden = mcp.ok("mempalace_delete_hallway", {"hallway_id": maya["hallway_id"]})
    assert hidden["hidden"] is True
    after = mcp.ok("mempalace_list_hallways", {"wing": "atlas"})
    assert maya["hallway_id"] not in {h["hallway_id"] for h in after["hallways"]}
    assert after["hidden"] == 1

    # The palace changes (another entity both rooms share), a new process reads it: hidden.
    p = open_palace(str(w.palace))
    try:
        p.kg_add(FactInput("Maya", "reviewed", "pricing", source_drawer_id=w.decision))
    finally:
        p.close()
    listed = w.cli_json("hallways", "list")
    assert maya["hallway_id"] not in {h["hallway_id"] for h in listed["hallways"]}
    everything = w.cli_json("hallways", "list", "--hidden")
    again = next(h for h in everything["hallways"] if h["hallway_id"] == maya["hallway_id"])
    assert again["hidden"] is True and "pricing" in again["entities"]
    proposed = w.cli_json("tunnels", "propose")["proposals"]
    pairs = {
        frozenset({(p["source_wing"], p["source_room"]), (p["target_wing"], p["target_room"])})
        for p in proposed
    }
    assert frozenset({("atlas", "decisions"), ("bramble", "pricing")}) not in pairs

    w.cli("hallways", "restore", maya["hallway_id"])
    back = mcp.ok("mempalace_list_hallways", {"wing": "bramble"})
    assert maya["hallway_id"] in {h["hallway_id"] for h in back["hallways"]}
    assert "No hallway with id" in mcp.error("mempalace_delete_hallway", {"hallway_id": "nope"})


def test_propose_creates_tunnels_and_prune_removes_the_dangling_ones(
    world: tuple[World, McpSession],
) -> None:
    w, mcp = world
    proposed = w.cli_json("tunnels", "propose", "--max", "1", "--yes")
    assert proposed["dry_run"] is False and len(proposed["created"]) == 1
    made = proposed["created"][0]
    assert made["label"].startswith("shares ")
    assert made["source_wing"] != made["target_wing"]
    linked = {
        (made["source_wing"], made["source_room"]),
        (made["target_wing"], made["target_room"]),
    }
    again = w.cli_json("tunnels", "propose", "--max", "50")["proposals"]
    assert all(
        {(p["source_wing"], p["source_room"]), (p["target_wing"], p["target_room"])} != linked
        for p in again
    )  # linked now: no longer proposed

    scratch = mcp.ok("mempalace_add_drawer", {"wing": "ops", "room": "scratch", "content": "tmp"})
    link = mcp.ok(
        "mempalace_create_tunnel",
        {
            "source_wing": "ops",
            "source_room": "incidents",
            "target_wing": "ops",
            "target_room": "scratch",
            "target_drawer_id": scratch["drawer_id"],
        },
    )["tunnel"]
    mcp.ok("mempalace_delete_drawer", {"drawer_id": scratch["drawer_id"]})
    listed = {t["id"]: t for t in mcp.ok("mempalace_list_tunnels", {"wing": "ops"})["tunnels"]}
    assert listed[link["id"]]["missing_ends"] == ["target"]

    dry = w.cli_json("tunnels", "prune")
    assert [t["id"] for t in dry["dangling"]] == [link["id"]] and dry["removed"] == 0
    assert "Nothing was deleted" in w.cli("tunnels", "prune").stdout
    assert link["id"] in {t["id"] for t in w.cli_json("tunnels", "list")["tunnels"]}
    done = w.cli_json("tunnels", "prune", "--yes")
    assert done["removed"] == 1
    ids = {t["id"] for t in w.cli_json("tunnels", "list")["tunnels"]}
    assert link["id"] not in ids and made["id"] in ids
    w.cli("tunnels", "delete", made["id"])
    assert w.cli_json("tunnels", "list")["tunnels"] == []


def _counts(mcp: McpSession) -> tuple[int, int]:
    drawers = mcp.ok("mempalace_status")["total_drawers"]
    diary = mcp.ok("mempalace_diary_read", {"agent_name": "scribe"})["total"]
    return drawers, diary


def test_a_checkpoint_with_one_bad_item_writes_nothing(world: tuple[World, McpSession]) -> None:
    _w, mcp = world
    before = _counts(mcp)
    good = [
        {"wing": "atlas", "room": "releases", "content": "Release 2.0 ships on the 14th."},
        {"wing": "atlas", "room": "releases", "content": "The beta lasts two weeks."},
    ]
    bad_room = {"wing": "atlas", "room": "***", "content": "A note with no room."}
    diary = {"agent_name": "scribe", "entry": "Saved the release plan."}
    message = mcp.error("mempalace_checkpoint", {"items": [*good, bad_room], "diary": diary})
    assert "Item 2 of the checkpoint is invalid" in message and "Nothing was written" in message
    assert _counts(mcp) == before
    empty = {"wing": "atlas", "room": "releases", "content": "   "}
    assert "Item 1" in mcp.error("mempalace_checkpoint", {"items": [good[0], empty]})
    no_agent = mcp.error("mempalace_checkpoint", {"items": good, "diary": {"entry": "x"}})
    assert "diary entry is invalid" in no_agent
    assert _counts(mcp) == before

    saved = mcp.ok("mempalace_checkpoint", {"items": good, "diary": diary, "added_by": "scribe"})
    assert saved["added"] == 2 and saved["skipped"] == 0
    assert saved["diary"]["agent"] == "scribe"
    assert _counts(mcp) == (before[0] + 3, before[1] + 1)

    # Again, plus a near copy of a drawer: nothing new but the diary entry.
    near = {"wing": "ops", "room": "notes", "content": "Release 2.0 ships on the 14th!"}
    repeat = mcp.ok("mempalace_checkpoint", {"items": [*good, near], "diary": diary})
    assert repeat["added"] == 0
    reasons = {d["item"]: d["reason"] for d in repeat["duplicates"]}
    assert reasons[0] == reasons[1] == "already_stored" and reasons[2] in ("duplicate", "similar")
    assert _counts(mcp) == (before[0] + 4, before[1] + 2)


def test_sync_dry_run_lists_and_removes_nothing_then_removes(
    world: tuple[World, McpSession],
) -> None:
    w, mcp = world
    proj = w.project
    os.remove(proj / "gone.md")
    (proj / "moved.md").rename(w.base / "moved-out.md")
    (proj / ".gitignore").write_text("scratch/\n", encoding="utf-8")
    (proj / "mempalace.toml").write_text('wing = "proj"\nexclude = ["excluded.md"]\n')
    source = {rel: str(proj / rel) for rel in PROJECT}
    ids = {
        rel: [
            d["drawer_id"]
            for d in mcp.ok("mempalace_list_drawers", {"wing": "proj"})["drawers"]
            if d.get("source_file") == path
        ]
        for rel, path in source.items()
    }
    assert all(ids.values()), ids
    total = mcp.ok("mempalace_status")["total_drawers"]

    dry = mcp.ok("mempalace_sync", {"project_dir": str(proj)})
    assert dry["dry_run"] is True and dry["removed"] == 0
    reasons = {f["source_file"]: f["reason"] for f in dry["files"]}
    assert reasons == {
        source["gone.md"]: "deleted or moved",
        source["moved.md"]: "deleted or moved",
        source["scratch/ignored.md"]: "ignored by a .gitignore",
        source["excluded.md"]: "excluded by mempalace.toml",
    }
    assert dry["matched"] == 4 and "apply: true" in dry["hint"]
    assert mcp.ok("mempalace_status")["total_drawers"] == total
    every = [i for found in ids.values() for i in found]
    assert mcp.ok("mempalace_get_drawers", {"drawer_ids": every})["missing"] == []

    done = mcp.ok("mempalace_sync", {"project_dir": str(proj), "apply": True})
    assert done["dry_run"] is False and done["removed"] == 4
    assert mcp.ok("mempalace_status")["total_drawers"] == total - 4
    left = mcp.ok("mempalace_get_drawers", {"drawer_ids": every})
    assert sorted(left["missing"]) == sorted(
        i for rel, found in ids.items() if rel != "kept.md" for i in found
    )
    assert [d["drawer_id"] for d in left["drawers"]] == ids["kept.md"]
    assert mcp.ok("mempalace_sync", {})["files"] == []


def test_mempalace_argument_names_are_accepted_and_reported_as_ignored(
    world: tuple[World, McpSession],
) -> None:
    w, mcp = world
    schemas = {t.name: t.input_schema for t in mcp.list_tools()}
    for name in ("candidate_strategy", "cli_compatible", "include_media", "query_task", "context"):
        assert name in schemas["mempalace_search"]["properties"], name
    for name in ("extract", "include_ignored", "include_subagents"):
        assert name in schemas["mempalace_mine"]["properties"], name
    assert "content" in schemas["mempalace_diary_write"]["properties"]
    assert schemas["mempalace_diary_write"]["required"] == ["agent_name"]

    query = {"query": "Postgres metadata store"}
    used = mcp.ok(
        "mempalace_search",
        query
        | {"cli_compatible": True, "include_media": True, "query_task": "code", "context": "x"},
    )
    ignored = used["ignored_arguments"]
    assert set(ignored) == {"cli_compatible", "include_media", "query_task", "context"}
    assert all(len(why) > 20 for why in ignored.values()), ignored
    assert "text drawers only" in ignored["include_media"]
    assert used["results"][0]["drawer_id"] == w.decision
    # The values this server acts on anyway are not reported; 'vector' ranks by meaning only.
    honoured = mcp.ok(
        "mempalace_search",
        query
        | {
            "cli_compatible": False,
            "include_media": False,
            "query_task": "search",
            "candidate_strategy": "vector",
        },
    )
    assert "ignored_arguments" not in honoured
    assert all(hit["matched_by"] == ["vector"] for hit in honoured["results"])

    mined = mcp.ok(
        "mempalace_mine",
        {
            "source": str(w.project),
            "dry_run": True,
            "extract": "general",
            "include_ignored": ["scratch/ignored.md"],
            "include_subagents": True,
        },
    )
    assert set(mined["ignored_arguments"]) == {"extract", "include_ignored", "include_subagents"}
    assert ".gitignore" in mined["ignored_arguments"]["include_ignored"]

    # MemPalace's diary call: agent_name with content (its name for the entry), topic, wing.
    wrote = mcp.ok(
        "mempalace_diary_write",
        {"agent_name": "mp", "content": "Checked the parity.", "topic": "t", "wing": "wing_mp"},
    )
    assert wrote["success"] is True
    assert mcp.ok("mempalace_diary_read", {"agent_name": "mp"})["entries"][0]["content"] == (
        "Checked the parity."
    )
    assert "'entry' (or content) is required" in mcp.error(
        "mempalace_diary_write", {"agent_name": "mp"}
    )

    # A name neither schema lists is still refused, naming what is accepted.
    invented = mcp.error("mempalace_search", query | {"n_results": 3})
    assert "unknown argument 'n_results'" in invented and "candidate_strategy" in invented
    assert "unknown argument 'recursive'" in mcp.error(
        "mempalace_mine", {"source": str(w.project), "dry_run": True, "recursive": True}
    )


def test_a_team_palace_keeps_tunnels_and_hidden_hallways_on_its_server(
    tmp_path: Path, embedder: Embedder
) -> None:
    """Two machines (their own palace folders and catalogues) on one real `chroma run`: what
    one links and hides, the other walks and does not see; both are the server's peers."""
    from mempalace_cli.common.config import resolve_settings
    from mempalace_cli.service import Palace
    from tests.team_support import shared_server, unique_database

    with shared_server(tmp_path / "chroma") as url:
        database = unique_database()

        def machine(name: str) -> Palace:
            home = tmp_path / name / "home"
            home.mkdir(parents=True)
            settings = resolve_settings(
                tmp_path / name / "palace", url, home=home, chroma_database=database
            )
            return Palace(settings)

        a, b = machine("a"), machine("b")
        try:
            a.add_drawer("atlas", "decisions", DECISION)
            a.add_drawer("bramble", "pricing", PRICING)
            a.kg_add(FactInput("Maya", "decided", "Postgres"))
            made = a.tunnels.create("atlas", "decisions", "bramble", "pricing", label="costs")
            hallway = a.tunnels.hallways()["hallways"][0]
            assert {hallway["room_a"], hallway["room_b"]} == {"decisions", "pricing"}
            a.tunnels.delete_hallway(hallway["hallway_id"])
            assert not (tmp_path / "a" / "palace" / "mempalace_links.sqlite3").exists()

            seen = b.tunnels.list_tunnels()
            assert [t["id"] for t in seen["tunnels"]] == [made["tunnel"]["id"]]
            walk = b.traverse("decisions", max_hops=1)
            assert _reached(walk, "pricing")["via"]["explicit"] == made["tunnel"]["id"]
            listed = b.tunnels.hallways()
            assert listed["hallways"] == [] and listed["hidden"] == 1

            peers = b.upkeep.mesh_peers()
            assert peers["team_palace"] is True and peers["server"] == url
            assert [p["this_machine"] for p in peers["peers"]] == [True]  # a and b: this host
            assert peers["peers"][0]["change_records"] >= 4  # two drawers, before and after
        finally:
            a.close()
            b.close()


def test_what_was_filed_away_reconnect_hook_settings_and_peers(
    world: tuple[World, McpSession],
) -> None:
    w, mcp = world
    mcp.ok("mempalace_memories_filed_away")  # what the other tests filed: seen
    assert mcp.ok("mempalace_memories_filed_away")["status"] == "quiet"
    # Another process files a session (as a client hook would) while the server runs.
    p = open_palace(str(w.palace))
    try:
        p.add_drawer(
            "sessions", "2026_12_03", "We agreed to ship the tunnels feature.", added_by="hook"
        )
    finally:
        p.close()
    told = mcp.ok("mempalace_memories_filed_away")
    assert told["status"] == "ok" and told["count"] == 1
    assert told["by_room"] == [{"wing": "sessions", "room": "2026_12_03", "drawers": 1}]
    assert told["by_filer"] == [{"added_by": "hook", "drawers": 1}]
    assert "1 drawer filed away" in told["message"]
    assert mcp.ok("mempalace_memories_filed_away")["count"] == 0

    status = mcp.ok("mempalace_status")
    fresh = mcp.ok("mempalace_reconnect")
    assert fresh["health"]["palace"] == "ok"
    assert fresh["health"]["drawers"] == status["total_drawers"]
    assert mcp.ok("mempalace_search", {"query": "ship the tunnels feature"})["results"]

    shown = mcp.ok("mempalace_hook_settings")
    assert shown["settings"] == {"silent_save": True, "desktop_toast": False}
    changed = mcp.ok("mempalace_hook_settings", {"desktop_toast": True})
    assert changed["updated"] == ["desktop_toast"]
    assert "desktop_toast = true" in Path(changed["path"]).read_text()
    assert mcp.ok("mempalace_hook_settings")["settings"]["desktop_toast"] is True

    peers = mcp.ok("mempalace_mesh_peers")
    assert peers["peers"] == [] and peers["team_palace"] is False
    assert "embedded" in peers["reason"]
