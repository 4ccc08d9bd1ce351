"""Common words' postings in memory, for a long-lived process (an MCP server) over a big palace.

A keyword search spends its time in FTS5's bm25(), about a microsecond per row holding any
query term; a common word ("new", "home") is held by a large share of the palace, so at a
million drawers one search costs hundreds of milliseconds however few results it keeps. A
process that searches again and again keeps, per common word, the rows holding it, the word's
frequency in each (read once from FTS5's own index through fts5vocab) and its bm25() share
(13 bytes a posting), and every row's length (4 bytes a row); it scores those rows with
numpy, using bm25()'s formula and inputs. Rare words still go through FTS5, which is cheap
for them. Every row's score is the sum of the same per-term quantities bm25() adds, so the
ranking is FTS5's (scores agree to float rounding; tests/test_term_postings.py compares both).

Staying true: postings are tagged with the catalogue's change-log position (vector_index.py's
`vector_log`: every inserted, deleted or re-vectored drawer's rowid, whichever process wrote
it). Before each search the rows logged since are re-read (their postings replaced); if the log
no longer reaches back that far, or names another catalogue, the postings are dropped.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mempalace_cli.common.lazy import lazy
from mempalace_cli.storage.lexical_topk import index_averages, read_varint

np = lazy("numpy")

K1 = 1.2  # FTS5's bm25() constants (fts5_aux.c)
B = 0.75
MIN_ROWS = 50_000  # below this the plain FTS5 query takes a few milliseconds
COMMON_SHARE = 0.005  # a word held by this share of the rows (and COMMON_MIN) is kept
COMMON_MIN = 2_000
# Beyond this many postings (~160 MB at 13 bytes) the least recently used words are dropped.
MAX_POSTINGS = 12_000_000
TOKENIZE = "porter unicode61 remove_diacritics 2"  # the keyword index's tokenizer (catalog.py)


@dataclass
class Postings:
    """The rows holding one token: rowids (sorted) and its frequency in each, both in the
    smallest unsigned type that holds them."""

    rowids: Any
    freqs: Any
    used: int = 0
    # Each row's bm25() share for this word, for the palace state `key` (rows, avg length).
    key: tuple[int, float] | None = None
    shares: Any = None

    def share(self, rows: int, avgdl: float, lengths: Any) -> Any:
        """idf * f * (k1 + 1) / (f + k1 * (1 - b + b * length / avgdl)) per row: bm25()'s
        term for this word, recomputed only when the palace changed."""
        if self.key != (rows, avgdl):
            f = self.freqs.astype(np.float64)
            length = lengths[self.rowids].astype(np.float64)
            idf = _idf(rows, len(self.rowids))
            self.shares = idf * ((f * (K1 + 1.0)) / (f + K1 * (1 - B + B * length / avgdl)))
            self.key = (rows, avgdl)
        return self.shares


class TermPostings:
    """Keyword ranking from in-memory postings of common words; see the module docstring."""

    def __init__(self, conn: sqlite3.Connection, index_text: Callable[[str], str]) -> None:
        self.conn = conn
        self.index_text = index_text
        self.terms: dict[str, Postings] = {}
        self.lengths: Any = None  # every row's length in tokens, by rowid (uint32)
        self._position: tuple[str, int] | None = None
        self._tokenizer: sqlite3.Connection | None = None
        self._clock = 0

    # -- public ------------------------------------------------------------------------------
    def top(
        self, terms: Sequence[str], k: int, rows: int, position: tuple[str, int]
    ) -> list[tuple[str, float]] | None:
        """The k best (drawer id, bm25 score) for the OR of `terms` (quoted FTS5 terms) over
        the whole palace, best first; None where FTS5's own query should answer (a small
        palace, a phrase or prefix term, no common word among the terms)."""
        if rows < MIN_ROWS or k <= 0 or not terms:
            return None
        self._follow(position)
        tokens = self._single_tokens(terms)
        if tokens is None:
            return None
        self._clock += 1
        common_at = max(COMMON_MIN, int(rows * COMMON_SHARE))
        common = [i for i, tok in enumerate(tokens) if self._common(tok, terms[i], common_at)]
        if not common:
            return None
        avgdl = self._avgdl(rows)
        size = max(int(self.terms[tokens[i]].rowids[-1]) for i in common) + 1
        scores = np.zeros(size, dtype=np.float64)
        for i in common:
            p = self.terms[tokens[i]]
            scores[p.rowids] += p.share(rows, avgdl, self.lengths)
        rare = [terms[i] for i in range(len(terms)) if i not in common]
        if rare:  # FTS5 scores the rows holding a rare word, over the rare words only
            hits = self.conn.execute(
                "SELECT rowid, -bm25(drawer_fts) FROM drawer_fts WHERE drawer_fts MATCH ?",
                (" OR ".join(rare),),
            ).fetchall()
            if hits:
                at = np.fromiter((h[0] for h in hits), dtype=np.int64, count=len(hits))
                if at.max() >= len(scores):
                    scores = np.concatenate([scores, np.zeros(int(at.max()) + 1 - len(scores))])
                scores[at] += np.fromiter((h[1] for h in hits), dtype=np.float64, count=len(hits))
        return self._ids(_best(scores, k))

    # -- which words, and their postings -------------------------------------------------------
    def _common(self, token: str, term: str, common_at: int) -> bool:
        """Is `token` (the query term `term`, as indexed) held by `common_at` rows or more?
        If so its postings are kept (read now if need be)."""
        if token in self.terms:
            self.terms[token].used = self._clock
            return True
        held = self.conn.execute(
            "SELECT count(*) FROM (SELECT rowid FROM drawer_fts WHERE drawer_fts MATCH ? LIMIT ?)",
            (term, common_at),
        ).fetchone()[0]
        if held < common_at:
            return False
        self.terms[token] = self._load(token)
        self.terms[token].used = self._clock
        self._evict()
        return True

    def _load(self, token: str) -> Postings:
        """The rows holding `token`, from FTS5's index (fts5vocab)."""
        if self.lengths is None:
            self.lengths = self._all_lengths()
        vocab = self._vocab()
        docs = np.fromiter(
            (r[0] for r in self.conn.execute(f"SELECT doc FROM {vocab} WHERE term = ?", (token,))),
            dtype=np.int64,
        )
        rowids, freqs = np.unique(docs, return_counts=True)
        return Postings(_compact(rowids), _compact(freqs))

    def _all_lengths(self) -> Any:
        """Every row's length in tokens as bm25() reads it (drawer_fts_docsize), by rowid."""
        rows = self.conn.execute("SELECT id, sz FROM drawer_fts_docsize").fetchall()
        size = max((r[0] for r in rows), default=0) + 1
        out = np.zeros(size, dtype=np.uint32)
        at = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        out[at] = np.fromiter(
            (read_varint(r[1])[0] for r in rows), dtype=np.uint32, count=len(rows)
        )
        return out

    def _set_lengths(self, rowids: list[int]) -> None:
        """Re-read the lengths of `rowids` (0 for a row that is gone)."""
        top = max(rowids) + 1
        if top > len(self.lengths):
            self.lengths = np.concatenate(
                [self.lengths, np.zeros(top - len(self.lengths), np.uint32)]
            )
        self.lengths[np.asarray(rowids, dtype=np.int64)] = 0
        for start in range(0, len(rowids), 500):
            part = rowids[start : start + 500]
            marks = ",".join("?" * len(part))
            for rowid, sz in self.conn.execute(
                f"SELECT id, sz FROM drawer_fts_docsize WHERE id IN ({marks})", part
            ):
                self.lengths[rowid] = read_varint(sz)[0]

    def _evict(self) -> None:
        total = sum(len(p.rowids) for p in self.terms.values())
        # Least recently used first; never a word of the search being answered.
        for token in sorted(self.terms, key=lambda t: self.terms[t].used):
            if total <= MAX_POSTINGS or self.terms[token].used == self._clock:
                break
            total -= len(self.terms.pop(token).rowids)

    # -- staying true -----------------------------------------------------------------------
    def _follow(self, position: tuple[str, int]) -> None:
        """Bring the postings up to the catalogue's change-log `position` (token, last seq)."""
        if self._position == position:
            return
        old, self._position = self._position, position
        if old is None or (not self.terms and self.lengths is None):
            return
        first = self.conn.execute("SELECT MIN(seq) FROM vector_log").fetchone()[0]
        # Every change since `old` must still be in the log (the vector index trims what it
        # has applied, possibly earlier in this very search).
        lost = position[1] > old[1] if first is None else first > old[1] + 1
        if old[0] != position[0] or position[1] < old[1] or lost:
            self.terms.clear()  # another catalogue, or the log no longer reaches back
            self.lengths = None
            return
        changed = sorted(
            {
                r
                for (r,) in self.conn.execute(
                    "SELECT row FROM vector_log WHERE seq > ? AND seq <= ?", (old[1], position[1])
                )
            }
        )
        if changed:
            self._replace_rows(changed)

    def _replace_rows(self, rowids: list[int]) -> None:
        """Drop the postings of `rowids`, then add those of their current texts."""
        texts: list[tuple[int, str]] = []
        for start in range(0, len(rowids), 500):
            part = rowids[start : start + 500]
            marks = ",".join("?" * len(part))
            texts += self.conn.execute(
                f"SELECT rowid, text FROM drawers WHERE rowid IN ({marks})", part
            ).fetchall()
        self._set_lengths(rowids)
        counts = self._count_tokens(texts, set(self.terms))
        gone = np.asarray(rowids, dtype=np.int64)
        for token, p in self.terms.items():
            keep = ~np.isin(p.rowids, gone)
            add = sorted((r, n) for (t, r), n in counts.items() if t == token)
            rows = np.concatenate(
                [p.rowids[keep].astype(np.int64), np.asarray([r for r, _ in add], np.int64)]
            )
            freqs = np.concatenate(
                [p.freqs[keep].astype(np.int64), np.asarray([n for _, n in add], np.int64)]
            )
            order = np.argsort(rows, kind="stable")
            self.terms[token] = Postings(_compact(rows[order]), _compact(freqs[order]), p.used)

    # -- tokens ---------------------------------------------------------------------------------
    def _count_tokens(
        self, texts: list[tuple[int, str]], tokens: set[str]
    ) -> dict[tuple[str, int], int]:
        """(token, rowid) -> frequency in `texts`, for `tokens`, as the index tokenizes."""
        tok = self._tokenizer_db()
        _fill(tok, [(r, self.index_text(t)) for r, t in texts])
        out: dict[tuple[str, int], int] = {}
        for token in tokens:
            for doc, n in tok.execute(
                "SELECT doc, count(*) FROM ti WHERE term = ? GROUP BY doc", (token,)
            ):
                out[(token, doc)] = n
        return out

    def held(self, term: str, position: tuple[str, int] | None) -> int | None:
        """How many rows hold `term` (a quoted FTS5 term), if its postings are kept and up to
        the change-log `position` (else None: the caller counts)."""
        if position is None or position != self._position:
            return None
        tokens = self._single_tokens([term])
        p = self.terms.get(tokens[0]) if tokens else None
        return None if p is None else len(p.rowids)

    def _single_tokens(self, terms: Sequence[str]) -> list[str] | None:
        """Each quoted term as the one token the index holds for it (stemmed); None if one
        is a prefix query or not exactly one token (a phrase)."""
        words = []
        for term in terms:
            if len(term) < 3 or not (term.startswith('"') and term.endswith('"')):
                return None
            words.append(term[1:-1].replace('""', '"'))
        tok = self._tokenizer_db()
        _fill(tok, [(i + 1, w) for i, w in enumerate(words)])
        found: dict[int, list[str]] = {}
        for term, doc in tok.execute("SELECT term, doc FROM ti ORDER BY doc, offset"):
            found.setdefault(doc, []).append(term)
        tokens = [found.get(i + 1, []) for i in range(len(words))]
        return [t[0] for t in tokens] if all(len(t) == 1 for t in tokens) else None

    def _tokenizer_db(self) -> sqlite3.Connection:
        """A private in-memory FTS5 table with the index's tokenizer: FTS5 itself splits and
        stems, so tokens and frequencies are the ones the index holds."""
        if self._tokenizer is None:
            tok = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            tok.execute(
                f"CREATE VIRTUAL TABLE t USING fts5(text, content='', tokenize='{TOKENIZE}')"
            )
            tok.execute("CREATE VIRTUAL TABLE ti USING fts5vocab(t, 'instance')")
            self._tokenizer = tok
        return self._tokenizer

    def _vocab(self) -> str:
        """The main keyword index's fts5vocab table (temp schema: nothing written to disk)."""
        self.conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.mp_fts_instances "
            "USING fts5vocab(main, drawer_fts, 'instance')"
        )
        return "temp.mp_fts_instances"

    def _avgdl(self, rows: int) -> float:
        return index_averages(self.conn)[1] / rows

    def _ids(self, best: list[tuple[int, float]]) -> list[tuple[str, float]]:
        if not best:
            return []
        marks = ",".join("?" * len(best))
        ids = dict(
            self.conn.execute(
                f"SELECT rowid, id FROM drawers WHERE rowid IN ({marks})", [r for r, _ in best]
            )
        )
        return [(ids[r], s) for r, s in best if r in ids]


def _best(scores: Any, k: int) -> list[tuple[int, float]]:
    """The k best (rowid, score) of the dense `scores` (0 = no match), best first, ties in
    rowid order (as FTS5's sort leaves them)."""
    held = np.flatnonzero(scores)
    values = scores[held]
    if len(held) > k:
        edge = np.partition(values, len(values) - k)[len(values) - k]
        above = values > edge
        # The rows at the k-th value, in rowid order, as many as fill the list.
        at_edge = np.flatnonzero(values == edge)[: k - int(above.sum())]
        keep = np.concatenate([np.flatnonzero(above), at_edge])
        held, values = held[keep], values[keep]
    order = np.lexsort((held, -values))
    return [(int(held[i]), float(values[i])) for i in order[:k]]


def _compact(values: Any) -> Any:
    """Non-negative integers in the smallest unsigned type that holds them (a rowid in 4
    bytes, a frequency in 1, in practice)."""
    top = int(values.max()) if len(values) else 0
    return values.astype(np.min_scalar_type(top) if top > 0 else np.uint8)


def _idf(rows: int, held: int) -> float:
    value = math.log((rows - held + 0.5) / (held + 0.5))
    return value if value > 0.0 else 1e-6


def _fill(tok: sqlite3.Connection, rows: list[tuple[int, str]]) -> None:
    """Replace the tokenizer table's rows (one transaction: a segment, not one per row)."""
    tok.execute("BEGIN")
    tok.execute("INSERT INTO t(t) VALUES ('delete-all')")
    tok.executemany("INSERT INTO t(rowid, text) VALUES (?, ?)", rows)
    tok.execute("COMMIT")
