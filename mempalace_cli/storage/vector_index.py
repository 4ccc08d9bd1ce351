"""An on-disk vector index that a fresh process opens instead of reading every vector.

Why it exists: ranking the vector side of a search from the catalogue's float32 blobs means
reading every drawer's vector into memory (about 4.7 KB of memory per drawer, 729 MB and 1.5 s
at 100,000 drawers). This index keeps, per drawer, 384 int8 codes of its unit vector plus a
float32 scale (388 bytes), its catalogue rowid (8) and a wing/room group code (4): 400 bytes per
drawer, a quarter of a float32 copy (448 with the sign codes below). A search streams the codes
in fixed-size blocks (memory does not grow with the palace), keeps the best `RESCORE_FACTOR` x
depth candidates by the int8 score, and ranks those exactly by cosine on their float32 vectors
from the catalogue: the distances it returns are exact and the top results equal exact ranking
unless a true neighbour falls out of the int8 candidate pool (benchmarks/scale.py measures
recall@10 against exact).

The first stage, at scale (issue 15): scoring every row's int8 codes costs 0.15 s of CPU per
search at a million drawers. From ANN_MIN_ROWS live rows in the searched wing/room on, the index
also keeps a 1-bit sign code per dimension (48 bytes a drawer at 384 dimensions) and ranks every
row by the Hamming distance of its sign code to the query's (a XOR and a popcount over six
64-bit words a row); only the POOL_SHARE nearest by that measure (at least POOL_MIN) are scored
by their int8 codes, and the best of those are rescored exactly as before. Smaller palaces, and
filters that leave fewer rows, score every candidate row by its int8 codes. Nothing is trained:
a sign code depends on its own vector only, so appends, tombstones and compactions keep it
exact in the same way as the int8 codes (benchmarks/ann_index.py measures speed and recall@10,
and compares an IVF first stage, which lost on both).

How it stays in step with the catalogue, by content and not by a count: triggers on the
catalogue's `drawers` table append (rowid, op) to `vector_log` (created with the catalogue:
catalog.py), whose AUTOINCREMENT sequence number only grows. The index header records the
last sequence number it applied and a token naming the catalogue it was built from. The writer
brings the index up to date after each write and repair (`current()`, from
PalaceCore.keep_vector_index: it applies exactly the rows the log names, tombstoning the old
positions and appending the current rows, and trims the log); a search never writes it
(`nearest(..., upkeep=False)`): it reads the index as it is, and the rows the log names after
the index's last update (a writer that kept no index: an older version, a crash between the
catalogue's commit and the index's update) are scored exactly from the catalogue instead, up
to LAG_MAX of them (beyond, the search ranks every vector exactly without the index). Any
process's write is therefore visible to the next search, whichever process makes it, and a
catalogue rebuilt from scratch (a new token) rebuilds the index at its next upkeep.

Files, all in vector_index/ beside the catalogue (the palace folder, or, for a palace another
tool owns, this tool's folder for it in the cache: palace_owner.py): header.json (replaced
atomically), codes/scales/rowids/groups/signs.<epoch> (appended; a compaction writes a new
epoch), and a lock file (flock: one updater at a time; readers share it).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import secrets
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mempalace_cli.common.lazy import lazy
from mempalace_cli.storage.catalog import VECTOR_LOG_TOKEN, ensure_vector_log, has_vector_log

np = lazy("numpy")

INDEX_DIR = "vector_index"
# 2: sign codes (signs.<epoch>) beside the int8 codes; an older index rebuilds once. A long
# drawer's passage vectors (passage_vectors.py) are extra rows carrying the drawer's rowid
# (Header.passages counts them): an index written before them has none and needs no rebuild,
# as the palace has no passages either until a write adds them, which appends them here.
FORMAT = 2
TOKEN_META = VECTOR_LOG_TOKEN  # meta key naming the catalogue the log belongs to
BLOCK_ROWS = 8192  # rows scored per block: ~3 MB of codes, ~12 MB as float32
RESCORE_FACTOR = 4  # int8 candidates kept per result wanted, then ranked exactly
MIN_RESCORE = 200
FETCH_ROWS = 5000  # catalogue rows read per batch while building
LOG_TRIM_AT = 20000  # log rows kept before the updater trims what it has applied
# A search that finds the index behind the catalogue (a writer that kept no index: an older
# version, a crash after the catalogue's commit) scores the rows changed since exactly; beyond
# this many it ranks without the index (exact over every vector) until the next write.
LAG_MAX = 5000
# A passage row's key in `rowids`: its drawer's rowid, with the passage's number + 1 in the
# bits from PASSAGE_SHIFT up (a drawer's own row has none there), so a search rescores exactly
# the passage it found, and the drawer's rows are found by `key & DRAWER_BITS`.
PASSAGE_SHIFT = 40
DRAWER_BITS = (1 << PASSAGE_SHIFT) - 1
_PASSAGE_KEY = f"(p.drawer | ((p.n + 1) << {PASSAGE_SHIFT}))"
# The sign-code first stage (module docstring): used from ANN_MIN_ROWS candidate rows on (below
# that, scoring every row's int8 codes is as fast); keeps the POOL_SHARE of them nearest by
# Hamming distance, at least POOL_MIN, for int8 scoring. Chosen by benchmarks/ann_index.py.
ANN_MIN_ROWS = 50_000
POOL_SHARE = 0.03
POOL_MIN = 20_000
# "0" turns the index off (search reads every catalogue vector, as before it existed): for
# benchmarks/scale.py to compare both paths in one run, and as an escape hatch.
SWITCH_ENV = "MEMPALACE_VECTOR_INDEX"


@dataclass
class Header:
    token: str
    seq: int
    epoch: int
    dim: int
    n: int  # rows written, tombstones included
    live: int
    groups: list[list[str]] = field(default_factory=list)  # code -> [wing, room]
    sign_bytes: int = 0  # bytes of a row's sign code in signs.<epoch> (dim bits, 64-bit words)
    # A random name for this build: an index rebuilt from nothing restarts at epoch 0, so a
    # long-lived process tells builds apart by this, not by the epoch.
    built: str = ""
    # Rows written for passages (tombstones included): when 0, every row is its own drawer.
    passages: int = 0

    def to_json(self) -> str:
        return json.dumps({"format": FORMAT, **self.__dict__}, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Header | None:
        try:
            data = json.loads(text)
            if data.pop("format", None) != FORMAT:
                return None
            return cls(**data)
        except (ValueError, TypeError):
            return None


_PARTS = {"codes": "i1", "scales": "f4", "rowids": "i8", "groups": "i4", "signs": "u8"}


class VectorIndex:
    """The vector index of one palace, kept beside its catalogue connection."""

    def __init__(self, index_dir: Path, conn: sqlite3.Connection) -> None:
        """`index_dir`: the folder of the catalogue `conn` is open on (PalaceCore.index_dir)."""
        self.dir = index_dir / INDEX_DIR
        self.conn = conn
        self._memory: tuple[tuple[str, int, int, int], dict[str, Any]] | None = None
        self._keep = False  # keep_in_memory(): codes and sign codes too, kept across writes

    # -- public ------------------------------------------------------------------------------
    def nearest(
        self,
        query_vec: Any,
        depth: int,
        wing: str | None = None,
        room: str | None = None,
        upkeep: bool = True,
    ) -> list[tuple[str, float]] | None:
        """The `depth` nearest drawers in wing/room as [(id, cosine distance)], best first;
        None when the index can't be used here (read-only palace, rows without vectors): the
        caller ranks another way.

        With `upkeep` (the default, for a caller that may write), the index is first brought
        up to the catalogue's last change (`current`). Without it (a search: the hot read path
        writes nothing), the index is read as it is: the rows the catalogue changed since its
        last update are scored exactly from the catalogue instead (read in the caller's
        snapshot), and None is returned when there is no index or it is too far behind."""
        if os.environ.get(SWITCH_ENV, "1") == "0":
            return None
        touched: list[int] = []
        try:
            if upkeep:
                header = self.current()
            else:
                position = self._read_position()
                header = self._read_header() if position is not None else None
                if header is None or position is None or header.token != position[0]:
                    return None
        except (OSError, sqlite3.Error):
            return None
        if header is None:
            return None
        q = np.asarray(query_vec, dtype=np.float32).reshape(-1)
        if header.dim and q.shape[0] != header.dim:
            return None  # a query from another model than the palace's vectors: not ours
        q = q / max(float(np.linalg.norm(q)), 1e-12)
        try:
            with self._locked(fcntl.LOCK_SH):
                header = self._read_header() or header
                if not upkeep:
                    lag = self._rows_changed_since(header)
                    if lag is None:
                        return None
                    touched = lag
                scores, rowids = self._approx_scores(header, q, wing, room)
        except (OSError, sqlite3.Error):
            if upkeep:
                raise
            return None
        if scores is None or not len(scores):
            scores, rowids = np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.int64)
        if touched:  # their index entries may be stale: scored exactly below instead
            stale = np.isin(rowids & DRAWER_BITS, np.asarray(touched, dtype=np.int64))
            scores = np.where(stale, -np.inf, scores)
        exact: list[tuple[str, float]] = []
        if len(scores):
            pool = min(len(scores), max(depth * RESCORE_FACTOR, MIN_RESCORE))
            best = np.argpartition(-scores, pool - 1)[:pool] if pool < len(scores) else None
            best = best if best is not None else np.arange(len(scores))
            best = best[np.isfinite(scores[best])]
            if header.passages:  # a drawer's passages carry its rowid: keep distinct drawers
                best = _distinct_pool(scores, rowids, best, pool)
            keys = rowids[best]
            drawers = [int(r) for r in np.unique(keys & DRAWER_BITS)]
            exact = self.exact_distances(q, drawers, passages=False)
            if header.passages:  # the best passage rows of the leading drawers, exactly
                lead = keys[: 2 * depth]  # best first (_distinct_pool): one row per drawer
                exact = self._with_passages(q, exact, [int(k) for k in lead if k > DRAWER_BITS])
        if touched:
            exact += self.exact_distances(q, touched, wing=wing, room=room)
        ranked = sorted(dict(exact).items(), key=lambda x: (x[1], x[0]))
        return ranked[:depth]

    def _with_passages(
        self, q: Any, exact: list[tuple[str, float]], keys: list[int]
    ) -> list[tuple[str, float]]:
        """`exact` (id, distance) with each drawer's distance lowered to that of its passage
        among `keys` (passage rows' index keys) where closer, read exactly."""
        best = dict(exact)
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            pairs = [v for k in part for v in (k & DRAWER_BITS, (k >> PASSAGE_SHIFT) - 1)]
            try:
                rows = self.conn.execute(  # one index lookup per (drawer, passage number)
                    f"WITH k(a, b) AS (VALUES {','.join(['(?, ?)'] * len(part))}) "
                    "SELECT d.id, p.embedding FROM k JOIN passages p "
                    "ON p.drawer = k.a AND p.n = k.b JOIN drawers d ON d.rowid = p.drawer",
                    pairs,
                ).fetchall()
            except sqlite3.OperationalError:  # a catalogue without passages: own vectors only
                return exact
            if not rows:
                continue
            mat = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
            mat = mat.reshape(len(rows), -1)
            if mat.shape[1] != len(q):
                continue
            sims = (mat @ q) / np.maximum(np.linalg.norm(mat, axis=1), 1e-12)
            for (drawer_id, _), sim in zip(rows, sims.tolist(), strict=True):
                if drawer_id in best:
                    best[drawer_id] = min(best[drawer_id], 1.0 - sim)
        return list(best.items())

    def _rows_changed_since(self, header: Header) -> list[int] | None:
        """The catalogue rows the change log names after the index's last update (read only,
        in the caller's snapshot); None when there are more than LAG_MAX."""
        rows = self.conn.execute(
            "SELECT DISTINCT row FROM vector_log WHERE seq > ? LIMIT ?", (header.seq, LAG_MAX + 1)
        ).fetchall()
        if len(rows) > LAG_MAX:
            return None
        return sorted(r[0] for r in rows)

    def exact_distances(
        self,
        q: Any,
        keys: list[Any],
        column: str = "rowid",
        wing: str | None = None,
        room: str | None = None,
        passages: bool = True,
    ) -> list[tuple[str, float]]:
        """Exact cosine distances of `q` (unit) to the catalogue rows whose `column` (rowid
        or id) is in `keys` (and in wing/room, when given), read from their float32
        vectors; a long drawer's is that of its closest passage when closer
        (passage_vectors.py; `passages=False`: the caller knows there are none)."""
        place = "".join(
            f" AND {name} = ?" for name, v in (("wing", wing), ("room", room)) if v is not None
        )
        values = [v for v in (wing, room) if v is not None]
        out: list[tuple[str, float]] = []
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            marks = ",".join("?" * len(part))
            rows = self.conn.execute(
                f"SELECT id, embedding, rowid FROM drawers WHERE {column} IN ({marks}) "
                f"AND embedding IS NOT NULL{place}",
                [*part, *values],
            ).fetchall()
            if not rows:
                continue
            sims = row_similarities(self.conn, [(r[2], r[1]) for r in rows], q, passages)
            out.extend((r[0], float(1.0 - s)) for r, s in zip(rows, sims.tolist(), strict=True))
        return out

    def current(self) -> Header | None:
        """The header, brought up to the catalogue's last change first (building the index
        when there is none or it names another catalogue): the upkeep a writer does after its
        write (PalaceCore.keep_vector_index), never a search."""
        token, last = self.log_position()
        header = self._read_header()
        if header is not None and header.token == token and header.seq == last:
            return header
        with self._locked(fcntl.LOCK_EX):
            header = self._read_header()
            token, last = self.log_position()
            if header is None or header.token != token:
                return self._build(token)
            if header.seq == last:
                return header
            return self._apply(header)

    def _lacks_passages(self, header: Header, appending: int) -> bool:
        """An index without passage rows for a catalogue holding more passages than the
        `appending` ones (an older version rebuilt it without them): built again. Read in
        the caller's snapshot."""
        if header.passages:
            return False
        try:
            held = self.conn.execute("SELECT count(*) FROM passages").fetchone()[0]
        except sqlite3.OperationalError:  # a read-only catalogue made before passages
            return False
        return held > appending

    # -- bringing it up to date ---------------------------------------------------------------
    def log_position(self) -> tuple[str, int]:
        """(catalogue token, last change-log sequence number), creating the log if needed
        (a catalogue made before it)."""
        position = self._read_position()
        if position is None:
            ensure_vector_log(self.conn)
            position = self._read_position()
            assert position is not None
        return position

    def _read_position(self) -> tuple[str, int] | None:
        """(catalogue token, last log sequence number), read only; None without a log."""
        if not has_vector_log(self.conn):
            return None
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (TOKEN_META,)).fetchone()
        last = self.conn.execute("SELECT COALESCE(MAX(seq), 0) FROM vector_log").fetchone()[0]
        return row[0], int(last)

    def _build(self, token: str, epoch: int | None = None) -> Header | None:
        """Write a new epoch from every catalogue row, in one read snapshot of the catalogue."""
        self.dir.mkdir(exist_ok=True)
        old = self._read_header()
        epoch = (old.epoch + 1) if old is not None else 0
        header = Header(
            token=token, seq=0, epoch=epoch, dim=0, n=0, live=0, built=secrets.token_hex(8)
        )
        groups: dict[tuple[str, str], int] = {}
        files = {p: open(self._part(p, epoch), "wb") for p in _PARTS}  # noqa: SIM115
        try:
            with _snapshot(self.conn):
                header.seq = int(
                    self.conn.execute("SELECT COALESCE(MAX(seq), 0) FROM vector_log").fetchone()[0]
                )
                cur = self.conn.execute(
                    "SELECT rowid, wing, room, embedding FROM drawers ORDER BY rowid"
                )
                while rows := cur.fetchmany(FETCH_ROWS):
                    if any(r[3] is None for r in rows):
                        return None  # a row without its vector: not ours to rank
                    if not _one_dimension(rows, header.dim):
                        return None  # vectors of two models (mid-switch): not ours to rank
                    self._write_rows(header, files, rows, groups)
                # A long drawer's passages: rows of their own, carrying the drawer's rowid.
                for rows in _passage_rows(self.conn, None):
                    if not _one_dimension(rows, header.dim):
                        return None
                    self._write_rows(header, files, rows, groups, passages=True)
        finally:
            for f in files.values():
                f.close()
        header.groups = [list(g) for g in groups]
        self._write_header(header)
        for stale in self.dir.iterdir():  # older epochs, and parts of an older format
            name, _, tail = stale.name.partition(".")
            if tail.isdigit() and int(tail) != epoch:
                stale.unlink(missing_ok=True)
        self._memory = None
        self._trim_log(header.seq)
        return header

    def _apply(self, header: Header) -> Header | None:
        """Apply the log entries after header.seq: tombstone the rows they name, append the
        current version of those that still exist."""
        groups = {(g[0], g[1]): i for i, g in enumerate(header.groups)}
        parts: list[Any] = []  # the touched drawers' passage rows
        with _snapshot(self.conn):
            last = int(
                self.conn.execute("SELECT COALESCE(MAX(seq), 0) FROM vector_log").fetchone()[0]
            )
            touched = sorted(
                {
                    r[0]
                    for r in self.conn.execute(
                        "SELECT row FROM vector_log WHERE seq > ? AND seq <= ?", (header.seq, last)
                    )
                }
            )
            if len(touched) > max(header.live // 2, 50_000):  # a rebuild is cheaper
                fresh = None
            else:
                fresh = []
                for start in range(0, len(touched), 500):
                    part = touched[start : start + 500]
                    marks = ",".join("?" * len(part))
                    fresh.extend(
                        self.conn.execute(
                            f"SELECT rowid, wing, room, embedding FROM drawers "
                            f"WHERE rowid IN ({marks}) ORDER BY rowid",
                            part,
                        ).fetchall()
                    )
                parts = [r for rows in _passage_rows(self.conn, touched) for r in rows]
                if self._lacks_passages(header, len(parts)):
                    fresh = None
        if fresh is None or any(r[3] is None for r in fresh):
            return self._build(header.token)
        if header.dim and not _one_dimension(fresh + parts, header.dim):
            # The palace switched models (`reembed`): vectors of another dimension can't be
            # appended to these codes, so the index is built again from the new vectors.
            return self._build(header.token)
        if header.n:
            ids = np.memmap(self._part("rowids", header.epoch), dtype="i8", mode="r+")
            view = ids[: header.n]
            gone = np.isin(view & DRAWER_BITS, np.asarray(touched, dtype=np.int64))
            gone = np.nonzero(gone & (view >= 0))[0]
            view[gone] = -1
            ids.flush()
            header.live -= len(gone)
            del ids, view
        files = {p: open(self._part(p, header.epoch), "r+b") for p in _PARTS}  # noqa: SIM115
        try:
            for p, f in files.items():
                f.seek(header.n * self._row_bytes(p, header))
                f.truncate()
            self._write_rows(header, files, fresh, groups)
            self._write_rows(header, files, parts, groups, passages=True)
        finally:
            for f in files.values():
                f.close()
        header.seq = last
        header.groups = [list(g) for g in groups]
        if header.n > 1000 and header.live < header.n * 0.75:  # mostly tombstones: compact
            return self._build(header.token)
        self._write_header(header)
        self._trim_log(last)
        return header

    def _write_rows(
        self, header: Header, files: dict, rows: list, groups: dict, passages: bool = False
    ) -> None:
        """Append `rows` (rowid, wing, room, float32 vector bytes): drawers, or with `passages`
        a drawer's passages (each row carries its drawer's rowid)."""
        if not rows:
            return
        if passages:
            header.passages += len(rows)
        mat = np.frombuffer(b"".join(r[3] for r in rows), dtype=np.float32).reshape(len(rows), -1)
        if header.dim == 0:
            header.dim = mat.shape[1]
            header.sign_bytes = -(-header.dim // 64) * 8
        unit = mat / np.maximum(np.linalg.norm(mat, axis=1, keepdims=True), 1e-12)
        scale = np.maximum(np.abs(unit).max(axis=1), 1e-12) / 127.0
        codes = np.rint(unit / scale[:, None]).astype(np.int8)
        codes_of = [groups.setdefault((r[1], r[2]), len(groups)) for r in rows]
        files["codes"].write(codes.tobytes())
        files["scales"].write(scale.astype(np.float32).tobytes())
        files["rowids"].write(np.asarray([r[0] for r in rows], dtype=np.int64).tobytes())
        files["groups"].write(np.asarray(codes_of, dtype=np.int32).tobytes())
        files["signs"].write(_sign_codes(unit, header.sign_bytes).tobytes())
        header.n += len(rows)
        header.live += len(rows)

    def _trim_log(self, applied: int) -> None:
        """Drop log rows already applied, when there are many; skipped if a writer is busy."""
        try:
            first = self.conn.execute("SELECT MIN(seq) FROM vector_log").fetchone()[0]
            if first is None or applied - first < LOG_TRIM_AT:
                return
            self.conn.execute("PRAGMA busy_timeout = 100")
            with self.conn:
                self.conn.execute("DELETE FROM vector_log WHERE seq <= ?", (applied,))
        except sqlite3.OperationalError:
            pass
        finally:
            self.conn.execute("PRAGMA busy_timeout = 30000")

    # -- ranking ------------------------------------------------------------------------------
    def _approx_scores(
        self, header: Header, q: Any, wing: str | None, room: str | None
    ) -> tuple[Any, Any]:
        """int8 cosine estimates of the candidate rows in wing/room, and their rowids (aligned;
        -inf marks a row that is not a candidate). The candidates: every live row in wing/room,
        or from ANN_MIN_ROWS of them on, those nearest by sign codes (module docstring)."""
        n = header.n
        if n == 0:
            return None, None
        arrays = self._small_arrays(header)
        rowids, groups = arrays["rowids"], arrays["groups"]
        keep = rowids >= 0
        if wing is not None or room is not None:
            wanted = [
                i
                for i, (w, r) in enumerate(header.groups)
                if (wing is None or w == wing) and (room is None or r == room)
            ]
            keep &= np.isin(groups, np.asarray(wanted, dtype=np.int32))
            live = int(np.count_nonzero(keep))
        else:
            live = header.live
        if live == 0:
            return rowids[:0], rowids[:0]
        if live < ANN_MIN_ROWS or not header.sign_bytes:
            if live == header.live:  # every live row: one streamed pass over the codes
                return self._scan_scores(header, q, keep, arrays), rowids
            rows = np.flatnonzero(keep)
        else:
            rows = self._sign_pool(header, q, keep, live, arrays)
        return self._row_scores(header, q, rows, arrays), rowids[rows]

    def _scan_scores(self, header: Header, q: Any, keep: Any, arrays: dict[str, Any]) -> Any:
        """int8 estimates for all header.n rows (-inf where not `keep`), block by block."""
        n, dim, scales = header.n, header.dim, arrays["scales"]
        scores = np.full(n, -np.inf, dtype=np.float32)
        buf = np.empty((BLOCK_ROWS, dim), dtype=np.int8)
        for start, stop, block in self._blocks("codes", header, arrays.get("codes"), buf):
            # einsum, not `@`: a matrix-vector product through multi-threaded BLAS spins its
            # threads (5x the CPU on a busy machine), and einsum reads int8 directly.
            scores[start:stop] = np.einsum("ij,j->i", block, q) * scales[start:stop]
        scores[~keep] = -np.inf
        return scores

    def _row_scores(self, header: Header, q: Any, rows: Any, arrays: dict[str, Any]) -> Any:
        """int8 estimates for the rows at positions `rows` (ascending)."""
        dim, scales = header.dim, arrays["scales"]
        codes = arrays.get("codes")
        if codes is not None:
            return np.einsum("ij,j->i", codes[rows], q) * scales[rows]
        out = np.empty(len(rows), dtype=np.float32)
        buf = np.empty((BLOCK_ROWS, dim), dtype=np.int8)
        edges = np.searchsorted(rows, np.arange(0, header.n + BLOCK_ROWS, BLOCK_ROWS))
        with open(self._part("codes", header.epoch), "rb") as f:
            fd = f.fileno()
            for b in range(len(edges) - 1):
                lo, hi = int(edges[b]), int(edges[b + 1])
                if lo == hi:
                    continue
                part = rows[lo:hi]
                if hi - lo <= 32:  # a few rows of this block: read just those
                    block = np.frombuffer(
                        b"".join(os.pread(fd, dim, int(r) * dim) for r in part), dtype=np.int8
                    ).reshape(-1, dim)
                else:
                    start = b * BLOCK_ROWS
                    stop = min(header.n, start + BLOCK_ROWS)
                    f.seek(start * dim)
                    block = buf[: stop - start]
                    f.readinto(memoryview(block).cast("B"))
                    block = block[part - start]
                out[lo:hi] = np.einsum("ij,j->i", block, q)
        return out * scales[rows]

    def _sign_pool(
        self, header: Header, q: Any, keep: Any, live: int, arrays: dict[str, Any]
    ) -> Any:
        """Positions (ascending) of the max(POOL_MIN, POOL_SHARE x live) rows in `keep` whose
        sign codes are nearest to the query's by Hamming distance."""
        n, words = header.n, header.sign_bytes // 8
        qbits = _sign_codes(q.reshape(1, -1), header.sign_bytes)[0]
        dist = np.empty(n, dtype=np.uint16)
        buf = np.empty((BLOCK_ROWS * 8, words), dtype=np.uint64)  # 3 MB of sign codes a block
        for start, stop, block in self._blocks("signs", header, arrays.get("signs"), buf):
            d = dist[start:stop]
            d[:] = _popcount(block[:, 0] ^ qbits[0])
            for w in range(1, words):
                d += _popcount(block[:, w] ^ qbits[w])
        far = words * 64 + 1
        dist[~keep] = far
        pool = min(live, max(POOL_MIN, int(POOL_SHARE * live)))
        counts = np.cumsum(np.bincount(dist, minlength=far + 1))
        cut = int(np.searchsorted(counts, pool))  # rows at distance <= cut: >= pool of them
        below = np.flatnonzero(dist < cut)
        at = np.flatnonzero(dist == cut)[: pool - len(below)]
        return np.union1d(below, at)

    def _blocks(
        self, part: str, header: Header, kept: Any, buf: Any
    ) -> Iterator[tuple[int, int, Any]]:
        """(start, stop, rows) of a part file's first header.n rows, len(buf) rows at a time:
        slices of `kept` (a long-lived process keeps the part in memory), else read into `buf`
        so memory does not grow with the palace."""
        n, step = header.n, len(buf)
        with open(self._part(part, header.epoch), "rb") as f:
            for start in range(0, n, step):
                stop = min(n, start + step)
                if kept is not None:
                    yield start, stop, kept[start:stop]
                    continue
                block = buf[: stop - start]
                f.readinto(memoryview(block).cast("B"))
                yield start, stop, block

    def _small_arrays(self, header: Header) -> dict[str, Any]:
        """rowids, groups and scales (16 bytes a drawer) of the first header.n rows, and with
        keep_in_memory() the codes and sign codes. A long-lived process keeps them while the
        header stays the same; after appends (same epoch) it reads only the new rows, and the
        rowids again (tombstones are written into them in place)."""
        key = (header.built, header.epoch, header.n, header.seq)
        if self._memory is not None and self._memory[0] == key:
            return self._memory[1]
        parts = ["rowids", "groups", "scales"] + (["codes", "signs"] if self._keep else [])
        old = self._memory
        if old is not None and old[0][:2] == key[:2] and old[0][2] <= header.n:
            start, arrays = old[0][2], dict(old[1])
        else:
            start, arrays = 0, {}
        for part in parts:
            width = self._row_bytes(part, header) // np.dtype(_PARTS[part]).itemsize
            if not width or not header.n:
                continue  # an empty index: no codes to keep
            # Rows before `start` are unchanged, except rowids (tombstones are written in place).
            first = 0 if part == "rowids" or part not in arrays else start
            fresh = np.fromfile(
                self._part(part, header.epoch),
                dtype=_PARTS[part],
                count=(header.n - first) * width,
                offset=first * self._row_bytes(part, header),
            )
            if width > 1:
                fresh = fresh.reshape(-1, width)
            arrays[part] = fresh if first == 0 else np.concatenate([arrays[part], fresh])
        self._memory = (key, arrays)
        return arrays

    def keep_codes(self) -> None:
        """For long-lived processes (the MCP server): from the next search on, keep the codes
        and sign codes in memory (dim + dim/8 bytes a drawer) instead of reading them per
        search, and keep them across later writes (only appended rows are read)."""
        if not self._keep:
            self._keep = True
            self._memory = None

    def keep_in_memory(self) -> None:
        """keep_codes(), and read them now (benchmarks' warm search)."""
        self.keep_codes()
        header = self.current()
        if header is not None:
            self._small_arrays(header)

    # -- files --------------------------------------------------------------------------------
    def _part(self, name: str, epoch: int) -> Path:
        return self.dir / f"{name}.{epoch}"

    @staticmethod
    def _row_bytes(part: str, header: Header) -> int:
        if part == "codes":
            return header.dim
        if part == "signs":
            return header.sign_bytes
        return {"f4": 4, "i8": 8, "i4": 4}[_PARTS[part]]

    def _read_header(self) -> Header | None:
        try:
            return Header.from_json((self.dir / "header.json").read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None

    def _write_header(self, header: Header) -> None:
        tmp = self.dir / "header.json.tmp"
        tmp.write_text(header.to_json(), encoding="utf-8")
        os.replace(tmp, self.dir / "header.json")

    @contextmanager
    def _locked(self, mode: int) -> Iterator[None]:
        self.dir.mkdir(exist_ok=True)
        try:
            f = open(self.dir / "lock", "a+b")  # noqa: SIM115
        except OSError as exc:  # a read-only palace (or disk): flock needs no write access
            if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise
            f = open(self.dir / "lock", "rb")  # noqa: SIM115
        with f:
            fcntl.flock(f, mode)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)


def row_similarities(
    conn: sqlite3.Connection, rows: list[tuple[int, bytes]], q: Any, passages: bool = True
) -> Any:
    """Exact cosine similarities of `q` (unit) to catalogue rows given as (rowid, float32
    vector bytes), a long drawer's raised to its closest passage's (`closest_passages`;
    `passages=False`: the caller knows there are none)."""
    mat = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    sims = (mat @ q) / np.maximum(np.linalg.norm(mat, axis=1), 1e-12)
    if passages:
        closest_passages(conn, [r[0] for r in rows], sims, q)
    return sims


def closest_passages(conn: sqlite3.Connection, rowids: list[int], sims: Any, q: Any) -> None:
    """Raise each drawer's cosine in `sims` (aligned with `rowids`) to its closest passage's
    where that is higher (`q` unit). Drawers without passages are left as they are."""
    marks = ",".join("?" * len(rowids))
    try:
        # Most palaces hold no passage (mined drawers are shorter): one cached statement says
        # so before a statement naming every drawer is prepared.
        if not conn.execute("SELECT EXISTS (SELECT 1 FROM passages)").fetchone()[0]:
            return
        found = conn.execute(
            f"SELECT drawer, embedding FROM passages WHERE drawer IN ({marks})", rowids
        ).fetchall()
    except sqlite3.OperationalError:  # a read-only catalogue made before passages
        return
    if not found:
        return
    mat = np.frombuffer(b"".join(r[1] for r in found), dtype=np.float32).reshape(len(found), -1)
    if mat.shape[1] != len(q):
        return  # another model's passages (never kept past a reembed): not comparable
    psims = (mat @ q) / np.maximum(np.linalg.norm(mat, axis=1), 1e-12)
    at = {r: i for i, r in enumerate(rowids)}
    np.maximum.at(sims, np.asarray([at[r[0]] for r in found]), psims.astype(sims.dtype))


def _passage_rows(conn: sqlite3.Connection, rowids: list[int] | None) -> Iterator[list[Any]]:
    """The passage rows (drawer rowid, wing, room, vector) of the drawers `rowids` (every
    drawer's when None), in batches; none when the catalogue has no passages table."""
    try:
        if rowids is None:
            cur = conn.execute(
                f"SELECT {_PASSAGE_KEY}, d.wing, d.room, p.embedding FROM passages p "
                "JOIN drawers d ON d.rowid = p.drawer ORDER BY p.drawer, p.n"
            )
            while rows := cur.fetchmany(FETCH_ROWS):
                yield rows
            return
        for start in range(0, len(rowids), 500):
            part = rowids[start : start + 500]
            marks = ",".join("?" * len(part))
            rows = conn.execute(
                f"SELECT {_PASSAGE_KEY}, d.wing, d.room, p.embedding FROM passages p "
                f"JOIN drawers d ON d.rowid = p.drawer WHERE p.drawer IN ({marks}) "
                "ORDER BY p.drawer, p.n",
                part,
            ).fetchall()
            if rows:
                yield rows
    except sqlite3.OperationalError:  # a read-only catalogue made before passages
        return


def _distinct_pool(scores: Any, rowids: Any, best: Any, pool: int) -> Any:
    """Positions of at least `pool` distinct drawers (or all there are) among the best-scored
    rows, one position per drawer (its best row: the drawer's own or a passage's): `best`
    widened until they are found."""
    finite = int(np.count_nonzero(np.isfinite(scores)))
    size = len(best)
    while True:
        order = best[np.argsort(-scores[best], kind="stable")]
        _, first = np.unique(rowids[order] & DRAWER_BITS, return_index=True)
        if len(first) >= pool or size >= finite:
            return order[np.sort(first)[:pool]]  # the `pool` best drawers, best first
        size = min(finite, size * 4)
        best = (
            np.argpartition(-scores, size - 1)[:size]
            if size < len(scores)
            else np.arange(len(scores))
        )
        best = best[np.isfinite(scores[best])]


def _sign_codes(unit: Any, sign_bytes: int) -> Any:
    """Rows' sign codes: bit j set where component j is positive, packed into 64-bit words
    (zero bits pad a dimension that is not a multiple of 64)."""
    packed = np.packbits(unit > 0, axis=1)
    out = np.zeros((unit.shape[0], sign_bytes), dtype=np.uint8)
    out[:, : packed.shape[1]] = packed
    return out.view(np.uint64)


_BYTE_BITS: Any = None


def _popcount(words: Any) -> Any:
    """Set bits of each uint64 (uint8 counts)."""
    if hasattr(np, "bitwise_count"):  # numpy >= 2
        return np.bitwise_count(words)
    global _BYTE_BITS
    if _BYTE_BITS is None:
        _BYTE_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).sum(1)
        _BYTE_BITS = _BYTE_BITS.astype(np.uint8)
    as_bytes = np.ascontiguousarray(words).view(np.uint8).reshape(-1, 8)
    return _BYTE_BITS[as_bytes].sum(axis=1, dtype=np.uint8)


def _one_dimension(rows: list, dim: int) -> bool:
    """Every row's vector (column 3, float32 bytes) has `dim` components (any one dimension
    when `dim` is 0)."""
    sizes = {len(r[3]) for r in rows}
    return len(sizes) <= 1 and (not dim or sizes <= {dim * 4})


@contextmanager
def _snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """One read transaction: every SELECT inside sees the same state of the catalogue."""
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")
