"""Honest exits: every failure a user can meet ends with its own name, a hint and a documented
exit status, in a real process; never a traceback, never SIGABRT, never "corrupt" for a full
disk or a permission problem, never "unchanged" for an emptied drawer store."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import NOTES
from tests.test_watch_support import cli_env, mempalace_command

# Root ignores file permissions; these capabilities dropped, it is held to them like any user.
DROP_ROOT_OVERRIDES = ["--bounding-set", "-dac_override,-dac_read_search,-fowner"]


def run(
    home: Path, *args: str | bytes, prefix: list[str] | None = None, env: dict | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*(prefix or []), *mempalace_command(), *args],
        env={**cli_env(home), **(env or {})},
        capture_output=True,
        text=True,
        errors="replace",
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def error_of(proc: subprocess.CompletedProcess[str], code: int) -> dict:
    """The JSON error of a --json run that must exit with `code`, without a traceback."""
    assert proc.returncode == code, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    error = json.loads(proc.stdout)["error"]
    assert error["message"] and error["hint"], error
    return error


@pytest.fixture(scope="module")
def mined(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small palace, mined once; tests copy it."""
    base = tmp_path_factory.mktemp("exits")
    (base / "home").mkdir()
    shutil.copytree(NOTES / "people", base / "people")
    proc = run(base / "home", "--palace", str(base / "palace"), "mine", str(base / "people"))
    assert proc.returncode == 0, proc.stderr
    return base


@pytest.fixture
def palace(mined: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "palace"
    shutil.copytree(mined / "palace", dest)
    return dest


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    return h


# -- an emptied drawer store ------------------------------------------------------------------
def test_an_emptied_drawer_store_is_reported_by_mine_status_and_search(
    palace: Path, home: Path, mined: Path
) -> None:
    (palace / "chroma.sqlite3").write_bytes(b"")  # truncate -s 0
    for args in (
        ("mine", str(mined / "people")),
        ("status",),
        ("search", "who prefers async updates"),
        ("search", "who prefers async updates", "--mode", "vector"),
    ):
        error = error_of(run(home, "--palace", str(palace), *args, "--json"), 6)
        assert "empty (0 bytes)" in error["message"], args
        assert "backup" in error["hint"]
    assert (palace / "chroma.sqlite3").stat().st_size == 0  # nothing recreated over it


def test_search_never_aborts_when_it_fails_while_the_model_loads(palace: Path, home: Path) -> None:
    """The query is embedded on a thread while the store is checked; a check that fails at
    once used to end the process with SIGABRT half the time (the thread was still loading)."""
    (palace / "chroma.sqlite3").write_bytes(b"")
    for _ in range(6):
        proc = run(home, "--palace", str(palace), "search", "who owns the roadmap")
        assert proc.returncode == 6, (proc.returncode, proc.stderr[-2000:])
        assert "terminate called" not in proc.stderr
        assert "Error:" in proc.stderr and "Hint:" in proc.stderr


# -- paths that are not folders ------------------------------------------------------------------
def test_home_or_palace_that_is_a_file_is_named(tmp_path: Path, home: Path) -> None:
    a_file = tmp_path / "afile"
    a_file.write_text("not a folder")
    error = error_of(run(home, "status", "--json", env={"MEMPALACE_HOME": str(a_file)}), 11)
    assert error["kind"] == "not_a_directory" and str(a_file) in error["message"]
    for palace in (a_file, a_file / "palace"):
        for args in (("status",), ("search", "x"), ("kg", "add", "a", "b", "c")):
            error = error_of(run(home, "--palace", str(palace), *args, "--json"), 11)
            assert error["kind"] == "not_a_directory", (palace, args)
            assert "is a file" in error["message"]


def test_a_lock_path_that_is_a_directory_is_named(palace: Path, home: Path, mined: Path) -> None:
    lock = palace / ".mempalace-write.lock"
    lock.unlink()
    lock.mkdir()
    (mined / "people" / "new-note.md").write_text("Tomas joins the platform team in May.\n")
    try:
        for args in (("kg", "add", "Tomas", "joins", "platform"), ("mine", str(mined / "people"))):
            error = error_of(run(home, "--palace", str(palace), *args, "--json"), 11)
            assert "lock file" in error["message"] and "is a directory" in error["message"]
            assert f"rmdir {lock}" in error["hint"]
    finally:
        (mined / "people" / "new-note.md").unlink()
    # Reading needs no lock: it still works.
    status = run(home, "--palace", str(palace), "status", "--json")
    assert status.returncode == 0 and json.loads(status.stdout)["total_drawers"] > 0


# -- invalid UTF-8 on the command line -----------------------------------------------------------
def test_invalid_utf8_arguments_are_refused_clearly(palace: Path, home: Path, tmp_path: Path):
    bad = os.fsdecode(b"caf\xe9 menu")  # Latin-1 bytes, as a mis-set terminal sends them
    bad_dir = tmp_path / os.fsdecode(b"notes-\xff")
    bad_dir.mkdir()
    for args in (
        ("search", bad),
        ("search", "menu", "--wing", bad),
        ("kg", "add", bad, "likes", "coffee"),
        ("mine", str(bad_dir)),
    ):
        error = error_of(run(home, "--palace", str(palace), *args, "--json"), 2)
        assert "not valid UTF-8" in error["message"], args
        assert "\\xe9" in error["message"] or "\\xff" in error["message"], args
        plain = run(home, "--palace", str(palace), *args)
        assert plain.returncode == 2 and "Traceback" not in plain.stderr
        assert "not valid UTF-8" in plain.stderr


# -- read-only palaces and permission denied -----------------------------------------------------
def _as_unprivileged() -> list[str]:
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: root ignores file permissions")
    return [setpriv, *DROP_ROOT_OVERRIDES]


@pytest.fixture
def read_only(palace: Path) -> Iterator[Path]:
    for p in [palace, *palace.rglob("*")]:
        p.chmod(p.stat().st_mode & ~0o222)
    try:
        yield palace
    finally:
        for p in [palace, *palace.rglob("*")]:
            p.chmod(p.stat().st_mode | 0o200)


def test_a_read_only_palace_can_be_searched_and_its_status_read(
    read_only: Path, home: Path
) -> None:
    prefix = _as_unprivileged()
    before = sorted(p.name for p in read_only.iterdir())
    status = run(home, "--palace", str(read_only), "status", "--json", prefix=prefix)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["total_drawers"] > 0
    for mode in ("hybrid", "vector", "lexical"):
        proc = run(
            home,
            "--palace",
            str(read_only),
            "search",
            "who prefers async updates",
            "--mode",
            mode,
            "--json",
            prefix=prefix,
        )
        assert proc.returncode == 0, (mode, proc.stderr)
        assert json.loads(proc.stdout)["results"], mode
    assert sorted(p.name for p in read_only.iterdir()) == before  # nothing written


def test_writing_to_a_read_only_palace_is_permission_denied(
    read_only: Path, home: Path, mined: Path
) -> None:
    prefix = _as_unprivileged()
    note = mined / "people" / "another-note.md"
    note.write_text("Priya moves the standup to 9:30 from next week.\n")
    try:
        for args in (("kg", "add", "Priya", "moves", "standup"), ("mine", str(mined / "people"))):
            proc = run(home, "--palace", str(read_only), *args, "--json", prefix=prefix)
            error = error_of(proc, 10)
            assert error["kind"] == "permission_denied", args
            assert "Permission denied" in error["message"] and "corrupt" not in proc.stdout
    finally:
        note.unlink()


# -- a full disk ---------------------------------------------------------------------------------
@pytest.fixture
def small_disk() -> Iterator[Path]:
    """A 1 MiB tmpfs: too small for a mined palace. Mounting one needs root (CI runs as root):
    a machine that refuses it fails here, never skips (a skip would keep CI green untested)."""
    where = Path(tempfile.mkdtemp(prefix="mempalace-full-"))
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        where.rmdir()
        pytest.fail(
            f"cannot mount a 1 MiB tmpfs for the full-disk test (run the tests as root, as "
            f".ci/run does): {proc.stderr.strip() or proc.returncode}"
        )
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)
        where.rmdir()


def test_a_full_disk_is_named_not_called_corruption(
    small_disk: Path, home: Path, mined: Path
) -> None:
    palace = small_disk / "palace"
    notes = small_disk.parent / f"{small_disk.name}-notes"
    shutil.copytree(NOTES, notes, ignore=shutil.ignore_patterns("mempalace.toml"))
    try:
        proc = run(home, "--palace", str(palace), "mine", str(notes), "--json")
        error = error_of(proc, 9)
        assert error["kind"] == "disk_full" and "disk is full" in error["message"]
        assert "corrupt" not in proc.stdout.lower()
        for args in (("status",), ("search", "backup schedule")):
            proc = run(home, "--palace", str(palace), *args, "--json")
            if proc.returncode != 0:  # repairing the unfinished write needs space too
                assert error_of(proc, 9)["kind"] == "disk_full", args
        plain = run(home, "--palace", str(palace), "mine", str(notes))
        assert plain.returncode == 9 and "Traceback" not in plain.stderr
        assert "Free some space" in plain.stderr
    finally:
        shutil.rmtree(notes)


# -- the knowledge graph's "today" ---------------------------------------------------------------
@pytest.mark.parametrize("tz", ["Pacific/Kiritimati", "AHEAD-24", "BEHIND+11"])
def test_kg_invalidate_without_a_date_ends_the_fact_in_any_time_zone(
    tmp_path: Path, home: Path, tz: str
) -> None:
    """UTC+14, a zone whose date is always a day ahead of UTC's, and UTC-11."""
    palace = tmp_path / "kg-palace"
    env = {"TZ": tz}

    def kg(*args: str) -> dict:
        proc = run(home, "--palace", str(palace), "kg", *args, "--json", env=env)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    local_today = subprocess.run(
        ["date", "+%Y-%m-%d"], env={**os.environ, "TZ": tz}, capture_output=True, text=True
    ).stdout.strip()
    if tz == "AHEAD-24":
        assert local_today > dt.datetime.now(dt.UTC).date().isoformat()
    kg("add", "Ana", "owns", "billing")
    ended = kg("invalidate", "Ana", "owns", "billing")
    assert ended["ended"] == local_today  # the user's today
    # Its last day (valid_to is inclusive): current until the user's today is over.
    assert [f["current"] for f in kg("query", "Ana")["facts"]] == [True]
    env["MEMPALACE_NOW"] = (dt.date.fromisoformat(local_today) + dt.timedelta(days=1)).isoformat()
    facts = kg("query", "Ana")["facts"]
    assert [f["current"] for f in facts] == [False]
    stats = kg("stats")
    assert stats["current_facts"] == 0 and stats["expired_facts"] == 1
