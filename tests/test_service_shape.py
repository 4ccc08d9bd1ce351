"""The service's shape (docs/architecture.md): `Palace` is a facade over parts, each given the
palace's shared resources and the parts it builds on; no mixins, no part reaching into another
object's private members; every verb a front end calls is forwarded to exactly one part; and
using one part loads no other part's code."""

from __future__ import annotations

import ast
import inspect
import json
import subprocess
import sys
from pathlib import Path

import mempalace_cli
from mempalace_cli.memory.kg import FactInput, KnowledgeGraph
from mempalace_cli.memory.kg_store import FactStore
from mempalace_cli.memory.kg_store_chroma import ChromaFactStore
from mempalace_cli.service import Palace, open_palace
from mempalace_cli.service.core import Part, Via
from mempalace_cli.service.knowledge import Knowledge

PACKAGE = Path(mempalace_cli.__file__).parent
SERVICE = PACKAGE / "service"
FRONT_ENDS = [PACKAGE / "cli", PACKAGE / "mcp"]


def declared_parts() -> list[str]:
    from mempalace_cli.service import _Part

    return [n for n, v in vars(Palace).items() if isinstance(v, _Part)]


def test_the_palace_is_a_facade_over_parts_not_a_chain_of_mixins(tmp_path: Path) -> None:
    assert Palace.__bases__ == (Part,)
    palace = open_palace(str(tmp_path / "palace"))
    names = declared_parts()
    assert {"drawers", "searching", "mining", "convos", "watching", "curation", "knowledge"} <= set(
        names
    )
    assert set(ONCE_GIVEN_THE_WHOLE_PALACE) <= set(names)
    for name in names:
        part = getattr(palace, name)
        assert getattr(palace, name) is part, f"{name} is made once"
        # A part is its own class: the Part base between it and object, nothing else.
        mro = [c for c in type(part).__mro__ if c is not object]
        assert mro[1:] == [Part], f"{name}: {[c.__name__ for c in mro]}"
        assert part.core is palace.core, f"{name} shares the palace's resources"
        # Given the core and the parts it builds on, never the palace itself.
        assert not any(v is palace for v in vars(part).values()), f"{name} holds the palace"
    palace.close()


# Parts that were once given the whole palace, or made by the front ends over it.
ONCE_GIVEN_THE_WHOLE_PALACE = {
    "tunnels": "Tunnels",
    "upkeep": "Upkeep",
    "coordination": "Coordination",
    "sessions": "Sessions",
    "overview": "Overview",
    "duplicate_groups": "DuplicateGroups",
    "organisation": "Organisation",
}


def test_front_ends_use_the_palaces_parts_and_make_none() -> None:
    """`palace.overview`, `palace.organisation`...: a front end never imports a part's class
    to make one over the palace (it would be a second one, apart from the palace's)."""
    from mempalace_cli.service import _Part

    classes = {v.cls for v in vars(Palace).values() if isinstance(v, _Part)}
    found = []
    for folder in (*FRONT_ENDS, PACKAGE / "web", PACKAGE / "serving"):
        for path in sorted(folder.glob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            imported = {  # part classes this module imports from the service (types too)
                a.asname or a.name
                for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom)
                and (node.module or "").startswith("mempalace_cli.service")
                for a in node.names
                if a.name in classes
            }
            found += [
                f"{path.name}:{node.lineno}: {ast.unparse(node)}"
                for node in ast.walk(tree)
                if isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in imported
            ]
    assert found == []


def test_reopen_makes_the_knowledge_graph_and_the_parts_built_on_it_again(
    tmp_path: Path,
) -> None:
    """`mempalace_reconnect`: the handles are dropped, the parts reading facts read the new
    graph, and a part with a memory (what was filed away, already read) keeps it."""
    palace = open_palace(str(tmp_path / "palace"))
    try:
        palace.kg_add(FactInput("Ana", "leads", "Auth", valid_from="2026-01-01"))
        knowledge, upkeep = palace.knowledge, palace.upkeep
        _ = palace.tunnels.list_tunnels(), palace.organisation, palace.overview
        answer = palace.reopen()
        assert answer["reconnected"] == [
            "drawer store",
            "catalogue",
            "knowledge graph",
            "tunnels",
        ]
        assert answer["health"]["facts"] == 1
        assert palace.knowledge is not knowledge
        for name in ("tunnels", "organisation", "overview"):
            assert getattr(palace, name).knowledge is palace.knowledge, name
        assert palace.upkeep is upkeep
        assert [f["object"] for f in palace.overview.entity_history("Ana")["facts"]] == ["Auth"]
    finally:
        palace.close()


def test_no_service_code_reaches_into_another_objects_private_members() -> None:
    """What parts share is a public method of one part (the DrawerWriter's file/remove), never
    `p._file_drawers`: `x._name` is allowed on `self` and `cls` only."""
    found = []
    for path in sorted(SERVICE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Attribute) and node.attr.startswith("_")):
                continue
            if node.attr.startswith("__") or (
                isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
            ):
                continue
            found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    assert found == []


def _called_on_the_palace(path: Path) -> set[str]:
    """Attribute names a front-end module reads on a palace: `palace.x`, `self.palace.x`,
    `env.palace().x`, and `p.x` in the MCP tool table's `lambda p, a: ...`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    in_tools = {
        id(node)
        for lam in ast.walk(tree)
        if isinstance(lam, ast.Lambda) and lam.args.args and lam.args.args[0].arg == "p"
        for node in ast.walk(lam.body)
    }
    names: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        value = node.value
        if isinstance(value, ast.Call):  # env.palace().x
            value = value.func
        on_palace = (
            (isinstance(value, ast.Name) and value.id == "palace")
            or (isinstance(value, ast.Name) and value.id == "p" and id(node) in in_tools)
            or (isinstance(value, ast.Attribute) and value.attr == "palace")
        )
        if on_palace:
            names.add(node.attr)
    return names


def test_every_verb_the_cli_and_mcp_server_call_is_on_the_palace() -> None:
    called: set[str] = set()
    for folder in FRONT_ENDS:
        for path in folder.glob("*.py"):
            called |= _called_on_the_palace(path)
    missing = sorted(n for n in called if not hasattr(Palace, n))
    assert missing == [], f"front ends call {missing}, which Palace does not have"


def test_each_forwarded_verb_is_one_parts_own_method(tmp_path: Path) -> None:
    palace = open_palace(str(tmp_path / "palace"))
    verbs = {n: v for n, v in vars(Palace).items() if isinstance(v, Via) and not _is_part(v)}
    assert {"search", "mine", "status", "kg_add", "wake_up", "diary_write"} <= set(verbs)
    for name, verb in verbs.items():
        bound = getattr(palace, name)
        part = getattr(palace, verb.holder)
        assert bound.__self__ is part and bound.__func__ is getattr(type(part), name), name
        # The signature is the part's own, written once.
        assert inspect.signature(bound) == inspect.signature(getattr(part, name)), name
    palace.close()


def _is_part(value: Via[object]) -> bool:
    from mempalace_cli.service import _Part

    return isinstance(value, _Part)


def test_a_fact_is_one_typed_object_from_the_facade_to_every_store() -> None:
    """kg_add's fields are written once, in FactInput; every layer takes the one object."""
    for add in (
        Knowledge.kg_add,
        KnowledgeGraph.add,
        ChromaFactStore.add,
        FactStore.add,
    ):
        params = list(inspect.signature(add).parameters)
        assert params == ["self", "fact"], f"{add.__qualname__}{params}"
    fields = list(inspect.signature(FactInput).parameters)
    assert fields[:3] == ["subject", "predicate", "obj"] and "source_closet" in fields


PROBE = """
import json, sys
from mempalace_cli.memory.kg import FactInput
from mempalace_cli.service import open_palace
palace = open_palace(sys.argv[1])
palace.kg_add(FactInput("Ana", "leads", "Auth", valid_from="2026-01-01"))
facts = palace.kg_query("Ana")["facts"]
woke = palace.wake_up()
palace.close()
print(json.dumps({"facts": len(facts), "modules": sorted(sys.modules)}))
"""


def test_facts_and_wake_up_load_no_other_parts_code(tmp_path: Path) -> None:
    """`mempalace kg` and `wake-up` start fast: a fact written and read back and a wake-up
    load neither the miners, the search code, chromadb nor the model's runtime."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "palace")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout)
    assert seen["facts"] == 1
    heavy = (
        *(f"mempalace_cli.service.{m}" for m in ("mining", "convos", "watching", "searching")),
        "mempalace_cli.service.reembed",
        "mempalace_cli.miners.files",
        "mempalace_cli.miners.convos",
        "chromadb",
        "onnxruntime",
    )
    assert [m for m in seen["modules"] if m.startswith(heavy)] == []
