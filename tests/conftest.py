"""Shared fixtures: an isolated MEMPALACE_HOME and HOME for every test (autouse), the real
embedder loaded once per session, a CliRunner, and a palace with examples/notes mined once per
session."""

from __future__ import annotations

import json
import os
import shutil
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mempalace_cli.cli import app
from mempalace_cli.embedders import DEFAULT_MODEL
from mempalace_cli.embedders.base import Embedder, get_embedder

REPO = Path(__file__).resolve().parent.parent
NOTES = REPO / "examples" / "notes"
# .ci/run exports the URL of a real Chroma server for tests/test_chroma_server.py. Read it once,
# here, before the isolation below clears every MEMPALACE_* variable from the environment.
TEST_CHROMA_URL_ENV = "MEMPALACE_TEST_CHROMA_URL"
_TEST_CHROMA_URL = os.environ.get(TEST_CHROMA_URL_ENV, "")

# A shell starts a background job (`.ci/run &`) with Ctrl-C ignored, and every process it starts
# inherits that: the tests that press Ctrl-C in a real `mempalace mine` need it delivered.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _clear_mempalace_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in [k for k in os.environ if k.startswith("MEMPALACE_")]:
        monkeypatch.delenv(key, raising=False)


# One model cache (mempalace_cli/embedders/cache.py) for the whole session, outside every test's
# HOME: its entries are keyed by content, and one per test would write ~80 MB each time.
_MODEL_CACHE: list[Path] = []


def _isolate(monkeypatch: pytest.MonkeyPatch, base: Path) -> Path:
    """No MEMPALACE_* variable from the caller's shell, HOME and MEMPALACE_HOME under `base`:
    nothing a test runs (in-process or as a subprocess inheriting os.environ) can read or
    write the real ~/.mempalace or a real Chroma server. The model cache is the session's."""
    _clear_mempalace_env(monkeypatch)
    if _MODEL_CACHE:
        monkeypatch.setenv("MEMPALACE_CACHE_DIR", str(_MODEL_CACHE[0]))
    user_home, mempalace_home = base / "user-home", base / "mempalace-home"
    user_home.mkdir(parents=True, exist_ok=True)
    mempalace_home.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HOME", str(user_home))
    monkeypatch.setenv("MEMPALACE_HOME", str(mempalace_home))
    return mempalace_home


@pytest.fixture(scope="session", autouse=True)
def _isolated_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Session-scoped fixtures (the mined notes palace) run isolated too."""
    _MODEL_CACHE[:] = [tmp_path_factory.mktemp("model-cache")]
    with pytest.MonkeyPatch.context() as mp:
        _isolate(mp, tmp_path_factory.mktemp("session-isolation"))
        yield


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own empty MEMPALACE_HOME and HOME and no MEMPALACE_* variables."""
    return _isolate(monkeypatch, tmp_path / ".isolation")


@pytest.fixture(scope="session")
def test_chroma_url() -> str:
    """MEMPALACE_TEST_CHROMA_URL as the test run was started with ("" when unset)."""
    return _TEST_CHROMA_URL.rstrip("/")


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The real offline model new palaces embed with, loaded once for the whole session (it is
    a process singleton)."""
    emb = get_embedder(DEFAULT_MODEL)
    emb.ensure_loaded()
    return emb


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty MEMPALACE_HOME; the palace defaults to home/palace."""
    h = tmp_path / "home"
    h.mkdir()
    monkeypatch.setenv("MEMPALACE_HOME", str(h))
    return h


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


CliFn = Callable[..., Any]


@pytest.fixture
def cli(runner: CliRunner, home: Path, embedder: Embedder) -> CliFn:
    """Run `mempalace ARGS...`; returns the CliRunner result. Use `cli_json` for --json."""

    def run(*args: str, input: str | None = None, expect: int | None = 0) -> Any:
        result = runner.invoke(app, [str(a) for a in args], input=input)
        if expect is not None:
            assert result.exit_code == expect, (
                f"exit {result.exit_code} != {expect}\nstdout:\n{result.stdout}\n"
                f"stderr:\n{result.stderr}\n{result.exception!r}"
            )
        return result

    return run


@pytest.fixture
def cli_json(cli: CliFn) -> CliFn:
    """Run `mempalace ARGS... --json` and return the parsed JSON document from stdout."""

    def run(*args: str, input: str | None = None, expect: int | None = 0) -> Any:
        result = cli(*args, "--json", input=input, expect=expect)
        return json.loads(result.stdout)

    return run


def run_cli(*args: str | Path, expect: int = 0) -> Any:
    """`mempalace ARGS` in this process; fails unless it exits with `expect`."""
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == expect, result.stdout + result.stderr
    return result


def search_hits(palace: Path, query: str, *flags: str) -> list[dict[str, Any]]:
    """The hits of `mempalace --palace PALACE search QUERY FLAGS --json`."""
    found = json.loads(run_cli("--palace", palace, "search", query, *flags, "--json").stdout)
    return found["results"]


def palace_of_notes(base: Path, notes: dict[str, str], model: str | None = None) -> Any:
    """A new palace under `base` (its own home) holding each note as one drawer in wing "team",
    room "notes", with the note's key as its source_file. `model`: the embedding model of the
    palace (the default model of new palaces when None)."""
    from mempalace_cli.common.config import resolve_settings
    from mempalace_cli.service import Palace

    home = base / "home"
    home.mkdir(parents=True, exist_ok=True)
    if model is not None:
        (home / "config.toml").write_text(f'embedding_model = "{model}"\n', encoding="utf-8")
    palace = Palace(resolve_settings(base / "palace", home=home))
    palace.add_drawers(
        [
            {"wing": "team", "room": "notes", "content": text, "source_file": key}
            for key, text in notes.items()
        ]
    )
    return palace


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    """A private copy of examples/notes that a test may edit."""
    dest = tmp_path / "notes"
    shutil.copytree(NOTES, dest, ignore=shutil.ignore_patterns("mempalace.toml"))
    return dest


@pytest.fixture(scope="session")
def mined_notes(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[dict]:
    """examples/notes mined once per session into its own palace (read-only for tests):
    {"palace": Path, "notes": Path, "home": Path}. Pass --palace explicitly to use it."""
    base = tmp_path_factory.mktemp("mined")
    notes_dir = base / "notes"
    shutil.copytree(NOTES, notes_dir, ignore=shutil.ignore_patterns("mempalace.toml"))
    palace = base / "palace"
    result = CliRunner().invoke(app, ["--palace", str(palace), "mine", str(notes_dir), "--json"])
    assert result.exit_code == 0, result.stdout + result.stderr
    yield {"palace": palace, "notes": notes_dir, "home": base}
