"""Full parity with MemPalace 3.11 (../shared/compat/mempalace-3.11-tools.json): every tool of
its list is called with its whole argument set (every property present, with plausible values
built from its schema and this palace) through the official MCP client, over stdio, against
the real `mempalace serve-mcp`. Each call gets a result or a data error: never "Unknown tool",
never "unknown argument", never a complaint about the type of a value MemPalace's schema
allows.

The compat file is read by a path relative to the repository; a checkout without it fails
here (a parity test that skips would keep CI green unchecked)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mempalace_cli.embedders.base import Embedder
from mempalace_cli.memory.kg import FactInput
from mempalace_cli.service import open_palace
from mempalace_cli.storage.graph_links import hallway_id, tunnel_id
from tests.test_mcp_support import McpSession, stdio_session

COMPAT = Path(__file__).parents[1] / ".." / "shared" / "compat" / "mempalace-3.11-tools.json"
TYPE_PROBLEM = re.compile(r"'[\w.]+' is invalid: it should be")


def compat_tools() -> list[dict[str, Any]]:
    assert COMPAT.is_file(), (
        f"MemPalace 3.11's tool list is missing: {COMPAT.resolve()} (../shared/compat beside "
        "the repository). Put mempalace-3.11-tools.json there to run the parity tests."
    )
    return list(json.loads(COMPAT.read_text(encoding="utf-8"))["tools"])


def schema_of(tool: dict[str, Any]) -> dict[str, Any]:
    return tool.get("inputSchema") or tool.get("input_schema") or {}


class Place:
    """The palace the server serves, and the ids the calls refer to."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.palace = base / "palace"
        self.root = base / "may-mine"  # the server's --mine-root
        notes = self.root / "notes"
        notes.mkdir(parents=True)
        (notes / "runbook.md").write_text(
            "# Runbook\n\nRestart the ingest worker before the Postgres failover drill.\n",
            encoding="utf-8",
        )
        p = open_palace(str(self.palace))
        try:
            self.decision = p.add_drawer(
                "atlas",
                "decisions",
                "We chose Postgres for the metadata store; Maya signed off on it.",
                source_file="atlas/decisions.md",
            )["drawer_id"]
            p.add_drawer("atlas", "storage", "MinIO holds the objects; Postgres keeps the index.")
            self.pricing = p.add_drawer(
                "bramble", "pricing", "Maya set the pricing tiers after the Postgres cost review."
            )["drawer_id"]
            self.doomed = p.add_drawer(
                "bramble", "scratch", "A scratch note the parity run deletes."
            )["drawer_id"]
            self.edited = p.add_drawer(
                "bramble", "scratch", "A scratch note the parity run rewrites."
            )["drawer_id"]
            for fact in (("Maya", "works_on", "atlas"), ("atlas", "uses", "Postgres")):
                p.kg_add(FactInput(*fact))
            p.mine(str(self.root))
        finally:
            p.close()

    def values(self) -> dict[str, dict[str, Any]]:
        """Plausible values for MemPalace's arguments, by tool (then by name for every tool)."""
        ends = (("atlas", "decisions", self.decision), ("bramble", "pricing", self.pricing))
        text = "The release checklist now has a rollback step for the Postgres migration."
        return {
            "*": {
                "wing": "atlas",
                "room": "decisions",
                "query": "Postgres metadata",
                "entity": "Maya",
                "as_of": "2026-06-01",
                "direction": "both",
                "since": "2020-01-01",
                "before": "2100-01-01",
                "limit": 5,
                "offset": 0,
                "drawer_id": self.decision,
                "drawer_ids": [self.decision],
                "agent_name": "parity",
                "added_by": "parity",
                "source_file": "atlas/decisions.md",
            },
            "mempalace_kg_add": {
                "subject": "Maya",
                "predicate": "reviews",
                "object": "pricing",
                "valid_from": "2026-01-01",
                "valid_to": "2026-12-31",
                "source_closet": "closet_parity",
                "source_drawer_id": self.pricing,
            },
            "mempalace_kg_invalidate": {
                "subject": "Maya",
                "predicate": "reviews",
                "object": "pricing",
                "ended": "2026-06-30",
            },
            "mempalace_kg_supersede": {
                "subject": "atlas",
                "predicate": "uses",
                "old_object": "Postgres",
                "new_object": "CockroachDB",
                "at": "2026-07-01",
            },
            "mempalace_traverse": {"start_room": "decisions", "max_hops": 2},
            "mempalace_find_tunnels": {"wing_a": "atlas", "wing_b": "bramble"},
            "mempalace_create_tunnel": {
                "source_wing": "atlas",
                "source_room": "decisions",
                "target_wing": "bramble",
                "target_room": "pricing",
                "label": "pricing follows the database choice",
                "source_drawer_id": self.decision,
                "target_drawer_id": self.pricing,
            },
            "mempalace_delete_tunnel": {"tunnel_id": tunnel_id(*ends)},
            "mempalace_delete_hallway": {
                "hallway_id": hallway_id(("atlas", "decisions"), ("bramble", "pricing"))
            },
            "mempalace_search": {
                "max_distance": 1.5,
                "candidate_strategy": "union",
                "cli_compatible": False,
                "include_media": False,
                "query_task": "search",
                "context": "for the release notes",
            },
            "mempalace_check_duplicate": {"content": text, "threshold": 0.9},
            "mempalace_add_drawer": {"wing": "atlas", "room": "releases", "content": text},
            "mempalace_checkpoint": {
                "items": [
                    {"wing": "atlas", "room": "releases", "content": "Release 1.4 ships Friday."}
                ],
                "diary": {"agent_name": "parity", "entry": "Checked the release plan."},
                "dedup_threshold": 0.9,
            },
            "mempalace_delete_drawer": {"drawer_id": self.doomed},
            "mempalace_mine": {
                "source": str(self.root),
                "mode": "projects",
                "wing": "may_mine",
                "agent": "parity",
                "dry_run": True,
                "extract": "exchange",
                "include_ignored": [],
                "include_subagents": False,
            },
            "mempalace_delete_by_source": {
                "source_file": str(self.root / "notes"),
                "dry_run": True,
            },
            "mempalace_sync": {"project_dir": str(self.root), "wing": "may_mine", "apply": False},
            "mempalace_update_drawer": {
                "drawer_id": self.edited,
                "content": "A scratch note the parity run rewrote.",
                "wing": "bramble",
                "room": "scratch",
            },
            "mempalace_diary_write": {
                "entry": "Ran the parity check.",
                "content": "Ran the parity check.",  # MemPalace's name for the same text
                "topic": "tests",
                "wing": "wing_parity",
            },
            "mempalace_diary_read": {"last_n": 5, "wing": "wing_parity"},
            "mempalace_hook_settings": {"silent_save": True, "desktop_toast": False},
            # The coordination log (unknown ids there are data errors, as they should be).
            "mempalace_event_append": {"artifact_ids": [], "metadata": {"note": "parity"}},
            "mempalace_event_list": {"order": "asc", "since_created_at": "2026-01-01"},
            "mempalace_event_wait": {"timeout_ms": 50, "since_created_at": "2026-01-01"},
            "mempalace_artifact_put": {"metadata": {"note": "parity"}},
            "mempalace_patch_submit": {"metadata": {"note": "parity"}},
        }


def plausible(schema: dict[str, Any]) -> Any:
    """A value of the schema's type (its first enum value when it lists some)."""
    if schema.get("enum"):
        return next(v for v in schema["enum"] if v is not None)
    kind = schema.get("type", "string")
    kind = next(k for k in kind if k != "null") if isinstance(kind, list) else kind
    if kind == "array":
        item = schema.get("items", {"type": "string"})
        if item.get("type") == "object":
            return [{k: plausible(v) for k, v in item.get("properties", {}).items()}]
        return [plausible(item)]
    return {"string": "parity", "integer": 1, "number": 0.5, "boolean": False, "object": {}}[kind]


def full_arguments(tool: dict[str, Any], values: dict[str, dict[str, Any]]) -> dict[str, Any]:
    own, common = values.get(tool["name"], {}), values["*"]
    args = {}
    for name, prop in schema_of(tool).get("properties", {}).items():
        if name in own and own[name] is not None:
            args[name] = own[name]
        elif name in common:
            args[name] = common[name]
        else:
            args[name] = plausible(prop)
    return args


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, embedder: Embedder
) -> Iterator[tuple[McpSession, Place]]:
    base = tmp_path_factory.mktemp("parity-full")
    place = Place(base)
    home = base / "home"
    home.mkdir()
    log = base / "server.log"
    with stdio_session(place.palace, home, log, "--mine-root", str(place.root)) as session:
        yield session, place


def test_every_mempalace_tool_takes_its_full_argument_set(
    served: tuple[McpSession, Place],
) -> None:
    session, place = served
    values = place.values()
    listed = {t.name for t in session.list_tools()}
    problems: list[str] = []
    results: dict[str, Any] = {}
    data_errors: dict[str, str] = {}
    tools = compat_tools()
    assert len(tools) == 47
    for tool in tools:
        name = tool["name"]
        if name not in listed:
            problems.append(f"{name}: not listed by tools/list")
        args = full_arguments(tool, values)
        assert set(args) == set(schema_of(tool).get("properties", {})), name
        result = session.call(name, args)
        text = "".join(getattr(c, "text", "") for c in result.content)
        for bad in ("Unknown tool", "unknown argument", "is not supported here"):
            if bad in text:
                problems.append(f"{name}: {text[:300]}")
        if TYPE_PROBLEM.search(text):
            problems.append(f"{name}: a value MemPalace's schema allows was refused: {text[:300]}")
        if result.is_error:
            data_errors[name] = text
        else:
            results[name] = result.structured_content or json.loads(text)
    assert not problems, "\n".join(problems) + "\n--- server log:\n" + session.server_log()

    # With plausible values, every tool outside the coordination log returns a result.
    log_tools = {t["name"] for t in tools if t["name"].split("_")[1] in ("event", "task")}
    log_tools |= {"mempalace_artifact_put", "mempalace_artifact_get", "mempalace_patch_submit"}
    unexpected = {n: e[:300] for n, e in data_errors.items() if n not in log_tools}
    assert not unexpected, unexpected

    # MemPalace's names with no meaning here are reported, with why, when used.
    assert "context" in results["mempalace_search"]["ignored_arguments"]
    assert "candidate_strategy" not in results["mempalace_search"]["ignored_arguments"]
    assert "include_subagents" in results["mempalace_mine"]["ignored_arguments"]
    assert results["mempalace_diary_write"]["success"] is True
    assert results["mempalace_create_tunnel"]["tunnel"]["label"]
    assert (
        results["mempalace_delete_tunnel"]["deleted"]
        == values["mempalace_delete_tunnel"]["tunnel_id"]
    )
    assert results["mempalace_delete_hallway"]["hidden"] is True
    assert results["mempalace_checkpoint"]["added"] == 1
    assert results["mempalace_checkpoint"]["diary"]["agent"] == "parity"
