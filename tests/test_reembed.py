"""`mempalace reembed`: a palace made with all-MiniLM-L6-v2 keeps working, is switched to
another model, survives kill -9 at each step (searches keep the old vectors meanwhile) and
resumes; a palace MemPalace made is only switched with --force."""

from __future__ import annotations

import shutil
import signal
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mempalace_cli.common.config import COLLECTION_NAME, resolve_settings
from mempalace_cli.embedders import USE_NAME
from mempalace_cli.embedders.base import MODEL_NAME, get_embedder
from mempalace_cli.service import Palace
from mempalace_cli.storage.catalog import CATALOG_FILE
from tests.conftest import NOTES
from tests.test_watch_support import cli_env, mempalace_command, run_cli

NEW = "mempalace_drawers__use-multilingual-v3"
CLERK = "why did we move our sign-in provider to Clerk?"


def _minilm_palace(base: Path, legacy: bool) -> tuple[Path, Path]:
    """A palace of examples/notes embedded with MiniLM; `legacy`: without the model record,
    as palaces made before models were recorded are."""
    home = base / "home"
    home.mkdir(parents=True)
    (home / "config.toml").write_text(f'embedding_model = "{MODEL_NAME}"\n')
    palace = base / "palace"
    run_cli(home, "--palace", palace, "mine", NOTES)
    (home / "config.toml").write_text("")  # new palaces would now get the default model
    if legacy:
        with sqlite3.connect(palace / CATALOG_FILE) as conn:
            conn.execute("DELETE FROM meta WHERE key IN ('embedding_model', 'collection')")
    return home, palace


@pytest.fixture(scope="module")
def minilm_template(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Path:
    base = tmp_path_factory.mktemp("minilm")
    _minilm_palace(base, legacy=False)
    return base


@pytest.fixture
def minilm(minilm_template: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A private copy of the MiniLM palace: (home, palace)."""
    shutil.copytree(minilm_template, tmp_path / "copy")
    return tmp_path / "copy" / "home", tmp_path / "copy" / "palace"


def _chroma_settings() -> Any:
    from chromadb.config import Settings

    return Settings(anonymized_telemetry=False, allow_reset=False)  # what the palace opens with


def _collections(palace: Path) -> dict[str, dict[str, Any]]:
    import chromadb

    client = chromadb.PersistentClient(path=str(palace), settings=_chroma_settings())
    return {c.name: dict(c.metadata or {}) for c in client.list_collections()}


def _agree(palace: Path, model: str, collection: str) -> None:
    """Chroma's collection and the catalogue hold the same drawers (ids, texts) and the same
    vectors, and those vectors are `model`'s embeddings of the texts."""
    import chromadb

    col = chromadb.PersistentClient(path=str(palace), settings=_chroma_settings()).get_collection(
        collection
    )
    got = col.get(include=["documents", "embeddings"])
    p = Palace(resolve_settings(palace))
    try:
        ids, matrix = p.catalog.vectors()
        rows = p.catalog.get(ids)
    finally:
        p.close()
    chroma = dict(
        zip(got["ids"], zip(got["documents"], got["embeddings"], strict=True), strict=True)
    )
    assert sorted(chroma) == sorted(ids)
    for i, drawer_id in enumerate(ids):
        text, vec = chroma[drawer_id]
        assert text == rows[drawer_id].text
        assert np.allclose(vec, matrix[i], atol=1e-5)
    sample = ids[:5]
    fresh = get_embedder(model).embed([rows[i].text for i in sample])
    assert np.allclose(fresh, matrix[: len(sample)], atol=1e-3)


def _search(home: Path, palace: Path, query: str, mode: str = "hybrid") -> list[dict[str, Any]]:
    return run_cli(home, "--palace", palace, "search", query, "--mode", mode)["results"]


@pytest.mark.parametrize("legacy", [False, True], ids=["recorded", "made-before-records"])
def test_a_minilm_palace_keeps_working_and_is_switched(
    tmp_path: Path, embedder: Any, legacy: bool
) -> None:
    home, palace = _minilm_palace(tmp_path, legacy)
    models = run_cli(home, "--palace", palace, "models")
    assert models["palace_model"] == MODEL_NAME
    assert models["palace_model_origin"] == ("legacy" if legacy else "recorded")
    assert models["default_model"] == USE_NAME
    before = _search(home, palace, CLERK)
    assert "0006-auth0-to-clerk" in before[0]["source_file"]
    minilm = get_embedder(MODEL_NAME)
    expected = float(minilm.embed([CLERK])[0] @ minilm.embed([before[0]["text"]])[0])
    assert before[0]["similarity"] == pytest.approx(expected, abs=2e-3)  # queried with MiniLM

    report = run_cli(home, "--palace", palace, "reembed", "--model", USE_NAME)
    assert report["switched"] and report["model_before"] == MODEL_NAME
    assert report["model"] == USE_NAME and report["collection"] == NEW
    assert report["embedded"] == report["drawers"] > 64 and report["resumed_from"] == 0
    assert set(_collections(palace)) == {NEW}  # the MiniLM collection is gone
    assert _collections(palace)[NEW]["embedding_model"] == USE_NAME
    _agree(palace, USE_NAME, NEW)

    after = _search(home, palace, CLERK)
    assert "0006-auth0-to-clerk" in after[0]["source_file"]
    use = get_embedder(USE_NAME)
    expected = float(use.embed_query(CLERK) @ use.embed([after[0]["text"]])[0])
    assert after[0]["similarity"] == pytest.approx(expected, abs=2e-3)  # queried with USE
    chinese = _search(home, palace, "我们为什么把登录服务从 Auth0 换成 Clerk？", mode="vector")
    assert any("0006-auth0-to-clerk" in h["source_file"] for h in chinese[:3])

    again = run_cli(home, "--palace", palace, "reembed", "--model", USE_NAME)
    assert not again["switched"] and again["embedded"] == 0

    back = run_cli(home, "--palace", palace, "reembed", "--model", MODEL_NAME)
    assert back["collection"] == COLLECTION_NAME  # MiniLM drawers go back where MemPalace reads
    _agree(palace, MODEL_NAME, COLLECTION_NAME)


def _crash(home: Path, palace: Path, point: str, model: str = USE_NAME) -> None:
    proc = subprocess.run(
        [*mempalace_command(), "--palace", str(palace), "reembed", "--model", model, "--json"],
        env=cli_env(home, MEMPALACE_TEST_CRASH_AT=point),
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stdout, proc.stderr)


def test_kill_9_mid_run_keeps_the_old_vectors_then_resumes(minilm: tuple[Path, Path]) -> None:
    home, palace = minilm
    before = _search(home, palace, CLERK)
    _crash(home, palace, "reembed_batch:1")  # killed after the first batch of 64

    # Searches still use MiniLM and its vectors, with the same answers.
    assert run_cli(home, "--palace", palace, "models")["palace_model"] == MODEL_NAME
    assert _search(home, palace, CLERK) == before
    assert _collections(palace)[NEW]["mempalace_cli_state"] == "building"
    # A drawer filed in between is caught up by the resumed run.
    p = Palace(resolve_settings(palace, home=home))
    try:
        added = p.add_drawer("ops", "billing", "发票对账任务每周一早上九点运行，失败时通知财务组。")
    finally:
        p.close()

    report = run_cli(home, "--palace", palace, "reembed", "--model", USE_NAME)
    assert report["switched"] and report["resumed_from"] == 64
    assert report["embedded"] == report["drawers"] - 64
    _agree(palace, USE_NAME, NEW)
    hits = _search(home, palace, "When does the invoice reconciliation job run?", mode="vector")
    assert hits[0]["drawer_id"] == added["drawer_id"]


@pytest.mark.parametrize("point", ["reembed_before_switch", "reembed_after_activate"])
def test_kill_9_before_the_catalogue_switch_leaves_the_old_model(
    minilm: tuple[Path, Path], point: str
) -> None:
    home, palace = minilm
    before = _search(home, palace, CLERK)
    _crash(home, palace, point)
    assert run_cli(home, "--palace", palace, "models")["palace_model"] == MODEL_NAME
    assert _search(home, palace, CLERK) == before
    report = run_cli(home, "--palace", palace, "reembed", "--model", USE_NAME)
    assert report["switched"] and report["embedded"] == 0
    assert set(_collections(palace)) == {NEW}
    _agree(palace, USE_NAME, NEW)


def test_kill_9_after_the_switch_is_cleaned_up_by_the_next_run(minilm: tuple[Path, Path]) -> None:
    home, palace = minilm
    _crash(home, palace, "reembed_after_switch")
    assert run_cli(home, "--palace", palace, "models")["palace_model"] == USE_NAME
    assert "0006-auth0-to-clerk" in _search(home, palace, CLERK)[0]["source_file"]
    assert set(_collections(palace)) == {NEW, COLLECTION_NAME}  # the old one, left behind
    report = run_cli(home, "--palace", palace, "reembed", "--model", USE_NAME)
    assert not report["switched"]
    assert set(_collections(palace)) == {NEW}
    _agree(palace, USE_NAME, NEW)


def test_a_mempalace_palace_is_only_switched_with_force(
    tmp_path: Path, home: Path, cli_json: Any
) -> None:
    """A collection without our metadata (as MemPalace makes it), MiniLM vectors."""
    import chromadb

    palace = tmp_path / "mempalace"
    texts = ["Ana owns the billing service.", "The office moves to Lisbon in May."]
    col = chromadb.PersistentClient(
        path=str(palace), settings=_chroma_settings()
    ).create_collection(COLLECTION_NAME, embedding_function=None, metadata={"hnsw:space": "cosine"})
    col.add(
        ids=["d1", "d2"],
        documents=texts,
        embeddings=get_embedder(MODEL_NAME).embed(texts).tolist(),
        metadatas=[{"wing": "team", "room": "people"}, {"wing": "team", "room": "office"}],
    )
    assert cli_json("--palace", palace, "models")["palace_model_origin"] == "mempalace"
    error = cli_json("--palace", palace, "reembed", "--model", USE_NAME, expect=2)
    assert "made by MemPalace" in error["error"]["message"]
    assert "--force" in error["error"]["hint"]
    assert set(_collections(palace)) == {COLLECTION_NAME}  # nothing was built
    report = cli_json("--palace", palace, "reembed", "--model", USE_NAME, "--force")
    assert report["switched"] and report["drawers"] == 2
    hits = cli_json("--palace", palace, "search", "谁负责计费服务？", "--mode", "vector")
    assert hits["results"][0]["drawer_id"] == "d1"


def test_an_unknown_target_model_is_refused(minilm: tuple[Path, Path]) -> None:
    home, palace = minilm
    proc = subprocess.run(
        [*mempalace_command(), "--palace", str(palace), "reembed", "--model", "gpt-9"],
        env=cli_env(home),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2  # bad input, as documented (7 is an unreadable config.toml)
    assert "Unknown embedding model 'gpt-9'" in proc.stderr and "Traceback" not in proc.stderr
