"""Embedding models are a registry: the built-in modules plus any package's entry point in the
`mempalace_cli.models` group, each one module carrying its own fusion settings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "notes"

PLUGIN = '''
"""A tiny real embedding model shipped as a plugin: hashed words, L2-normalised."""
import hashlib

import numpy as np

from mempalace_cli.embedders import ModelSpec
from mempalace_cli.embedders.base import Embedder


class HashedWords(Embedder):
    name = "hashed-words-64"
    dimension = 64

    def embed(self, texts, batch_size=32):
        rows = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                h = int(hashlib.sha1(word.encode()).hexdigest(), 16)
                rows[i, h % self.dimension] += 1.0
            norm = float(np.linalg.norm(rows[i])) or 1.0
            rows[i] /= norm
        return rows


MODEL = ModelSpec(
    name="hashed-words-64",
    dimension=64,
    languages="any language split by spaces",
    package="hashed-words",
    about="a test plugin",
    embedder="hashed_words:HashedWords",
    fusion={"lexical_weight": 5.0, "one_script_rrf": False},
)
'''


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A site folder holding the plugin module and its distribution's entry point, as pip
    would install it, on PYTHONPATH; a private HOME so the palace and config are the test's."""
    site = tmp_path_factory.mktemp("site")
    (site / "hashed_words.py").write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    dist = site / "hashed_words-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: hashed-words\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[mempalace_cli.models]\nhashed-words-64 = hashed_words:MODEL\n"
    )
    home = tmp_path_factory.mktemp("home")
    env = dict(os.environ, HOME=str(home), MEMPALACE_HOME=str(home / ".mempalace"))
    env["PYTHONPATH"] = str(site)
    env.pop("MEMPALACE_PALACE", None)
    return env


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mempalace_cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_model_from_another_package_is_listed_and_searched_with(
    plugin_env: dict[str, str], tmp_path: Path
) -> None:
    listed = run(plugin_env, "models", "--json")
    assert listed.returncode == 0, listed.stderr
    assert "hashed-words-64" in listed.stdout

    palace = tmp_path / "palace"
    config = Path(plugin_env["MEMPALACE_HOME"]) / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('embedding_model = "hashed-words-64"\n', encoding="utf-8")
    mined = run(plugin_env, "--palace", str(palace), "mine", str(EXAMPLES), "--wing", "notes")
    assert mined.returncode == 0, mined.stderr
    status = json.loads(run(plugin_env, "--palace", str(palace), "status", "--json").stdout)
    assert status["embedding_model"] == "hashed-words-64"
    found = run(plugin_env, "--palace", str(palace), "search", "thumbnail pipeline", "--json")
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["results"]
    assert hits and any("thumbnail" in h["source_file"] for h in hits[:3])


def test_the_fusion_a_search_uses_comes_from_the_models_module(
    plugin_env: dict[str, str],
) -> None:
    code = (
        "from mempalace_cli.search.fusion import for_model; p = for_model('hashed-words-64'); "
        "print(p.lexical_weight, p.one_script_rrf)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=plugin_env, capture_output=True, text=True, timeout=60
    )
    assert out.stdout.split() == ["5.0", "False"], out.stderr


def test_an_unknown_model_names_the_ones_that_exist_plugins_included(
    plugin_env: dict[str, str], tmp_path: Path
) -> None:
    out = run(plugin_env, "--palace", str(tmp_path / "p"), "reembed", "--model", "nope")
    assert out.returncode == 2
    assert "Unknown embedding model 'nope'" in out.stderr
    assert "hashed-words-64" in out.stderr and "use-multilingual-v3" in out.stderr
