"""The autouse isolation in conftest.py: no test sees the caller's MEMPALACE_* variables,
their ~/.mempalace, or another test's home."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from mempalace_cli.common.config import mempalace_home, resolve_settings

SEEN: list[Path] = []
# The one variable the isolation sets besides MEMPALACE_HOME: the test session's own model
# cache (conftest.py), a pytest temp folder, never the user's ~/.cache.
CACHE_ENV = "MEMPALACE_CACHE_DIR"


def _session_cache_only(tmp_path: Path) -> None:
    """The cache is a folder of this pytest run (a sibling of the test's own tmp_path)."""
    assert Path(os.environ[CACHE_ENV]).is_relative_to(tmp_path.parent)


def test_every_test_has_its_own_home_and_no_mempalace_variables(tmp_path: Path) -> None:
    assert sorted(k for k in os.environ if k.startswith("MEMPALACE_")) == [
        CACHE_ENV,
        "MEMPALACE_HOME",
    ]
    _session_cache_only(tmp_path)
    home = mempalace_home()
    assert home.is_relative_to(tmp_path) and home.is_dir()
    assert Path.home().is_relative_to(tmp_path)
    assert resolve_settings().palace_path.is_relative_to(tmp_path)
    SEEN.append(home)


def test_a_second_test_gets_another_home(tmp_path: Path) -> None:
    home = mempalace_home()
    assert home.is_relative_to(tmp_path)
    assert all(home != earlier for earlier in SEEN)


def test_a_subprocess_inherits_the_isolation(tmp_path: Path) -> None:
    """Tests that start `mempalace` as a process pass os.environ on: it must be clean too."""
    code = (
        "import os, pathlib; print(os.environ['MEMPALACE_HOME']); print(pathlib.Path.home()); "
        "print(sorted(k for k in os.environ if k.startswith('MEMPALACE_')))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ)
    )
    assert proc.returncode == 0, proc.stderr
    mp_home, user_home, keys = proc.stdout.splitlines()
    assert Path(mp_home).is_relative_to(tmp_path) and Path(user_home).is_relative_to(tmp_path)
    assert keys == f"['{CACHE_ENV}', 'MEMPALACE_HOME']"


def test_the_chroma_server_url_stays_readable_through_a_fixture(test_chroma_url: str) -> None:
    assert "MEMPALACE_TEST_CHROMA_URL" not in os.environ
    assert test_chroma_url == "" or test_chroma_url.startswith("http")
