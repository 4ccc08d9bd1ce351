"""Typed results (issue #28, item 3): every MCP tool's published output schema is generated
from its result type in service/results.py, and what the tools really return on a real palace
fits the schema they publish. Also the one JSON serializer (common/serialize.py)."""

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
from tests.conftest import palace_of_notes


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
