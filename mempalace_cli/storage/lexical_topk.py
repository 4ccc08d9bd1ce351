"""The keyword side's top k in a big palace, without asking bm25() to score every match.

FTS5's `ORDER BY bm25(...) LIMIT k` over the OR of a query's terms computes bm25() for every
row that holds any one of them, about a microsecond a row: a query with one common word costs
hundreds of milliseconds at a million drawers. Most of those rows hold one term only, and a
row holding one term scores at most idf * (k1 + 1) (BM25 saturates in the frequency), which
for a common word is far below the k-th best score. So the same top k comes from two cheaper
queries:

- the rows holding at least two of the terms, by the expression `two_or_more`: FTS5 walks the
  same doclists (cheap) but runs bm25() only on the rows that pass, and those rows score
  exactly as under the plain OR (a phrase under NOT's right-hand side contributes no
  instances, so every term counts once);
- the rows holding one term only (`only`), asked for just the terms rare enough that such a
  row could still beat the k-th score of the first query.

The result is FTS5's own ranking, scores included (tests/test_lexical_topk.py compares both on
real palaces); benchmarks/keyword_stage.py measures the time against the plain query.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence

K1 = 1.2  # FTS5's bm25() k1: a term adds at most idf * (K1 + 1) to a row's score
# From this many indexed rows on; below it the plain query takes a few milliseconds.
MIN_ROWS = 20_000
# The expressions grow with the square of the terms; beyond this many the plain query wins.
MAX_TERMS = 6


def two_or_more(terms: Sequence[str]) -> str:
    """FTS5 expression: rows holding at least two of `terms` (quoted FTS5 terms)."""
    singles = " OR ".join(f"({only(t, terms)})" for t in terms)
    return f"({' OR '.join(terms)}) NOT ({singles})"


def only(term: str, terms: Sequence[str]) -> str:
    """FTS5 expression: rows holding `term` and none of the other `terms`."""
    others = [t for t in terms if t != term]
    return f"{term} NOT ({' OR '.join(others)})" if others else term


def indexed_rows(conn: sqlite3.Connection) -> int:
    """The row count bm25() reads: no scan, unlike COUNT(*)."""
    return index_averages(conn)[0]


def index_averages(conn: sqlite3.Connection) -> tuple[int, int]:
    """(rows, tokens) of the keyword index as bm25() reads them: the first two varints of
    FTS5's averages record; (0, 0) for an empty index."""
    row = conn.execute("SELECT block FROM drawer_fts_data WHERE id = 1").fetchone()
    if not row or not row[0]:
        return 0, 0
    rows, pos = read_varint(row[0], 0)
    tokens, _ = read_varint(row[0], pos)
    return rows, tokens


def read_varint(blob: bytes, pos: int = 0) -> tuple[int, int]:
    """One SQLite varint (big-endian 7-bit groups; a 9th byte gives 8 bits): (value, next)."""
    value = 0
    for i in range(9):
        byte = blob[pos]
        pos += 1
        if i == 8:
            return (value << 8) | byte, pos
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            break
    return value, pos


def top_k(
    conn: sqlite3.Connection,
    terms: Sequence[str],
    k: int,
    where: str,
    params: Sequence[object],
    rows: int,
) -> list[tuple[str, float]] | None:
    """The k best (drawer id, bm25 score) for the OR of `terms` among drawers passing `where`
    (SQL over `d.`), best first, exactly as the plain query ranks them; None where the plain
    query is as cheap or the split can't fill the list (the caller runs the plain query)."""
    if not 2 <= len(terms) <= MAX_TERMS or rows < MIN_ROWS or k <= 0:
        return None
    found = {hit[:2]: hit[2] for hit in _ranked(conn, two_or_more(terms), k, where, params)}
    if len(found) < k:
        return None  # few rows hold two terms: rows holding one fill the list
    floor = min(found.values())
    # A row holding only `term` scores at most idf * (K1 + 1); it can reach the list only if
    # idf >= floor / (K1 + 1), i.e. if at most `most` rows hold the term.
    most = int((rows + 0.5) / (math.exp(floor / (K1 + 1.0)) + 1.0)) + 1  # +1: rounding
    for term in terms:
        if _holding(conn, term, most + 1) <= most:
            found.update(
                {hit[:2]: hit[2] for hit in _ranked(conn, only(term, terms), k, where, params)}
            )
    # Ties in rowid order, as FTS5's own sort leaves them.
    ranked = sorted(found.items(), key=lambda hit: (-hit[1], hit[0][0]))
    return [(drawer_id, score) for (_, drawer_id), score in ranked[:k]]


def _holding(conn: sqlite3.Connection, term: str, cap: int) -> int:
    """How many rows hold `term`, counting no further than `cap`."""
    return conn.execute(
        "SELECT count(*) FROM (SELECT rowid FROM drawer_fts WHERE drawer_fts MATCH ? LIMIT ?)",
        (term, cap),
    ).fetchone()[0]


def _ranked(
    conn: sqlite3.Connection, match: str, k: int, where: str, params: Sequence[object]
) -> list[tuple[int, str, float]]:
    """(rowid, drawer id, bm25 score > 0) of the k best rows matching `match`, best first."""
    if where == "1":
        sql = (
            "SELECT d.rowid, d.id, f.rank FROM (SELECT rowid, bm25(drawer_fts) AS rank "
            "FROM drawer_fts WHERE drawer_fts MATCH ? ORDER BY rank LIMIT ?) AS f "
            "JOIN drawers d ON d.rowid = f.rowid ORDER BY f.rank"
        )
        args: list[object] = [match, k]
    else:
        sql = (
            "SELECT d.rowid, d.id, bm25(drawer_fts) AS rank FROM drawer_fts JOIN drawers d "
            f"ON d.rowid = drawer_fts.rowid WHERE drawer_fts MATCH ? AND {where} "
            "ORDER BY rank LIMIT ?"
        )
        args = [match, *params, k]
    return [(rowid, drawer_id, -rank) for rowid, drawer_id, rank in conn.execute(sql, args)]
