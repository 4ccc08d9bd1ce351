"""Two agents' diaries are two private rooms: never a tunnel, never an edge, never one node
that links both agents' wings (stats, tunnels, traverse and both exports), on a real palace."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mempalace_cli.cli import app
from mempalace_cli.embedders.base import Embedder
from mempalace_cli.service import open_palace


@pytest.fixture(scope="module")
def two_diaries(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Path:
    """claude and gemini each keep a diary; both also filed notes in a shared `auth` room, the
    one real tunnel between their wings."""
    path = tmp_path_factory.mktemp("diaries") / "palace"
    palace = open_palace(str(path))
    palace.diary_write("claude", "Reviewed the auth migration with Ana.")
    palace.diary_write("claude", "Paired on the billing export.")
    palace.diary_write("gemini", "Nothing to report today.")
    palace.add_drawer("wing_claude", "auth", "Session tokens expire after twelve hours.")
    palace.add_drawer("wing_gemini", "auth", "Sign-in goes through SAML single sign-on.")
    palace.add_drawer("wing_gemini", "budget", "The Q3 budget is tight; no new hires.")
    palace.close()
    return path


@pytest.fixture
def traverse(runner: CliRunner, home: Path, two_diaries: Path):
    def run(*args: str, as_json: bool = True):
        extra = ["--json"] if as_json else []
        result = runner.invoke(app, ["--palace", str(two_diaries), "traverse", *args, *extra])
        assert result.exit_code == 0, result.stdout + result.stderr
        return json.loads(result.stdout) if as_json else result.stdout

    return run


def test_stats_count_no_diary_tunnel_or_edge(traverse, two_diaries: Path) -> None:
    stats = traverse("--stats")
    # The shared `auth` room is the only tunnel: one edge (claude <-> gemini), not two.
    assert [t["room"] for t in stats["top_tunnels"]] == ["auth"]
    assert (stats["tunnels"], stats["edges"]) == (1, 1)
    palace = open_palace(str(two_diaries))
    try:
        assert palace.graph_stats()["edges"] == 1
        tunnels = palace.find_tunnels("wing_claude", "wing_gemini")["tunnels"]
        assert [t["room"] for t in tunnels] == ["auth"]
    finally:
        palace.close()
    assert "1 tunnels, 1 tunnel edges" in traverse("--stats", as_json=False)


def test_traverse_shows_each_agent_only_its_own_diary(traverse) -> None:
    walked = traverse("budget")["results"]
    diaries = [r for r in walked if r["room"] == "diary"]
    # Reached through gemini's wing: gemini's diary, one entry; claude's stays out of it.
    assert [(r["wings"], r["drawers"]) for r in diaries] == [(["wing_gemini"], 1)]
    assert not any(r["tunnel"] for r in diaries)
    # Asked for by name, "diary" is every agent's diary, but still no tunnel.
    start = traverse("diary")["results"][0]
    assert (start["room"], start["hop"], start["tunnel"]) == ("diary", 0, False)
    text = traverse("diary", as_json=False)
    assert "tunnel" not in text.splitlines()[0], text


def test_mermaid_draws_one_diary_node_per_wing(traverse) -> None:
    text = traverse("--export", "mermaid", as_json=False)
    labels = dict(re.findall(r'^\s+(r\d+)\("([^"]*)"\)', text, re.M))
    wings = dict(re.findall(r'^\s+(w\d+)\["([^"]*)"\]', text, re.M))
    links = re.findall(r"^\s+(w\d+) -- (\d+) --> (r\d+)$", text, re.M)
    diary_nodes = {rid for rid, label in labels.items() if label.startswith("diary ")}
    assert len(diary_nodes) == 2
    into = {rid: [wings[w] for w, _n, r in links if r == rid] for rid in diary_nodes}
    # Each diary is linked from its own wing only, with its own count.
    assert sorted(into.values()) == [["wing_claude"], ["wing_gemini"]]
    assert sorted(labels[rid] for rid in diary_nodes) == ["diary (1)", "diary (2)"]
    # The real tunnel is still one node joining both wings.
    auth = next(rid for rid, label in labels.items() if label.startswith("auth "))
    assert sorted(wings[w] for w, _n, r in links if r == auth) == ["wing_claude", "wing_gemini"]


def test_dot_draws_one_diary_node_per_wing(traverse) -> None:
    text = traverse("--export", "dot", as_json=False)
    edges = re.findall(r'^\s+"wing:([^"]+)" -- "(room:[^"]+)" \[label="\d+"\];$', text, re.M)
    diary_ends = {room for _w, room in edges if room.endswith("diary")}
    assert len(diary_ends) == 2
    for room in diary_ends:
        assert len([w for w, r in edges if r == room]) == 1, room
    assert sorted(w for w, r in edges if r == "room:auth") == ["wing_claude", "wing_gemini"]
