"""Which tool owns a palace folder, and where this tool keeps its own files for that palace.

This tool keeps derived files beside the drawers: the catalogue (mempalace_index.sqlite3),
the vector index (vector_index/) and the write lock. In a palace it made, they live in the
palace folder. A palace folder another tool owns (MemPalace 3.x: a Chroma store,
chroma.sqlite3, and nothing of ours) is only ever read through its store: our files for it
live in the cache, under `<cache>/palaces/<folder name>-<hash of its real path>/`, where
<cache> is $MEMPALACE_CACHE_DIR or <MEMPALACE_HOME>/cache. Everything there is derived from
the palace's drawer store and is rebuilt if deleted.

How a folder is recognised (cheap: a few stats, and one read-only SQLite query only when the
folder holds a Chroma store but no catalogue):
- a palace on a Chroma server: its folder holds our catalogue only, so it is ours;
- a folder with our catalogue in it is ours;
- a folder whose catalogue is already in the cache stays "another tool's" (the choice does not
  flip when, say, a `reembed --force` later adds a collection of ours to it);
- a folder without chroma.sqlite3 is ours (a new palace);
- a folder with chroma.sqlite3 is ours when one of its collections carries the
  `embedding_model` metadata every drawer collection of this tool carries (our palace whose
  catalogue was moved aside); otherwise another tool owns it.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from mempalace_cli.storage.chroma_internals import CHROMA_FILE, any_collection_marked

CACHE_DIR_ENV = "MEMPALACE_CACHE_DIR"  # the same override as the model cache (model_cache.py)
CATALOG_FILE = "mempalace_index.sqlite3"  # catalog.CATALOG_FILE (not imported: keep this light)
OUR_MARK = "embedding_model"  # collection metadata of every drawer collection we create


def cache_root(home: Path) -> Path:
    raw = os.environ.get(CACHE_DIR_ENV)
    return Path(raw).expanduser() if raw else home / "cache"


def palace_cache_dir(palace_path: Path, home: Path) -> Path:
    """This tool's folder in the cache for the palace at `palace_path`."""
    real = os.path.realpath(os.fspath(palace_path))
    digest = hashlib.sha256(os.fsencode(real)).hexdigest()[:16]
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(real).name)[:40] or "palace"
    return cache_root(home) / "palaces" / f"{name}-{digest}"


def _has_our_collection(chroma: Path) -> bool:
    """One of the store's collections was made by this tool. A store this can't read counts
    as ours, so that the store's own checks name the problem as they always did."""
    return any_collection_marked(chroma, OUR_MARK)


def owned_by_another_tool(palace_path: Path, home: Path) -> bool:
    """The folder is another tool's palace: we read its store and write nothing into it."""
    if (palace_path / CATALOG_FILE).exists():
        return False
    if (palace_cache_dir(palace_path, home) / CATALOG_FILE).exists():
        return (palace_path / CHROMA_FILE).exists()
    chroma = palace_path / CHROMA_FILE
    if not chroma.exists():
        return False
    return not _has_our_collection(chroma)


def index_dir(palace_path: Path, home: Path, server: bool) -> Path:
    """Where this tool's catalogue, vector index and write lock for the palace live."""
    if server or not owned_by_another_tool(palace_path, home):
        return palace_path
    return palace_cache_dir(palace_path, home)
