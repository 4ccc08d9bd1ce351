"""What an agent may make the palace do over MCP (issue 25): `mempalace_mine` only under the
owner's mining roots (`serve-mcp --mine-root DIR`, config.toml's `mcp_mine_roots`), bulk deletes
that are dry runs by default, never by a root, the home or the working folder, at most 1,000
drawers a call, and `serve-mcp --read-only`.

The rules are unit-tested as functions, then end to end: `mempalace serve-mcp` subprocesses
(stdio and HTTP) driven by the MCP SDK's own client on real palaces."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import start_blocking_portal
from mcp import Client
from typer.testing import CliRunner

from mempalace_cli.cli import app
from mempalace_cli.common.config import mcp_mine_roots, resolve_settings
from mempalace_cli.common.errors import ConfigError
from mempalace_cli.embedders.base import Embedder
from mempalace_cli.mcp.options import ServeOptions
from mempalace_cli.mcp.policy import (
    MAX_BULK_DELETE,
    SHOWN_DRAWERS,
    SHOWN_SOURCES,
    NotAllowedError,
    check_mine_source,
    too_broad,
)
from mempalace_cli.mcp.server import build_server
from mempalace_cli.mcp.tools import READ_TOOLS, TOOLS_BY_NAME, WRITE_TOOLS
from mempalace_cli.service import open_palace
from tests.conftest import CliFn
from tests.test_mcp_support import McpSession, http_session, stdio_session

NOTES = Path(__file__).resolve().parent.parent / "examples" / "notes"
RUNBOOK = "Restart the ingest worker with systemctl restart ingest after every deploy."
HANDBOOK = "Quarterly planning happens in the first week of March, June, September and December."
CONFIG_NOTE = "The lighthouse keeper logs the fog horn tests every Tuesday at dawn."
OUTSIDE_NOTE = "Secret outside note: the vault combination is written on the blue card."


def mine_cli(palace: Path, folder: Path) -> None:
    result = CliRunner().invoke(app, ["--palace", str(palace), "mine", str(folder)])
    assert result.exit_code == 0, result.stdout + result.stderr


# -- the rules as functions --------------------------------------------------------------------
def test_no_mining_root_refuses_and_says_how_to_allow_one(tmp_path: Path) -> None:
    options = ServeOptions(config_path="/home/me/.mempalace/config.toml")
    with pytest.raises(NotAllowedError) as caught:
        check_mine_source(str(tmp_path), options)
    assert "nothing was mined" in caught.value.message
    hint = caught.value.hint or ""
    assert "mempalace serve-mcp --mine-root /path/to/folder" in hint
    assert 'mcp_mine_roots = ["/path/to/folder"]' in hint
    assert "/home/me/.mempalace/config.toml" in hint


def test_mining_root_rule(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    (root / "sub").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "out-link").symlink_to(outside)
    (root / "etc-link").symlink_to("/etc")
    (tmp_path / "notes-b").mkdir()  # a name that starts like the root's
    (tmp_path / "root-link").symlink_to(root)
    options = ServeOptions(mine_roots=(root,))

    assert check_mine_source(str(root), options) == root
    assert check_mine_source(str(root / "sub"), options) == root / "sub"
    # The roots are resolved too: a root given through a symlink allows what it leads to.
    linked = ServeOptions(mine_roots=(tmp_path / "root-link",))
    assert check_mine_source(str(root / "sub"), linked) == root / "sub"

    for refused in (
        "/etc",
        str(root / "etc-link"),
        str(root / "out-link"),
        str(root / "sub" / ".." / ".." / "outside"),
        str(tmp_path / "notes-b"),
        str(tmp_path),
        "/",
    ):
        with pytest.raises(NotAllowedError) as caught:
            check_mine_source(refused, options)
        assert "outside the folders this server may mine" in caught.value.message, refused
        assert str(root) in caught.value.message
    for relative in ("~", "~/notes", "notes", ".", "../notes", ""):
        with pytest.raises(NotAllowedError) as caught:
            check_mine_source(relative, options)
        assert "not an absolute path" in caught.value.message, relative
        assert "full path" in (caught.value.hint or "")
    with pytest.raises(Exception, match="not a usable path"):
        check_mine_source(str(root) + "/\x00x", options)


def test_too_broad_to_delete_by(tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", tmp_path / "srv" / "work"
    (cwd / "ops").mkdir(parents=True)
    home.mkdir()
    (tmp_path / "root-link").symlink_to("/")
    (tmp_path / "work-link").symlink_to(cwd)
    cases = {
        "/": "a filesystem root",
        "//": "a filesystem root",
        "C:\\": "a filesystem root",
        "c:/": "a filesystem root",
        str(tmp_path / "root-link"): "a filesystem root",
        ".": "the server's working folder",
        "./": "the server's working folder",
        str(cwd): "the server's working folder",
        str(cwd) + "/": "the server's working folder",
        str(cwd / "ops" / ".."): "the server's working folder",
        str(tmp_path / "work-link"): "the server's working folder",
        "..": "a folder that holds the server's working folder",
        str(tmp_path): "a folder that holds the server's working folder",
        str(home): "the home folder",
        "~": "the home folder",
    }
    for source, why in cases.items():
        assert too_broad(source, cwd=cwd, home=home) == why, source
    for fine in ("ops", "./ops", str(cwd / "ops"), str(cwd / "ops" / "runbook.md"), "runbook.md"):
        assert too_broad(fine, cwd=cwd, home=home) is None, fine
    # Home somewhere else: a folder holding it is refused too.
    assert too_broad(str(tmp_path), cwd=Path("/"), home=home) is not None
    assert too_broad(str(tmp_path / "srv"), cwd=tmp_path / "elsewhere", home=home) is None


def test_mcp_mine_roots_config_key(home: Path, tmp_path: Path) -> None:
    config = home / "config.toml"
    assert mcp_mine_roots(resolve_settings()) == ()
    config.write_text(f'mcp_mine_roots = ["{tmp_path}", "~/notes", "{tmp_path}"]\n')
    assert mcp_mine_roots(resolve_settings()) == (
        tmp_path.resolve(),
        Path(os.path.realpath(Path.home() / "notes")),
    )
    for bad, says in (
        ('mcp_mine_roots = "/home/me/notes"', "must be a list of folders"),
        ("mcp_mine_roots = [1]", "must be a list of folders"),
        ('mcp_mine_roots = ["notes"]', "'notes', which is not an absolute path"),
    ):
        config.write_text(bad + "\n")
        with pytest.raises(ConfigError) as caught:
            mcp_mine_roots(resolve_settings())
        assert says in caught.value.message and str(config) in caught.value.message


def test_serve_mcp_refuses_a_bad_mining_root_before_serving(
    cli: CliFn, home: Path, tmp_path: Path
) -> None:
    missing = cli("serve-mcp", "--mine-root", str(tmp_path / "nope"), expect=2)
    said = " ".join(missing.stderr.replace("│", " ").split())
    assert "Invalid value for '--mine-root'" in said and "does not exist" in said
    (home / "config.toml").write_text('mcp_mine_roots = ["relative/notes"]\n')
    bad = cli("--palace", str(tmp_path / "p"), "serve-mcp", expect=7)
    assert "mcp_mine_roots" in bad.stderr and "not an absolute path" in bad.stderr


def test_the_rules_are_in_the_help_and_the_tool_descriptions(cli: CliFn) -> None:
    text = " ".join(cli("serve-mcp", "--help").stdout.split())
    for part in ("--mine-root", "--read-only", "mcp_mine_roots", "dry_run: false"):
        assert part in text, part
    assert f"{MAX_BULK_DELETE:,} drawers per call" in text
    mine = TOOLS_BY_NAME["mempalace_mine"].description
    for part in ("--mine-root", "mcp_mine_roots", "none by default", "absolute path", "symlinks"):
        assert part in mine, part
    for name in ("mempalace_delete_by_source", "mempalace_delete_drawers"):
        spec = TOOLS_BY_NAME[name]
        assert "dry_run: false" in spec.description and "mempalace forget" in spec.description
        assert f"At most {MAX_BULK_DELETE:,} drawers per call" in spec.description
        assert next(a for a in spec.args if a.name == "dry_run").default is True
    assert "('/'), the home folder ('~'), the server's working folder ('.')" in (
        TOOLS_BY_NAME["mempalace_delete_by_source"].description
    )


def test_a_server_with_no_mining_root_mines_nothing(tmp_path: Path, embedder: Embedder) -> None:
    """The default: the real server (in process) and the SDK's client."""
    folder = tmp_path / "notes"
    folder.mkdir()
    shutil.copy(NOTES / "project" / "architecture.md", folder)
    palace = open_palace(str(tmp_path / "palace"))
    server = build_server(palace, ServeOptions(config_path="/cfg/config.toml"))
    try:
        with (
            start_blocking_portal() as portal,
            portal.wrap_async_context_manager(Client(server)) as client,
        ):
            for dry_run in (True, False):
                args = {"source": str(folder), "dry_run": dry_run}
                result = portal.call(client.call_tool, "mempalace_mine", args)
                text = result.content[0].text
                assert result.is_error and "Mining over MCP is off" in text
                assert "--mine-root" in text and "mcp_mine_roots" in text
                assert "/cfg/config.toml" in text
        assert not palace.exists()  # nothing was filed: no palace was even created
    finally:
        palace.close()


# -- end to end: one stdio server with mining roots, started in a mined folder ------------------
@pytest.fixture(scope="module")
def policy(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[McpSession]:
    base = tmp_path_factory.mktemp("policy")
    palace, home = base / "palace", base / "home"
    home.mkdir()
    # The server's working folder, mined: '.' would match all of it.
    work = base / "work"
    (work / "ops").mkdir(parents=True)
    (work / "ops" / "runbook.md").write_text(f"# Runbook\n\n{RUNBOOK}\n")
    (work / "ops" / "deploy.md").write_text("# Deploy\n\nDeploys go out on Thursdays only.\n")
    (work / "team.md").write_text("# Team\n\nMaya owns the storage layer.\n")
    # More drawers from one folder than one call may remove.
    bulk = base / "bulk"
    bulk.mkdir()
    for i in range(MAX_BULK_DELETE + 1):
        (bulk / f"note-{i:04d}.md").write_text(f"# Note {i}\n\nBulk note number {i} of the cap.\n")
    mine_cli(palace, work)
    mine_cli(palace, bulk)
    # The roots: one by flag (with links out of it), one in config.toml.
    flag_root = base / "flag-root"
    (flag_root / "handbook").mkdir(parents=True)
    (flag_root / "handbook" / "planning.md").write_text(f"# Planning\n\n{HANDBOOK}\n")
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(f"# Outside\n\n{OUTSIDE_NOTE}\n")
    (flag_root / "etc-link").symlink_to("/etc")
    (flag_root / "escape").symlink_to(outside)
    (flag_root / "handbook" / "secret-link.md").symlink_to(outside / "secret.md")
    config_root = base / "config-root"
    (config_root / "log").mkdir(parents=True)
    (config_root / "log" / "lighthouse.md").write_text(f"# Lighthouse\n\n{CONFIG_NOTE}\n")
    (home / "config.toml").write_text(f'mcp_mine_roots = ["{config_root}"]\n')
    log = base / "server.log"
    with stdio_session(palace, home, log, "--mine-root", str(flag_root), cwd=work) as session:
        session.base = base  # type: ignore[attr-defined]
        yield session


def total(mcp: McpSession) -> int:
    return int(mcp.ok("mempalace_status")["total_drawers"])


def texts(mcp: McpSession, query: str, **filters: Any) -> list[str]:
    found = mcp.ok("mempalace_search", {"query": query, "limit": 10, **filters})
    return [r["text"] for r in found["results"]]


def test_mine_refuses_anything_outside_the_roots(policy: McpSession) -> None:
    base: Path = policy.base  # type: ignore[attr-defined]
    before = total(policy)
    refused = {
        "/etc": "outside the folders this server may mine",
        str(base / "flag-root" / "etc-link"): "outside the folders this server may mine",
        str(base / "flag-root" / "escape"): "outside the folders this server may mine",
        str(base / "flag-root" / ".." / "outside"): "outside the folders this server may mine",
        str(base / "work"): "outside the folders this server may mine",
        "~": "not an absolute path",
        "~/.ssh": "not an absolute path",
        "outside": "not an absolute path",
        "../outside": "not an absolute path",
    }
    for source, says in refused.items():
        for dry_run in (True, False):
            message = policy.error("mempalace_mine", {"source": source, "dry_run": dry_run})
            assert says in message and "nothing was mined" in message, (source, message)
            assert str(base / "flag-root") in message and str(base / "config-root") in message
    assert total(policy) == before
    assert OUTSIDE_NOTE not in texts(policy, "vault combination blue card")


def test_mine_under_an_allowed_root_files_and_finds_it(policy: McpSession) -> None:
    base: Path = policy.base  # type: ignore[attr-defined]
    root = base / "flag-root"
    dry = policy.ok("mempalace_mine", {"source": str(root), "dry_run": True, "wing": "handbook"})
    assert dry["dry_run"] is True and dry["files"]["mined"] == 1 and dry["drawers"]["added"] >= 1
    assert HANDBOOK not in texts(policy, "when is quarterly planning", wing="handbook")

    mined = policy.ok("mempalace_mine", {"source": str(root), "wing": "handbook"})
    assert mined["directory"] == str(root) and mined["files"]["mined"] == 1
    # The link inside the root that leads out of it is skipped, saying why.
    skipped = " ".join(str(s) for s in mined["skipped"])
    assert "secret-link.md" in skipped and "outside the mined folder" in skipped
    assert any(HANDBOOK in t for t in texts(policy, "when is quarterly planning"))
    assert OUTSIDE_NOTE not in " ".join(texts(policy, "vault combination blue card"))

    # The root from config.toml works the same way.
    cfg = policy.ok("mempalace_mine", {"source": str(base / "config-root" / "log")})
    assert cfg["files"]["mined"] == 1
    assert any(CONFIG_NOTE in t for t in texts(policy, "fog horn tests lighthouse"))


def test_mine_over_mcp_never_moves_drawers_to_another_wing(policy: McpSession) -> None:
    """The CLI asks a person before a re-mine moves drawers to another wing; an agent can't be
    asked, so the call is refused and nothing moves."""
    base: Path = policy.base  # type: ignore[attr-defined]
    root = base / "flag-root"
    policy.ok("mempalace_mine", {"source": str(root), "wing": "handbook"})
    before = total(policy)
    message = policy.error("mempalace_mine", {"source": str(root), "wing": "elsewhere"})
    assert "would move" in message and "from wing handbook to wing elsewhere" in message
    assert "Nothing was written" in message and "--yes" in message
    assert total(policy) == before
    assert any(HANDBOOK in t for t in texts(policy, "when is quarterly planning", wing="handbook"))


def test_bulk_delete_refuses_roots_home_and_the_working_folder(policy: McpSession) -> None:
    base: Path = policy.base  # type: ignore[attr-defined]
    work = base / "work"
    before = total(policy)
    refused = {
        "/": "a filesystem root",
        ".": "the server's working folder",
        str(work): "the server's working folder",
        str(work / "ops" / ".."): "the server's working folder",
        "..": "a folder that holds the server's working folder",
        str(base): "a folder that holds the server's working folder",
        "~": "the home folder",
    }
    for source, why in refused.items():
        for args in ({}, {"dry_run": True}, {"dry_run": False}):
            message = policy.error("mempalace_delete_by_source", {"source_file": source, **args})
            assert why in message and "nothing was removed" in message, (source, message)
            assert "mempalace forget --source PATH" in message
    assert total(policy) == before
    assert any("Maya owns the storage layer" in t for t in texts(policy, "who owns storage"))


def test_bulk_delete_is_a_dry_run_unless_told_otherwise(policy: McpSession) -> None:
    ops = str(policy.base / "work" / "ops")  # type: ignore[attr-defined]
    before = total(policy)
    preview = policy.ok("mempalace_delete_by_source", {"source_file": ops})
    assert preview["dry_run"] is True and preview["removed"] == 0 and preview["matched"] >= 2
    assert {s["source_file"] for s in preview["sources"]} == {
        f"{ops}/runbook.md",
        f"{ops}/deploy.md",
    }
    assert sum(s["drawers"] for s in preview["sources"]) == preview["matched"]
    assert "Dry run: nothing was removed" in preview["hint"] and "dry_run: false" in preview["hint"]
    assert total(policy) == before
    assert any(RUNBOOK in t for t in texts(policy, "restart the ingest worker"))

    gone = policy.ok("mempalace_delete_by_source", {"source_file": ops, "dry_run": False})
    assert gone["dry_run"] is False and gone["removed"] == preview["matched"]
    assert sorted(gone["files_forgotten"]) == [f"{ops}/deploy.md", f"{ops}/runbook.md"]
    assert total(policy) == before - preview["matched"]
    assert not any(RUNBOOK in t for t in texts(policy, "restart the ingest worker"))

    # delete_drawers too: ids alone only preview.
    team = policy.ok("mempalace_search", {"query": "who owns the storage layer", "limit": 1})
    drawer_id = team["results"][0]["drawer_id"]
    listed = policy.ok("mempalace_delete_drawers", {"drawer_ids": [drawer_id]})
    assert listed["dry_run"] is True and listed["removed"] == 0 and listed["matched"] == 1
    assert policy.ok("mempalace_get_drawer", {"drawer_id": drawer_id})["drawer_id"] == drawer_id
    assert total(policy) == before - preview["matched"]


def test_bulk_delete_over_the_cap_is_refused(policy: McpSession) -> None:
    bulk = str(policy.base / "bulk")  # type: ignore[attr-defined]
    before = total(policy)
    preview = policy.ok("mempalace_delete_by_source", {"source_file": bulk})
    assert preview["dry_run"] is True and preview["matched"] == MAX_BULK_DELETE + 1
    assert len(preview["sources"]) == SHOWN_SOURCES
    assert preview["sources_total"] == MAX_BULK_DELETE + 1
    assert len(preview["drawers"]) == SHOWN_DRAWERS
    assert preview["drawers_not_shown"] == MAX_BULK_DELETE + 1 - SHOWN_DRAWERS
    assert "dry_run: false would be refused" in preview["hint"]
    assert preview["max_per_call"] == MAX_BULK_DELETE

    message = policy.error("mempalace_delete_by_source", {"source_file": bulk, "dry_run": False})
    assert f"{MAX_BULK_DELETE + 1:,} drawers" in message
    assert f"at most {MAX_BULK_DELETE:,} go per MCP call" in message
    assert "nothing was removed" in message and "Narrow it" in message
    assert "mempalace forget --source PATH" in message
    assert total(policy) == before

    # Narrowed to one file, it goes through.
    one = f"{bulk}/note-0007.md"
    gone = policy.ok("mempalace_delete_by_source", {"source_file": one, "dry_run": False})
    assert gone["removed"] == 1 and gone["files_forgotten"] == [one]
    assert total(policy) == before - 1


# -- end to end: --read-only over stdio and HTTP -----------------------------------------------
@pytest.fixture(scope="module", params=["stdio", "http"])
def read_only(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, embedder: Embedder
) -> Iterator[McpSession]:
    base = tmp_path_factory.mktemp(f"read-only-{request.param}")
    notes = base / "notes"
    notes.mkdir()
    shutil.copy(NOTES / "decisions" / "0002-minio-object-storage.md", notes)
    mine_cli(base / "palace", notes)
    home = base / "home"
    home.mkdir()
    start = stdio_session if request.param == "stdio" else http_session
    flags = ("--read-only", "--mine-root", str(base))
    with start(base / "palace", home, base / "server.log", *flags) as session:
        yield session


WRITE_CALLS: dict[str, dict[str, Any]] = {
    "mempalace_add_drawer": {"wing": "w", "room": "r", "content": "A new fact to file."},
    "mempalace_mine": {"source": "/tmp"},
    "mempalace_delete_by_source": {"source_file": "/tmp/notes", "dry_run": False},
    "mempalace_kg_add": {"subject": "Maya", "predicate": "owns", "object": "storage"},
    "mempalace_diary_write": {"agent_name": "claude", "entry": "Wrote nothing."},
}


def test_read_only_lists_and_runs_only_read_tools(read_only: McpSession) -> None:
    listed = {t.name for t in read_only.list_tools()}
    assert listed == set(READ_TOOLS) and not listed & set(WRITE_TOOLS)
    before = read_only.ok("mempalace_status")["total_drawers"]
    assert before > 0
    for name in WRITE_TOOLS:
        message = read_only.error(name, WRITE_CALLS.get(name, {}))
        assert f"Unknown tool: {name}" in message
        assert "read-only" in message and "mempalace serve-mcp --read-only" in message
        served = message.split("This server's tools: ")[1].rstrip(".").split(", ")
        assert set(served) == set(READ_TOOLS)
    assert read_only.ok("mempalace_status")["total_drawers"] == before
    assert read_only.ok("mempalace_kg_stats")["triples"] == 0
    found = read_only.ok("mempalace_search", {"query": "why did we pick MinIO"})
    assert found["results"] and "MinIO" in found["results"][0]["text"]
    assert "no such tool" in read_only.error("mempalace_nope", {})
