"""A cache of embedding models (under MEMPALACE_HOME) in a ready-to-map form, so a fresh
process (one CLI search) does not decompress and parse a model's files again.

An entry is a folder named after the model and a key (`<model>-<16 hex>`): the key hashes
everything its content is derived from (the model package's version and its files' sizes and
modification times, this package's version and FORMAT), so an upgrade or a reinstall of either
gets a new entry and never reads an old one. An entry is written whole into a temporary folder
and renamed into place, so a reader sees a complete entry or none; its `manifest.json` is
written last and lists every file with its size (and the CRC-32 of every file up to 8 MiB),
and `read` refuses an entry whose files do not match it (a truncated file, a crash or a full
disk during a copy, a damaged disk). The
model that reads an entry checks it further (embedders/use_cache.py compares probe
embeddings with those recorded when it was built) and calls `discard` on a bad one, which
is then rebuilt.

The cache only ever saves time: every failure to read or write it (no such folder, a
read-only or full disk, a damaged entry) falls back to loading the model from its package.

Where: $MEMPALACE_CACHE_DIR, else <MEMPALACE_HOME>/cache (default ~/.mempalace/cache).
MEMPALACE_MODEL_CACHE=0 turns it off (the model loads from its package every time, as before).

Building an entry is the slow first load (seconds); a front end that wants to say so registers a
listener with `on_build`, which the model's loader calls through `announce_build` just before
it loads the model from its package to build the entry (never when the cache is off or can't be
written: then every load is the slow one and "first run only" would not be true).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mempalace_cli import __version__
from mempalace_cli.common.config import mempalace_home

CACHE_DIR_ENV = "MEMPALACE_CACHE_DIR"
ENABLE_ENV = "MEMPALACE_MODEL_CACHE"
FORMAT = 1
MANIFEST = "manifest.json"
# Files up to this size are checksummed on every read (about 15 MB for USE: ~10 ms); a larger
# one (USE's 65 MB embedding table, mapped and touched a few rows per query) is checked by
# size, and by the model's probe vectors (embedders/use_cache.py).
CRC_MAX_BYTES = 8 << 20
_TMP_PREFIX = ".tmp-"
_log = logging.getLogger(__name__)
BuildListener = Callable[[str], None]
_build_listeners: list[BuildListener] = []


def enabled() -> bool:
    return os.environ.get(ENABLE_ENV, "1").strip().lower() not in ("0", "off", "no", "false")


def on_build(listener: BuildListener) -> Callable[[], None]:
    """Call `listener(model)` each time this process is about to build `model`'s cache entry
    (the slow first load, from any thread); returns the function that unregisters it."""
    _build_listeners.append(listener)

    def remove() -> None:
        with contextlib.suppress(ValueError):
            _build_listeners.remove(listener)

    return remove


def announce_build(model: str, entry: Path) -> None:
    """Tell the `on_build` listeners that `model`'s entry (folder `entry`) is about to be built,
    when it can be: the cache is on and its folder writable. A listener's failure is ignored."""
    if not _build_listeners or not enabled() or not _writable(entry.parent):
        return
    for listener in list(_build_listeners):
        try:
            listener(model)
        except Exception as exc:  # noqa: BLE001 - a note must never stop a load
            _log.info("model cache build listener failed: %s", exc)


def _writable(folder: Path) -> bool:
    """The nearest existing folder on the way to `folder` can be written."""
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            return candidate.is_dir() and os.access(candidate, os.W_OK | os.X_OK)
    return False


def cache_root() -> Path:
    """Under the one root (MEMPALACE_HOME) unless MEMPALACE_CACHE_DIR says otherwise (several
    homes on one machine, or a test session, can share one cache)."""
    raw = os.environ.get(CACHE_DIR_ENV)
    return Path(raw).expanduser() if raw else mempalace_home() / "cache"


def entry_dir(model: str, parts: dict[str, Any]) -> Path:
    """The folder of `model`'s entry for these key parts (it may not exist)."""
    key = json.dumps({"format": FORMAT, "ours": __version__, **parts}, sort_keys=True)
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
    return cache_root() / "models" / f"{_safe(model)}-{digest}"


def file_stamp(path: Path) -> list[int]:
    """What a key records of a source file: its size and modification time (a stat, not a
    read: hashing a model's tens of megabytes would cost what the cache saves)."""
    st = path.stat()
    return [st.st_size, st.st_mtime_ns]


def read(entry: Path) -> dict[str, Any] | None:
    """The manifest of a complete entry whose files all have their recorded sizes; None when
    there is no entry. A damaged entry is discarded (and None returned)."""
    try:
        manifest = json.loads((entry / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        _log.info("model cache %s unreadable (%s): rebuilding it", entry, exc)
        discard(entry)
        return None
    try:
        files, sums = manifest["files"], manifest["crc32"]
        ok = manifest.get("format") == FORMAT and all(
            (entry / name).stat().st_size == size for name, size in files.items()
        )
        ok = ok and all(_crc(entry / name) == crc for name, crc in sums.items())
    except (OSError, TypeError, KeyError, AttributeError) as exc:
        _log.info("model cache %s incomplete (%s): rebuilding it", entry, exc)
        ok = False
    if not ok:
        discard(entry)
        return None
    return manifest


def write(entry: Path, fill: Callable[[Path], dict[str, Any]]) -> bool:
    """Build an entry: `fill(folder)` writes the files and returns the manifest's other fields;
    the folder is renamed into place once complete. True if this call published it (False if
    it failed, or another process published the same entry first). Never raises."""
    tmp: Path | None = None
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=_TMP_PREFIX + entry.name + "-", dir=entry.parent))
        extra = fill(tmp)
        files = {p.name: p.stat().st_size for p in sorted(tmp.iterdir()) if p.is_file()}
        sums = {name: _crc(tmp / name) for name, size in files.items() if size <= CRC_MAX_BYTES}
        manifest = {**extra, "format": FORMAT, "files": files, "crc32": sums}
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        try:
            os.rename(tmp, entry)
        except OSError:  # published meanwhile by another process (or a stale entry is there)
            if read(entry) is None:
                discard(entry)
                os.rename(tmp, entry)
            else:
                return False
        tmp = None
        _prune(entry)
        return True
    except Exception as exc:  # a read-only or full disk, a path that is a file: never fatal
        _log.info("could not write the model cache %s: %s", entry, exc)
        return False
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def discard(entry: Path) -> None:
    """Remove an entry (renamed aside first, so no reader ever opens a half-removed one; a
    process that has it mapped keeps reading its own copy)."""
    try:
        aside = Path(tempfile.mkdtemp(prefix=_TMP_PREFIX + "old-", dir=entry.parent))
        os.replace(entry, aside / "entry")
    except OSError:
        shutil.rmtree(entry, ignore_errors=True)
        return
    shutil.rmtree(aside, ignore_errors=True)


def _prune(current: Path) -> None:
    """Other entries of the same model (older versions of it or of us) are dead weight."""
    stem = current.name.rsplit("-", 1)[0]
    for other in current.parent.iterdir():
        if other == current or not other.is_dir():
            continue
        if other.name.startswith(_TMP_PREFIX):  # left by a writer that died an hour ago
            with contextlib.suppress(OSError):
                if time.time() - other.stat().st_mtime > 3600:
                    shutil.rmtree(other, ignore_errors=True)
        elif other.name.rsplit("-", 1)[0] == stem:
            discard(other)


def _crc(path: Path) -> int:
    return zlib.crc32(path.read_bytes())


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._" else "_" for c in name)
