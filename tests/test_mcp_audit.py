"""The MCP server's activity log, its read-only palaces and its error messages, each driven by
the SDK's own client against `mempalace serve-mcp` in a real subprocess:

- every call is recorded (client, transport, peer, tool, argument previews with secrets
  redacted, drawer ids returned, duration, outcome) and `mempalace activity` reads it back;
- the log is bounded (oldest rows dropped) and never needs the palace's write lock;
- a palace this user may not write is searched, listed and read over MCP; writes are refused
  with a permission message; nothing is recorded, with one warning;
- a full disk over MCP says so and what to do, through the CLI's own mapping.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import start_blocking_portal
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import Implementation

from mempalace_cli.common import errors
from mempalace_cli.service.audit import (
    ACTIVITY_FILE,
    MAX_ROWS,
    VALUE_CHARS,
    ActivityLog,
    Caller,
    read_activity,
)
from mempalace_cli.storage.locking import PalaceLock
from tests.conftest import NOTES
from tests.test_honest_exits import _as_unprivileged
from tests.test_mcp_support import CALL_TIMEOUT, McpSession, http_server
from tests.test_watch_support import cli_env, mempalace_command, run_cli

AGENT = Implementation(name="audit-test-agent", version="4.2.0")
# A GitHub token the redaction knows (ghp_ + 36 characters); never a real one.
TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
SENTINEL = "zebra-quokka-sentinel"  # past the preview: must never reach the log


@contextmanager
def mcp_client(transport: Any, log: Path, palace: Path, mode: str = "auto") -> Iterator[McpSession]:
    """A connected SDK client that names itself AGENT, called synchronously."""
    with start_blocking_portal() as portal:
        client = Client(transport, mode=mode, client_info=AGENT, read_timeout_seconds=CALL_TIMEOUT)
        with portal.wrap_async_context_manager(client) as connected:
            yield McpSession(portal, connected, palace, log, [])


@contextmanager
def stdio(
    palace: Path, home: Path, log: Path, prefix: list[str] | None = None
) -> Iterator[McpSession]:
    cmd = [*(prefix or []), *mempalace_command(), "--palace", str(palace), "serve-mcp"]
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env={"MEMPALACE_HOME": str(home)})
    with (
        log.open("w") as errlog,
        mcp_client(stdio_client(params, errlog=errlog), log, palace, mode="legacy") as session,
    ):
        yield session


@pytest.fixture(scope="module")
def mined(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small palace (examples/notes/people), mined once; tests copy it."""
    base = tmp_path_factory.mktemp("audit")
    (base / "home").mkdir()
    shutil.copytree(NOTES / "people", base / "people")
    run_cli(base / "home", "--palace", base / "palace", "mine", base / "people")
    return base / "palace"


@pytest.fixture
def palace(mined: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "palace"
    shutil.copytree(mined, dest)
    return dest


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    return h


def _activity(home: Path, palace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`mempalace activity ARGS` with its output to a pipe."""
    return subprocess.run(
        [*mempalace_command(), "--palace", str(palace), "activity", *args],
        env=cli_env(home),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


# -- the log ------------------------------------------------------------------------------------
def test_every_call_is_recorded_and_mempalace_activity_reads_it(
    palace: Path, home: Path, tmp_path: Path
) -> None:
    secret_note = f"Deploy key {TOKEN} for the release bot. " + "More words. " * 80 + SENTINEL
    with stdio(palace, home, tmp_path / "server.log") as mcp:
        # Recording a call never takes the palace's write lock: held elsewhere, a search
        # still answers and is recorded.
        with PalaceLock(palace, timeout=5).hold():
            found = mcp.ok("mempalace_search", {"query": "who prefers async updates", "limit": 3})
        added = mcp.ok(
            "mempalace_add_drawer", {"wing": "ops", "room": "keys", "content": secret_note}
        )
        missing = mcp.error("mempalace_get_drawer", {"drawer_id": "drawer_nope"})
        bad = mcp.error("mempalace_search", {"query": "async", "limit": 0})
        unknown = mcp.error("mempalace_frobnicate", {"level": 11})
    assert found["results"] and added["success"]
    assert unknown.startswith("Unknown tool: mempalace_frobnicate")
    assert "No drawer with id 'drawer_nope'" in missing and "Hint:" in missing
    assert "limit" in bad

    calls = run_cli(home, "--palace", palace, "activity")["calls"]  # newest first
    tools = [c["tool"] for c in calls]
    assert tools == [
        "mempalace_frobnicate",
        "mempalace_search",
        "mempalace_get_drawer",
        "mempalace_add_drawer",
        "mempalace_search",
    ]
    search, add, get, invalid, refused = calls[4], calls[3], calls[2], calls[1], calls[0]
    for call in calls:
        assert (call["client"], call["client_version"]) == ("audit-test-agent", "4.2.0")
        assert call["transport"] == "stdio" and call["peer"] is None
        assert call["at"].endswith("Z")
    assert all(c["duration_ms"] > 0 for c in calls[1:])
    assert search["outcome"] == "ok" and search["error_kind"] is None
    assert search["arguments"] == {"query": "who prefers async updates", "limit": 3}
    assert search["drawer_ids"] == [r["drawer_id"] for r in found["results"]]
    assert search["drawers"] == len(found["results"])
    assert add["drawer_ids"] == [added["drawer_id"]]
    preview = add["arguments"]["content"]
    assert preview.startswith("Deploy key [REDACTED:github-token] for the release bot.")
    assert f"({len(secret_note):,} chars)" in preview
    assert len(preview) <= VALUE_CHARS + 20
    assert get["outcome"] == "error" and get["error_kind"] == "not_found"
    assert "drawer_nope" in get["message"] and get["drawer_ids"] == []
    assert invalid["outcome"] == "error" and invalid["error_kind"] == "invalid_input"
    assert refused["error_kind"] == "unknown_tool" and refused["arguments"] == {"level": 11}
    # Neither the token nor the text past the preview is anywhere in the log's files.
    for f in palace.glob(ACTIVITY_FILE + "*"):
        raw = f.read_bytes()
        assert TOKEN.encode() not in raw and SENTINEL.encode() not in raw, f.name

    # Filters, and plain lines on a pipe: time, client, transport, tool, outcome, ms, drawers,
    # arguments (JSON), tab-separated.
    newest = run_cli(home, "--palace", palace, "activity", "--limit", "1")["calls"]
    assert [c["id"] for c in newest] == [refused["id"]]
    failed = run_cli(home, "--palace", palace, "activity", "--errors")["calls"]
    assert [c["id"] for c in failed] == [refused["id"], invalid["id"], get["id"]]
    piped = _activity(home, palace, "--tool", "search")
    assert piped.returncode == 0, piped.stderr
    lines = piped.stdout.splitlines()
    assert len(lines) == 2 and "\x1b[" not in piped.stdout
    fields = lines[1].split("\t")
    assert fields[:5] == [
        search["at"],
        "audit-test-agent 4.2.0",
        "stdio",
        "mempalace_search",
        "ok",
    ]
    assert fields[6] == str(search["drawers"]) and json.loads(fields[7]) == search["arguments"]
    assert lines[0].split("\t")[4].startswith("invalid_input: ")

    typo = _activity(home, palace, "--tool", "serch")
    assert typo.returncode == 4 and "Did you mean: --tool search?" in typo.stderr


def test_http_calls_record_the_transport_and_the_peer_address(
    palace: Path, home: Path, tmp_path: Path
) -> None:
    with (
        http_server(palace, home, tmp_path / "server.log") as url,
        mcp_client(url, tmp_path / "server.log", palace) as mcp,
    ):
        mcp.ok("mempalace_status")
    port = url.split(":")[2].split("/")[0]
    (call,) = read_activity(palace)
    assert call.tool == "mempalace_status" and call.outcome == "ok"
    assert call.transport == "http"
    assert call.peer is not None and call.peer.startswith("127.0.0.1:")
    assert call.peer != f"127.0.0.1:{port}"  # the client's side of the connection
    assert call.client == "audit-test-agent"


def test_the_log_keeps_the_newest_calls_and_summarises_arguments(tmp_path: Path) -> None:
    assert MAX_ROWS == 10_000  # the documented bound
    folder = tmp_path / "palace"
    folder.mkdir()
    log = ActivityLog(folder, max_rows=25)
    caller = Caller("agent", "1", "http", "10.0.0.7:5000")
    many = {f"arg{i}": "x" * 500 for i in range(40)}
    for n in range(60):
        result = {"results": [{"drawer_id": f"d{n}-{i}"} for i in range(30)]}
        log.record(caller, "mempalace_search", {"query": f"q{n}", **many}, result, 12.5)
    log.close()
    rows = read_activity(folder, limit=100)
    assert [r.arguments["query"] for r in rows] == [f"q{n}" for n in range(59, 34, -1)]
    top = rows[0]
    assert top.drawers == 30 and len(top.drawer_ids) == 20  # the count whole, 20 ids kept
    assert top.drawer_ids[0] == "d59-0" and top.peer == "10.0.0.7:5000"
    summary = json.dumps(top.arguments)
    assert len(summary) < 1500 and "(500 chars)" in summary and "more" in top.arguments["…"]
    assert read_activity(folder, tool="search", limit=5)[0].id == top.id
    assert read_activity(folder, tool="mempalace_kg_add") == []


# -- read-only palaces --------------------------------------------------------------------------
@pytest.fixture
def read_only(palace: Path, home: Path) -> Iterator[Path]:
    # A search first: it builds the vector index, whose lock file a read-only search must open.
    run_cli(home, "--palace", palace, "search", "who prefers async updates")
    assert (palace / "vector_index" / "lock").exists()
    for p in [palace, *palace.rglob("*")]:
        p.chmod(p.stat().st_mode & ~0o222)
    try:
        yield palace
    finally:
        for p in [palace, *palace.rglob("*")]:
            p.chmod(p.stat().st_mode | 0o200)


def test_a_read_only_palace_is_searched_listed_and_read_over_mcp(
    read_only: Path, home: Path, tmp_path: Path
) -> None:
    prefix = _as_unprivileged()
    before = sorted(p.name for p in read_only.rglob("*"))
    log = tmp_path / "server.log"
    with stdio(read_only, home, log, prefix=prefix) as mcp:
        found = mcp.ok("mempalace_search", {"query": "who prefers async updates"})
        assert found["results"]
        drawer_id = found["results"][0]["drawer_id"]
        assert mcp.ok("mempalace_get_drawer", {"drawer_id": drawer_id})["text"]
        assert mcp.ok("mempalace_list_drawers")["drawers"]
        assert mcp.ok("mempalace_status")["total_drawers"] > 0
        assert mcp.ok("mempalace_kg_query", {"entity": "Priya"})["entity"] == "Priya"
        for tool, args in (
            ("mempalace_add_drawer", {"wing": "w", "room": "r", "content": "A new note."}),
            ("mempalace_kg_add", {"subject": "Priya", "predicate": "leads", "object": "ops"}),
            ("mempalace_delete_drawer", {"drawer_id": drawer_id}),
        ):
            refused = mcp.error(tool, args)
            assert refused.startswith("Permission denied"), (tool, refused)
            assert "Hint:" in refused and "read-only palace" in refused
            assert "Unexpected" not in refused
        assert mcp.ok("mempalace_search", {"query": "async"})["results"]  # still serving
        by_mcp = mcp.error("mempalace_kg_add", {"subject": "A", "predicate": "b", "object": "c"})
    # One mapping for both: the command line says the same, with its exit status (10).
    cli = subprocess.run(
        [*prefix, *mempalace_command(), "--palace", str(read_only), "kg", "add", "A", "b", "c"],
        env=cli_env(home),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert cli.returncode == errors.EXIT_STATUS[errors.PermissionDeniedError] == 10
    message, hint = by_mcp.split(" Hint: ")
    assert f"Error: {message}" in " ".join(cli.stderr.split())
    assert f"Hint: {hint}" in " ".join(cli.stderr.split())
    server_log = log.read_text()
    assert "Traceback" not in server_log
    assert server_log.count("not recorded in its activity log") == 1
    assert sorted(p.name for p in read_only.rglob("*")) == before  # nothing written
    shown = _activity(home, read_only)
    assert shown.returncode == 0 and "No MCP calls recorded" in shown.stdout


# -- a full disk --------------------------------------------------------------------------------
@pytest.fixture
def small_disk() -> Iterator[Path]:
    """A 2 MiB tmpfs: a few drawers fill it."""
    where = Path(tempfile.mkdtemp(prefix="mempalace-full-"))
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        where.rmdir()
        pytest.skip(f"cannot mount a small tmpfs here: {proc.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)
        where.rmdir()


def test_sqlites_full_disk_maps_to_the_clis_disk_full_status(small_disk: Path) -> None:
    conn = sqlite3.connect(small_disk / "filler.sqlite3")
    conn.execute("CREATE TABLE t (b BLOB)")
    with pytest.raises(sqlite3.OperationalError) as caught:
        for _ in range(1000):
            conn.execute("INSERT INTO t VALUES (?)", (os.urandom(64 * 1024),))
            conn.commit()
    conn.close()
    assert "full" in str(caught.value)
    failure = errors.failure_of(caught.value, small_disk / "filler.sqlite3", "finish the call")
    assert (failure.status, failure.kind) == (9, "disk_full")
    assert failure.status == errors.EXIT_STATUS[errors.DiskFullError]
    assert failure.message.startswith("The disk is full: could not write")
    assert "Free some space" in (failure.hint or "")


def _fill(disk: Path) -> None:
    """Take every free byte of `disk` with a filler file."""
    fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for size in (65536, 4096, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                continue
    finally:
        os.close(fd)


def _refusal(mcp: McpSession, tool: str, make_args: Any) -> str:
    """Call `tool` with fresh arguments until it fails (SQLite reuses free pages first)."""
    for n in range(100):
        result = mcp.call(tool, make_args(n))
        if result.is_error:
            return "".join(getattr(c, "text", "") for c in result.content)
    raise AssertionError(f"{tool} never failed on the full disk")


def test_a_full_disk_over_mcp_says_so_and_what_to_do(
    small_disk: Path, home: Path, tmp_path: Path
) -> None:
    palace = small_disk / "palace"
    log = tmp_path / "server.log"
    with stdio(palace, home, log) as mcp:
        mcp.ok("mempalace_add_drawer", {"wing": "ops", "room": "notes", "content": "A first note."})
        mcp.ok("mempalace_kg_add", {"subject": "Ana", "predicate": "owns", "object": "billing"})
        _fill(small_disk)
        # The knowledge graph's own SQLite write (it was "Unexpected OperationalError"), then a
        # drawer (the drawer store's write).
        for tool, make_args in (
            (
                "mempalace_kg_add",
                lambda n: {"subject": f"S{n}", "predicate": "p", "object": "o" * 400},
            ),
            (
                "mempalace_add_drawer",
                lambda n: {"wing": "w", "room": "r", "content": f"Note {n}. " * 500},
            ),
        ):
            refused = _refusal(mcp, tool, make_args)
            assert refused.startswith("The disk is full"), (tool, refused)
            assert "Free some space on that disk" in refused, refused
            assert "Unexpected" not in refused and "corrupt" not in refused.lower()
        (small_disk / "filler").unlink()
        assert mcp.ok("mempalace_kg_query", {"entity": "Ana"})["facts"]  # still serving
    assert "Traceback" not in log.read_text()
