"""The palace graph: traverse, tunnels, stats and exports, on a real palace with three wings
that share rooms, plus the pure graph on catalogue-shaped counts."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mempalace_cli.cli import app
from mempalace_cli.embedders.base import Embedder
from mempalace_cli.memory.graph import PalaceGraph
from mempalace_cli.service import open_palace

# alpha: auth, database, notes   beta: auth, deploy   gamma: deploy, budget
DRAWERS = [
    ("alpha", "auth", "The login flow moved to Clerk in March."),
    ("alpha", "auth", "Session tokens expire after twelve hours."),
    ("alpha", "database", "Postgres 16 holds the metadata."),
    ("alpha", "notes", "Loose notes about the alpha project."),
    ("beta", "auth", "Beta signs in through SAML single sign-on."),
    ("beta", "deploy", "Beta ships with Helm charts to the cluster."),
    ("gamma", "deploy", "Gamma deploys to a small VM with systemd."),
    ("gamma", "budget", "The Q3 budget is tight; no new hires."),
]


@pytest.fixture(scope="module")
def three_wings(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Path:
    path = tmp_path_factory.mktemp("graph") / "palace"
    palace = open_palace(str(path))
    for wing, room, text in DRAWERS:
        assert palace.add_drawer(wing, room, text, check_duplicates=False)["success"]
    palace.close()
    return path


@pytest.fixture
def walk(runner: CliRunner, home: Path, three_wings: Path):
    def run(*args: str, expect: int = 0, as_json: bool = True):
        extra = ["--json"] if as_json else []
        result = runner.invoke(app, ["--palace", str(three_wings), "traverse", *args, *extra])
        assert result.exit_code == expect, result.stdout + result.stderr
        return json.loads(result.stdout) if as_json else result

    return run


def _hops(result: dict) -> dict[str, tuple[int, str | None, str | None]]:
    return {
        r["room"]: (r["hop"], r["via"] and r["via"]["from"], r["via"] and r["via"]["wing"])
        for r in result["results"]
    }


def test_traverse_gives_the_right_hops(walk):
    result = walk("auth")
    assert result["found"] is True and result["start"] == "auth"
    assert _hops(result) == {
        "auth": (0, None, None),
        "database": (1, "auth", "alpha"),
        "notes": (1, "auth", "alpha"),
        "deploy": (1, "auth", "beta"),
        "budget": (2, "deploy", "gamma"),  # through the beta/gamma tunnel
    }
    start = result["results"][0]
    assert start["wings"] == ["alpha", "beta"] and start["drawers"] == 3
    assert start["drawers_by_wing"] == {"alpha": 2, "beta": 1}
    assert _hops(walk("auth", "--max-hops", "1")).keys() == {"auth", "database", "notes", "deploy"}
    assert _hops(walk("budget", "--max-hops", "3")) == {
        "budget": (0, None, None),
        "deploy": (1, "budget", "gamma"),
        "auth": (2, "deploy", "beta"),
        "database": (3, "auth", "alpha"),
        "notes": (3, "auth", "alpha"),
    }


def test_traverse_renders_a_tree(walk):
    out = walk("auth", as_json=False).stdout
    assert "auth  3 drawers  alpha, beta  tunnel  (start)" in out
    assert re.search(r"└── budget\s+1 drawer\s+gamma\s+hop 2 via gamma", out)
    assert "4 room(s) within 2 hop(s)." in out


def test_unknown_room_gives_suggestions(walk):
    result = walk("auht", expect=4)
    assert result["found"] is False and result["results"] == []
    assert result["suggestions"][0] == "auth"
    text = walk("deplyo", expect=4, as_json=False)
    assert "Not found: No room named 'deplyo'. Close names: deploy." in text.stderr
    assert "Did you mean: deploy" in text.stderr
    assert "Traceback" not in text.output
    assert walk("zzzz", expect=4)["suggestions"]  # nothing close: still names rooms to try


def test_tunnels(walk):
    tunnels = walk("--tunnels")
    assert [(t["room"], t["wings"], t["drawers"]) for t in tunnels["tunnels"]] == [
        ("auth", ["alpha", "beta"], 3),
        ("deploy", ["beta", "gamma"], 2),
    ]
    assert [t["room"] for t in walk("--tunnels", "--wing-a", "gamma")["tunnels"]] == ["deploy"]
    assert walk("--tunnels", "--wing-a", "alpha", "--wing-b", "beta")["count"] == 1
    assert walk("--wing-a", "alpha", "--wing-b", "gamma")["tunnels"] == []
    err = walk("--tunnels", "--wing-a", "gama", expect=4)["error"]
    assert err["message"] == "No wing named 'gama'." and "gamma" in err["hint"]
    out = walk("--tunnels", as_json=False).stdout
    assert re.search(r"auth\s+3\s+alpha \(2\), beta \(1\)", out)


def test_stats(walk):
    stats = walk("--stats")
    assert stats["rooms"] == 5 and stats["tunnels"] == 2 and stats["edges"] == 2
    assert stats["rooms_per_wing"] == {"alpha": 3, "beta": 2, "gamma": 2}
    assert stats["drawers"] == len(DRAWERS)
    assert [t["room"] for t in stats["top_tunnels"]] == ["auth", "deploy"]
    assert "5 rooms in 3 wings (8 drawers), 2 tunnels" in walk("--stats", as_json=False).stdout


def _dot_structure(text: str) -> tuple[set[str], set[tuple[str, str]]]:
    """A small structural parse of our DOT: balanced, one statement per line, edges between
    declared nodes."""
    lines = [line.strip() for line in text.strip().splitlines()]
    assert lines[0] == "graph palace {" and lines[-1] == "}"
    nodes, edges = set(), set()
    for line in lines[1:-1]:
        assert line.endswith(";"), line
        edge = re.fullmatch(r'"((?:[^"\\]|\\.)*)" -- "((?:[^"\\]|\\.)*)" \[label="\d+"\];', line)
        node = re.fullmatch(r'"((?:[^"\\]|\\.)*)" \[label="(?:[^"\\]|\\.)*".*\];', line)
        if edge:
            edges.add((edge[1], edge[2]))
        elif node:
            nodes.add(node[1])
        else:
            assert re.fullmatch(r"(rankdir=LR|node \[.*\]);", line), line
    assert {n for e in edges for n in e} <= nodes
    return nodes, edges


def test_dot_export_parses(walk, tmp_path):
    dot = walk("--export", "dot", as_json=False).stdout
    nodes, edges = _dot_structure(dot)
    assert {"wing:alpha", "room:auth", "room:budget"} <= nodes
    assert ("wing:beta", "room:deploy") in edges and len(edges) == 7
    if shutil.which("dot"):  # Graphviz itself, where installed
        svg = subprocess.run(["dot", "-Tsvg"], input=dot, capture_output=True, text=True)
        assert svg.returncode == 0, svg.stderr
        assert "<svg" in svg.stdout
    out = tmp_path / "palace.dot"
    saved = walk("--export", "dot", "--output", str(out))
    assert saved["format"] == "dot" and out.read_text() == dot


def test_mermaid_export_is_well_formed(walk):
    text = walk("--export", "mermaid", as_json=False).stdout
    lines = text.strip().splitlines()
    assert lines[0] == "flowchart LR"
    declared = {m[1] for m in re.finditer(r"^\s+(w\d+|r\d+)[\[(]", text, re.M)}
    links = re.findall(r"^\s+(w\d+) -- (\d+) --> (r\d+)$", text, re.M)
    assert len(declared) == 3 + 5 and len(links) == 7
    assert {a for a, _, _ in links} | {b for _, _, b in links} <= declared
    assert sum(int(n) for _, n, _ in links) == len(DRAWERS)
    assert text.count(":::tunnel") == 2 and "classDef tunnel" in text  # the two tunnels
    err = walk("--export", "png", expect=2)["error"]
    assert "mermaid, dot" in err["hint"]


def test_graph_of_a_mined_palace_matches_status(runner, home, mined_notes):
    palace = str(mined_notes["palace"])
    status = json.loads(runner.invoke(app, ["--palace", palace, "status", "--json"]).stdout)
    stats = json.loads(
        runner.invoke(app, ["--palace", palace, "traverse", "--stats", "--json"]).stdout
    )
    assert stats["rooms"] == len(status["rooms"]) and stats["drawers"] == status["total_drawers"]
    room = max(status["rooms"], key=status["rooms"].get)
    walked = json.loads(runner.invoke(app, ["--palace", palace, "traverse", room, "--json"]).stdout)
    assert walked["results"][0]["drawers"] == status["rooms"][room]


def test_no_palace(walk, runner, home):
    result = runner.invoke(app, ["traverse", "auth", "--json"])
    assert result.exit_code == 3 and json.loads(result.stdout)["error"]["kind"] == "no_palace"
    assert runner.invoke(app, ["traverse"]).exit_code == 2  # neither a room nor an option


def test_graph_reads_no_chromadb(three_wings, home):
    script = (
        "import sys, json\n"
        "from typer.testing import CliRunner\n"
        "from mempalace_cli.cli import app\n"
        f"p = {str(three_wings)!r}\n"
        "codes = [CliRunner().invoke(app, ['--palace', p, 'traverse', *a]).exit_code for a in (\n"
        "    ['auth'], ['--tunnels'], ['--stats'], ['--export', 'dot'])]\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('chromadb', 'onnxruntime'))\n"
        "print(json.dumps({'codes': codes, 'heavy': heavy}))\n"
    )
    env = {**os.environ, "MEMPALACE_HOME": str(home)}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"codes": [0, 0, 0, 0], "heavy": []}


def test_pure_graph_edge_cases():
    graph = PalaceGraph(
        [("a", "x", 1), ("b", "x", 2), ("c", "x", 3), ("a", "y", 1), ("d", "z", 4), ("d", "", 9)]
    )
    assert graph.edge_count() == 3  # x joins three wings: three wing pairs
    assert [n.name for n in graph.tunnels()] == ["x"]
    assert [r["room"] for r in graph.traverse("z", 5)] == ["z"]  # an island
    assert "" not in graph.rooms
    assert graph.suggestions("xx") == ["x"]
    empty = PalaceGraph([])
    assert empty.stats()["rooms"] == 0 and empty.to_dot().startswith("graph palace {")
