"""Chroma's internals are read in one module (storage/chroma_internals.py), checked first: the
installed chromadb is in the supported range and its store's layout is the one read; a store
whose layout differs (a chromadb release renamed a table or a column) is reported as "this
chromadb version is not supported (supported: ...)" by status, its repair path and search, in
a real process, with nothing changed on disk; never as a damaged palace."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from mempalace_cli.common.errors import PalaceCorruptError
from mempalace_cli.storage import chroma_internals
from mempalace_cli.storage.chroma_internals import (
    SUPPORTED_TEXT,
    UnsupportedChromaError,
    installed_version,
    is_supported,
    read_log_head,
)
from tests.conftest import NOTES
from tests.test_watch_support import cli_env, mempalace_command

NOT_SUPPORTED = f"This chromadb version is not supported (supported: {SUPPORTED_TEXT};"
# Changes a chromadb release could make to what chroma_internals.py reads.
ALTERATIONS = {
    "a renamed column": "ALTER TABLE embeddings_queue RENAME COLUMN topic TO topic_name",
    "a renamed table": "ALTER TABLE embeddings_queue RENAME TO embeddings_log",
    "a renamed name column": "ALTER TABLE collections RENAME COLUMN name TO collection_name",
}


def run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*mempalace_command(), *args],
        env=cli_env(home),
        capture_output=True,
        text=True,
        errors="replace",
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


def files_of(folder: Path) -> dict[str, str]:
    """Every file under `folder` -> the SHA-256 of its content."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def mined(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small palace, mined once by the CLI; tests copy it."""
    base = tmp_path_factory.mktemp("layout")
    (base / "home").mkdir()
    shutil.copytree(NOTES / "people", base / "people")
    proc = run(base / "home", "--palace", str(base / "palace"), "mine", str(base / "people"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return base


@pytest.fixture
def palace(mined: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "palace"
    shutil.copytree(mined / "palace", dest)
    return dest


def test_the_installed_chromadb_is_supported_and_its_store_is_read(palace: Path) -> None:
    version = installed_version()
    assert version is not None and is_supported(version), version
    head = read_log_head(palace, "mempalace_drawers")
    assert head is not None and head.collection_id and head.seq > 0
    # The range's edges, as the check reads versions.
    assert is_supported("1.5.0") and is_supported("1.99.3")
    assert not is_supported("1.4.9") and not is_supported("2.0.0rc1") and not is_supported("2.1")


# Another program writing the store (as MemPalace does): it copies one drawer's vector.
WRITER_SCRIPT = """
import json, sys, chromadb
col = chromadb.PersistentClient(path=sys.argv[1]).get_collection("mempalace_drawers")
vector = col.get(limit=1, include=["embeddings"])["embeddings"][0]
col.add(ids=["drawer_elsewhere_general_0001"], documents=["written elsewhere"],
        embeddings=[[float(x) for x in vector]],
        metadatas=[{"wing": "elsewhere", "room": "general"}])
print(json.dumps({"count": col.count()}))
"""


def test_the_log_head_read_every_search_blocks_no_writer_and_misses_no_write(
    palace: Path,
) -> None:
    """The log head is read on a connection this thread keeps open between searches: another
    process writes the store right after a read (not blocked: the idle connection holds no
    lock) and the next read sees its write."""
    before = read_log_head(palace, "mempalace_drawers")
    assert before is not None
    again = read_log_head(palace, "mempalace_drawers")  # on the kept connection
    assert again == before
    proc = subprocess.run(
        [sys.executable, "-c", WRITER_SCRIPT, str(palace)],
        capture_output=True,
        text=True,
        timeout=120,  # a lock held by the kept connection makes the writer wait until then
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    after = read_log_head(palace, "mempalace_drawers")
    assert after is not None and after.collection_id == before.collection_id
    assert after.seq > before.seq


def test_a_store_replaced_at_the_same_path_is_read_anew(palace: Path, mined: Path) -> None:
    """A kept connection belongs to the file it opened: a palace moved aside and another put
    at the same path is read from the new file."""
    first = read_log_head(palace, "mempalace_drawers")
    assert first is not None
    palace.rename(palace.with_name("moved-aside"))
    shutil.copytree(mined / "palace", palace)
    with sqlite3.connect(palace / "chroma.sqlite3") as conn:  # a different store at the path
        conn.execute("UPDATE collections SET name = 'renamed' WHERE name = 'mempalace_drawers'")
    conn.close()
    assert read_log_head(palace, "mempalace_drawers") == chroma_internals.LogHead(
        None, first.seq, first.oldest
    )
    assert read_log_head(palace, "renamed") == first


@pytest.mark.parametrize("change", sorted(ALTERATIONS))
def test_an_unknown_store_layout_is_not_supported_and_nothing_changes(
    palace: Path, mined: Path, change: str
) -> None:
    with sqlite3.connect(palace / "chroma.sqlite3") as conn:
        conn.execute(ALTERATIONS[change])
    conn.close()
    before = files_of(palace)
    home = mined / "home"
    for args in (
        ("status",),
        ("status", "--verify"),  # the full check and repair
        ("search", "who prefers async updates"),
    ):
        proc = run(home, "--palace", str(palace), *args, "--json")
        assert proc.returncode == 6, (args, proc.returncode, proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr
        error = json.loads(proc.stdout)["error"]
        assert error["message"].startswith(NOT_SUPPORTED), error
        assert f"installed: chromadb {installed_version()}" in error["message"]
        assert "Nothing was changed" in error["message"] and "not corruption" in error["hint"]
        assert error["kind"] == "incompatible"
    # Plain output says the same, in the CLI's words.
    proc = run(home, "--palace", str(palace), "status")
    assert proc.returncode == 6 and "not supported (supported: chromadb" in proc.stderr
    assert files_of(palace) == before


def test_a_chromadb_outside_the_range_is_named_before_anything_is_read(
    palace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The installed version is checked before Chroma's files are read (here the version
    lookup answers as a chromadb 2 would; the palace and its store are real)."""
    from mempalace_cli.common.config import resolve_settings
    from mempalace_cli.service import Palace

    monkeypatch.setattr(chroma_internals, "installed_version", lambda: "2.1.0")
    before = files_of(palace)
    p = Palace(resolve_settings(str(palace)))
    with pytest.raises(UnsupportedChromaError) as caught:
        p.status()
    p.close()
    assert caught.value.message.startswith(NOT_SUPPORTED)
    assert "installed: chromadb 2.1.0" in caught.value.message
    assert "pip install 'chromadb>=1.5,<2'" in (caught.value.hint or "")
    assert files_of(palace) == before


def test_a_file_with_no_chroma_table_is_still_reported_as_unreadable(palace: Path) -> None:
    """The difference the layout check keeps: not Chroma at all is a damaged store."""
    (palace / "chroma.sqlite3").unlink()
    with sqlite3.connect(palace / "chroma.sqlite3") as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
    conn.close()
    with pytest.raises(PalaceCorruptError) as caught:
        read_log_head(palace, "mempalace_drawers")
    assert not isinstance(caught.value, UnsupportedChromaError)
    assert "holds no Chroma tables" in caught.value.message
