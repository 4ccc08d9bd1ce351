"""Typed results (issue #28, item 3): every MCP tool's published output schema is generated
from its result type in service/results.py, and what the tools really return on a real palace
fits the schema they publish. Every public verb of the service names its result type, and real
results of the verbs only the CLI and the web page show fit theirs too. Also the one JSON
serializer (common/serialize.py)."""

from __future__ import annotations

import ast
import dataclasses
import json
from datetime import date, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from mempalace_cli.common.serialize import to_json
from mempalace_cli.mcp import tools, tools_graph, tools_log
from mempalace_cli.mcp.spec import ToolSpec, bind_arguments, schema_of
from mempalace_cli.mcp.tools import TOOLS, TOOLS_BY_NAME
from mempalace_cli.service import results
from mempalace_cli.service.coordination import EventFilter
from tests.conftest import REPO, palace_of_notes
from tests.test_hooks import CLAUDE_EXAMPLE as CLAUDE_SESSION
from tests.test_hooks import another_session


def _declared_result_types() -> dict[str, str]:
    """{tool name: the results.X its ToolSpec's output is generated from}, read from the
    source of the tool tables; a hand-written output schema has no entry."""
    found: dict[str, str] = {}
    for module in (tools, tools_graph, tools_log):
        tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "ToolSpec"):
                continue
            name = node.args[0].value
            out = node.args[4] if len(node.args) > 4 else None
            out = out or next(k.value for k in node.keywords if k.arg == "output")
            if (
                isinstance(out, ast.Call)
                and getattr(out.func, "id", "") == "schema_of"
                and isinstance(out.args[0], ast.Attribute)
                and getattr(out.args[0].value, "id", "") == "results"
            ):
                found[name] = out.args[0].attr
    return found


def test_every_tools_output_schema_is_generated_from_its_result_type() -> None:
    declared = _declared_result_types()
    hand_written = sorted(t.name for t in TOOLS if t.name not in declared)
    assert not hand_written, (
        f"these tools declare their output schema by hand: {hand_written}; add a TypedDict to "
        "service/results.py and declare output=schema_of(results.YourResult)"
    )
    for tool in TOOLS:
        kind = getattr(results, declared[tool.name])
        assert schema_of(kind) == tool.output, tool.name
        # byte for byte, as tools/list publishes it (key order included)
        assert json.dumps(schema_of(kind)) == json.dumps(tool.output), tool.name


def test_schema_of_reads_optional_nullable_described_and_nested_fields() -> None:
    hit = schema_of(results.SearchHit)
    assert hit["required"] == ["drawer_id", "text"]
    assert hit["properties"]["similarity"]["type"] == ["number", "null"]
    assert hit["properties"]["similarity"]["description"].startswith("Cosine similarity")
    assert hit["properties"]["matched_by"]["items"] == {
        "type": "string",
        "enum": ["vector", "lexical", "translated"],
    }
    search = schema_of(results.SearchResult)
    assert search["properties"]["results"] == {"type": "array", "items": hit}
    assert schema_of(results.IgnoredArguments)["additionalProperties"] == {"type": "string"}


# -- real results against the published schemas ------------------------------------------------
NOTES = {
    "auth.md": "We chose Postgres for the auth service because of row-level security.",
    "deploy.md": "Deploys go out on Tuesdays after the staging smoke test passes.",
}


@pytest.fixture(scope="module")
def palace(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return palace_of_notes(tmp_path_factory.mktemp("typed"), NOTES)


def _call(palace: Any, name: str, **arguments: Any) -> dict[str, Any]:
    """The tool's result as the MCP server would return it, checked against its schema."""
    spec: ToolSpec = TOOLS_BY_NAME[name]
    result = spec.call(palace, bind_arguments(spec, arguments))
    jsonschema.validate(result, spec.output)
    return result


def test_real_results_fit_their_published_schemas(palace: Any) -> None:
    status = _call(palace, "mempalace_status")
    assert status["total_drawers"] == 2
    found = _call(palace, "mempalace_search", query="which database for auth", limit=2)
    assert found["results"][0]["source_file"].endswith("auth.md")
    added = _call(palace, "mempalace_add_drawer", wing="team", room="ops", content="Pager is Bo.")
    assert added["success"] is True
    _call(palace, "mempalace_kg_add", subject="auth", predicate="uses", object="Postgres")
    facts = _call(palace, "mempalace_kg_query", entity="auth")
    assert [f["object"] for f in facts["facts"]] == ["Postgres"]
    _call(palace, "mempalace_diary_write", agent_name="typist", entry="Checked the schemas.")
    diary = _call(palace, "mempalace_diary_read", agent_name="typist")
    assert diary["total"] == 1
    _call(
        palace,
        "mempalace_create_tunnel",
        source_wing="team",
        source_room="notes",
        target_wing="team",
        target_room="ops",
    )
    assert _call(palace, "mempalace_list_tunnels")["count"] == 1
    _call(palace, "mempalace_event_append", type="note", stream="s", room="r", from_agent="a")
    events = _call(palace, "mempalace_event_list", stream="s")
    assert [e["from_agent"] for e in events["events"]] == ["a"]


# -- the verbs only the CLI and the web page show ----------------------------------------------
SERVICE = REPO / "mempalace_cli" / "service"
GONE = "/nonexistent/typed/auth.md"  # a source file that is not there
# Public functions of service/ that may return a plain dict, and why.
LOOSE_BY_DESIGN = {
    "audit.py to_dict": "ActivityRow, a frozen dataclass, is the typed row; this is asdict",
    "audit.py summarize_arguments": "keyed by the call's own argument names",
}


def test_every_public_verb_of_the_service_names_its_result_type() -> None:
    loose = {}
    for path in sorted(SERVICE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.FunctionDef)
                and not node.name.startswith("_")
                and node.returns is not None
                and ast.unparse(node.returns) in ("dict[str, Any]", "dict")
            ):
                loose[f"{path.name} {node.name}"] = node.lineno
    assert sorted(loose) == sorted(LOOSE_BY_DESIGN), (
        "these verbs say they return a plain dict: give each a TypedDict in "
        f"service/results.py: {sorted(set(loose) - set(LOOSE_BY_DESIGN))}"
    )


def _fits(result: Any, kind: Any) -> Any:
    """`result`, checked against its type's schema as `--json` prints it."""
    jsonschema.validate(json.loads(to_json(result)), schema_of(kind))
    return result


@pytest.fixture(scope="module")
def busy(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A palace these tests file into, link and log in (the other one's counts stay put)."""
    return palace_of_notes(tmp_path_factory.mktemp("typed-busy"), NOTES)


def test_the_coordination_logs_verbs_fit_their_types(busy: Any) -> None:
    log = busy.coordination
    sent = _fits(
        log.event_append("task.request", "project/x", "delegation", "ann", to_agent="bo"),
        results.AppendResult,
    )
    mine = EventFilter(stream="project/x", to_agent="bo", since_created_at="2020-01-01")
    listed = _fits(log.event_list(mine), results.EventListResult)
    assert [e["id"] for e in listed["events"]] == [sent["event"]["id"]]
    waited = _fits(log.event_wait(mine, timeout_ms=0), results.EventWaitResult)
    assert waited["timed_out"] is False and waited["cursor"] == sent["event"]["id"]
    # The MCP tools build the same filter from their arguments: from an agent who wrote
    # nothing, the wait times out; on the time alone, it finds the event.
    none = _call(busy, "mempalace_event_wait", stream="project/x", from_agent="cy", timeout_ms=0)
    assert none["timed_out"] is True and none["events"] == []
    found = _call(busy, "mempalace_event_wait", stream="project/x", since_created_at="2020-01-01")
    assert found["cursor"] == sent["event"]["id"]
    task = log.task_create("x", "ann", "bo", "Fix the flaky test.", "The tests pass.")
    tasks = _fits(log.task_list(project="x"), results.TaskListResult)
    assert [t["task_id"] for t in tasks["tasks"]] == [task["task_id"]]
    shown = _fits(log.task_show(task["task_id"]), results.TaskShowResult)
    assert shown["task"]["status"] == "open"
    claimed = _fits(log.task_update(task["task_id"], "claimed", "bo"), results.TaskUpdateResult)
    assert claimed["status"] == "claimed"


def test_tunnels_the_map_and_the_health_pages_fit_their_types(busy: Any) -> None:
    # lab/desk: the auth note's words again (a duplicate), from a file that is gone;
    # lab/db shares Postgres with team/notes (a hallway no tunnel links yet).
    filed = busy.add_drawers(
        [
            {"wing": "lab", "room": "desk", "content": NOTES["auth.md"], "source_file": GONE},
            {"wing": "lab", "room": "db", "content": "Postgres backups run nightly."},
            {"wing": "lab", "room": "bench", "content": "Bench log."},
        ]
    )
    copy, _db, bench = filed["drawer_ids"]
    made = _fits(busy.tunnels.create("team", "notes", "lab", "desk"), results.CreateTunnelResult)
    busy.tunnels.create("team", "notes", "lab", "bench")
    listed = _fits(busy.tunnels.list_tunnels(), results.ListTunnelsResult)
    assert made["tunnel"]["id"] in [t["id"] for t in listed["tunnels"]]
    _call(busy, "mempalace_delete_drawer", drawer_id=bench)
    dangling = _fits(busy.tunnels.prune(), results.PruneTunnelsResult)
    assert [t["missing_ends"] for t in dangling["dangling"]] == [["target"]]
    drawn = _fits(busy.overview.palace_map(links=listed["tunnels"]), results.PalaceMap)
    assert [link["target"]["room"] for link in drawn["links"]] == ["desk"]
    assert drawn["links_dangling"] == 1 and drawn["drawers"] == busy.status()["total_drawers"]

    fact = {"subject": "auth", "predicate": "uses", "source_drawer_id": copy}
    _call(busy, "mempalace_kg_add", object="Postgres", **fact)
    swap = {"old_object": "Postgres", "new_object": "SQLite", "at": "2025-01-01"}
    _call(busy, "mempalace_kg_supersede", subject="auth", predicate="uses", **swap)
    assert _fits(busy.overview.entities(), results.EntitiesResult)["total"] == 3
    history = _fits(busy.overview.entity_history("auth"), results.EntityHistory)
    assert [f["replaced_by"] for f in history["facts"]] == ["SQLite", None]
    hallway = next(
        h
        for h in busy.tunnels.hallways()["hallways"]
        if {h["room_a"], h["room_b"]} == {"db", "notes"}
    )
    busy.tunnels.delete_hallway(hallway["hallway_id"])
    back = _fits(busy.tunnels.restore_hallway(hallway["hallway_id"]), results.RestoreHallwayResult)
    assert back["hidden"] is False
    proposed = _fits(busy.tunnels.propose(), results.ProposeTunnelsResult)
    assert [(p["source_room"], p["target_room"]) for p in proposed["proposals"]] == [
        ("db", "notes")
    ]

    _call(busy, "mempalace_diary_write", agent_name="typist", entry="Checked the pages.")
    page = _fits(busy.overview.diary_entries("wing_typist"), results.DiaryPage)
    assert [e["text"] for e in page["entries"]] == ["Checked the pages."]
    stale = _fits(busy.overview.stale_drawers(), results.StaleDrawers)
    assert [d["ended_facts"][0]["now"] for d in stale["drawers"]] == [["SQLite"]]
    gone = _fits(busy.overview.missing_sources(), results.MissingSources)
    assert [s["source_file"] for s in gone["sources"]] == [GONE]
    same = _fits(busy.duplicate_groups.groups(), results.DuplicateGroupsResult)
    assert [sorted(d["room"] for d in g) for g in same["groups"]] == [["desk", "notes"]]
    _fits(busy.overview.store_agreement(), results.StoreAgreement)
    _fits(busy.overview.model(), results.PalaceModel)
    assert _fits(busy.overview.disk_use(), results.DiskUse)["total"] > 0
    audit = _fits(busy.organisation.audit(), results.AuditResult)
    assert 0 <= audit["score"] <= 100 and audit["findings"]
    _fits(_call(busy, "mempalace_reconnect"), results.ReconnectResult)


def test_drawers_models_identity_and_mining_fit_their_types(busy: Any, tmp_path: Path) -> None:
    status = _fits(busy.status(verify=True), results.PalaceStatus)
    assert status["verified"]["all_matched"] is True
    many = [{"wing": "ops", "room": "pager", "content": "Bo holds the pager this week."}]
    assert _fits(busy.add_drawers(many), results.AddDrawersResult)["added"] == 1
    ranked = _fits(busy.search("who holds the pager", limit=2), results.Ranking)
    assert ranked["results"][0]["wing"] == "ops" and ranked["mode"] == "hybrid"
    one = next(iter(busy.list_drawers(wing="team", room="notes")["drawers"]))["drawer_id"]
    _fits(busy.drawer_neighbours(one), results.NeighboursResult)
    model = busy.current_binding().model
    same = _fits(busy.reembed(model), results.ReembedResult)  # nothing to switch
    assert same["switched"] is False and same["model"] == model
    _fits(busy.embedding_models(), results.ModelsResult)
    _fits(busy.set_identity("I am the typist."), results.SetIdentityResult)
    assert _fits(busy.identity(), results.IdentityResult)["text"] == "I am the typist."
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "readme.md").write_text("The typist checks result shapes.\n", encoding="utf-8")
    _fits(busy.init_project(folder), results.InitResult)
    plan = _fits(busy.mine(folder, dry_run=True), results.MineRun)
    assert [p["file"] for p in plan["plan"]] == ["readme.md"]
    (folder / "todo.md").write_text("Type every verb.\n", encoding="utf-8")
    batch = _fits(busy.mine_paths(folder, [folder / "todo.md"]), results.WatchBatch)
    assert batch["mined_files"] == ["todo.md"]
    gone = _fits(busy.forget(source=str(folder / "todo.md"), dry_run=True), results.ForgetResult)
    assert gone["matched"] == 1


def test_a_session_transcript_filed_by_the_hook_fits_its_type(busy: Any, tmp_path: Path) -> None:
    sessions = busy.sessions
    transcript = tmp_path / CLAUDE_SESSION.name
    transcript.write_bytes(CLAUDE_SESSION.read_bytes())
    filed = _fits(sessions.file_transcript(transcript, "s1"), results.TranscriptResult)
    assert filed["status"] == "filed" and filed["drawers"]["added"] > 0
    assert sessions.state(transcript) == "unchanged"
    again = _fits(sessions.file_transcript(transcript, "s1"), results.TranscriptResult)
    assert again["status"] == "unchanged"
    both = tmp_path / "both.jsonl"  # two sessions run together
    text = transcript.read_text(encoding="utf-8")
    second = another_session(text, "11111111-2222-3333-4444-555555555555")
    both.write_text(text + second, encoding="utf-8")
    split = _fits(sessions.split(tmp_path, dry_run=True), results.SplitResult)
    actions = {Path(f["file"]).name: (f["action"], len(f.get("parts", []))) for f in split["files"]}
    assert actions == {"both.jsonl": ("split", 2), transcript.name: ("skip", 0)}


def test_a_result_that_breaks_its_schema_is_caught() -> None:
    """The check above can fail: a hit without text does not fit SearchResult."""
    bad = {"query": "q", "filters": {}, "results": [{"drawer_id": "d1"}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema_of(results.SearchResult))


# -- the serializer ----------------------------------------------------------------------------
@dataclasses.dataclass
class _Point:
    wing: str
    at: date


def test_to_json_writes_paths_dates_sets_tuples_and_dataclasses() -> None:
    doc = {
        "path": Path("/tmp/palace"),
        "day": date(2026, 3, 1),
        "when": datetime(2026, 3, 1, 9, 30),
        "tags": {"b", "a"},
        "pair": ("x", 1),
        "point": _Point("team", date(2026, 3, 2)),
        "note": "上个月的决定",
    }
    assert json.loads(to_json(doc)) == {
        "path": "/tmp/palace",
        "day": "2026-03-01",
        "when": "2026-03-01T09:30:00",
        "tags": ["a", "b"],
        "pair": ["x", 1],
        "point": {"wing": "team", "at": "2026-03-02"},
        "note": "上个月的决定",
    }
    assert "上个月" in to_json(doc)  # written as is, not as \\u escapes
    assert to_json({"a": [1]}, indent=2) == '{\n  "a": [\n    1\n  ]\n}'
