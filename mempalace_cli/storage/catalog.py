"""The palace catalogue: a SQLite mirror of every drawer's metadata and text.

It serves three purposes that Chroma can't serve cheaply:
- the lexical (BM25, FTS5) side of hybrid search;
- counts and listings by wing / room without fetching documents (status, the palace graph);
- the file manifest that makes mining incremental (content hash per source file);
- a copy of each drawer's vector, so that a fresh process can rank the vector side of a search
  without importing chromadb while the catalogue is known to be in step (`catalog_trusted`).

Chroma stays the source of truth for drawers. storage/consistency.py owns the agreement:
the catalogue records which state of Chroma it mirrors (Chroma's write-log sequence number, or
a probe of a Chroma server), every command compares it, and a catalogue out of step is
repaired from Chroma, never the other way round (a palace made by MemPalace, another program
or machine writing to the store, or a crash between the two writes).
"""

from __future__ import annotations

import json
import logging
import math
import re
import secrets
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from mempalace_cli.common.cjk import CJK_RUN, bigrams, index_text, is_question_gram
from mempalace_cli.common.lazy import lazy
from mempalace_cli.common.wordlists import STOPWORDS
from mempalace_cli.storage import lexical_topk
from mempalace_cli.storage.filters import FILE_DATED_SQL, UNDATED_SQL, DrawerFilter
from mempalace_cli.storage.sqlite_db import PalaceDb, add_column
from mempalace_cli.storage.term_postings import TermPostings

np = lazy("numpy")
T = TypeVar("T")

# One-time notices (an index upgrade) go to stderr through logging: the core prints nothing.
notices = logging.getLogger("mempalace.notice")

CATALOG_FILE = "mempalace_index.sqlite3"
SCHEMA_VERSION = 4
# Meta key: "1" when every drawer row carries its embedding (float32 BLOB), so the vector side
# of search can run on the catalogue alone; "0" after the upgrade of a catalogue made before
# vectors were mirrored, until the next sync backfills them from Chroma.
VECTORS_META = "vectors"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS drawers (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    wing TEXT NOT NULL DEFAULT '',
    room TEXT NOT NULL DEFAULT '',
    source_file TEXT NOT NULL DEFAULT '',
    chunk_index INTEGER,
    filed_at TEXT NOT NULL DEFAULT '',
    text TEXT NOT NULL DEFAULT '',
    metadata TEXT NOT NULL DEFAULT '{}',
    embedding BLOB
);
CREATE INDEX IF NOT EXISTS drawers_wing_room ON drawers (wing, room);
CREATE INDEX IF NOT EXISTS drawers_room ON drawers (room);
CREATE INDEX IF NOT EXISTS drawers_source_chunk ON drawers (source_file, chunk_index);
CREATE INDEX IF NOT EXISTS drawers_undated ON drawers (wing, room) WHERE {undated};
CREATE INDEX IF NOT EXISTS drawers_file_dated ON drawers (wing, room) WHERE {file_dated};
CREATE TABLE IF NOT EXISTS files (
    source_file TEXT PRIMARY KEY,
    source_root TEXT NOT NULL,
    wing TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime REAL NOT NULL,
    drawer_ids TEXT NOT NULL,
    ingest_mode TEXT NOT NULL DEFAULT 'projects',
    mined_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS files_root ON files (source_root);
CREATE TABLE IF NOT EXISTS passages (
    drawer INTEGER NOT NULL,
    n INTEGER NOT NULL,
    embedding BLOB NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS passages_drawer ON passages (drawer, n);
""".replace("{undated}", UNDATED_SQL).replace("{file_dated}", FILE_DATED_SQL)
# `passages` (schema 4): the vectors of a long drawer's passages (passage_vectors.py), tied to
# the drawer's rowid, deleted with it or when its text or vector changes (these triggers, made
# once the drawers table has its vector column: _migrate). A catalogue made before them gets
# the empty table when opened; its long drawers get passages on `reembed`.
_PASSAGE_TRIGGERS = """
CREATE TRIGGER IF NOT EXISTS passages_drawer_gone AFTER DELETE ON drawers BEGIN
    DELETE FROM passages WHERE drawer = old.rowid;
END;
CREATE TRIGGER IF NOT EXISTS passages_drawer_changed AFTER UPDATE OF text, embedding ON drawers
WHEN new.text IS NOT old.text OR new.embedding IS NOT old.embedding BEGIN
    DELETE FROM passages WHERE drawer = old.rowid;
END;
"""

# The keyword index reads each drawer's text through INDEX_TEXT_FN (CJK runs as bigrams,
# mempalace_cli/common/cjk.py): a Python function registered on every connection this module opens,
# called by the triggers that feed the index, so the index can never see unsplit text.
INDEX_TEXT_FN = "mp_index_text"
# Meta key naming how the keyword index splits text; a catalogue indexed another way (or made
# before CJK splitting) is re-indexed once when opened.
FTS_META = "fts_tokens"
VECTOR_LOG_TOKEN = "vector_log_token"  # vector_index.py's TOKEN_META: the change log's owner
FTS_TOKENS = "porter-unicode61+cjk-bigrams-1"
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"
_FTS_STATEMENTS = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS drawer_fts USING fts5(text, content='drawers', "
    f"content_rowid='rowid', tokenize='{FTS_TOKENIZER}')",
    "CREATE TRIGGER IF NOT EXISTS drawers_ai AFTER INSERT ON drawers BEGIN "
    f"INSERT INTO drawer_fts(rowid, text) VALUES (new.rowid, {INDEX_TEXT_FN}(new.text)); END",
    "CREATE TRIGGER IF NOT EXISTS drawers_ad AFTER DELETE ON drawers BEGIN "
    "INSERT INTO drawer_fts(drawer_fts, rowid, text) "
    f"VALUES ('delete', old.rowid, {INDEX_TEXT_FN}(old.text)); END",
    # An edited drawer (update_drawer) is re-indexed, never left with its old words.
    "CREATE TRIGGER IF NOT EXISTS drawers_au AFTER UPDATE OF text ON drawers BEGIN "
    "INSERT INTO drawer_fts(drawer_fts, rowid, text) "
    f"VALUES ('delete', old.rowid, {INDEX_TEXT_FN}(old.text)); "
    f"INSERT INTO drawer_fts(rowid, text) VALUES (new.rowid, {INDEX_TEXT_FN}(new.text)); END",
)

# The change log vector_index.py follows: triggers on `drawers` append (rowid) to `vector_log`,
# whose AUTOINCREMENT number only grows; `vector_log_token` names this catalogue. Created with
# the catalogue (or once, when a catalogue made before it is opened), never by a search.
_VECTOR_LOG = """
CREATE TABLE IF NOT EXISTS vector_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, row INTEGER NOT NULL
);
CREATE TRIGGER IF NOT EXISTS vector_log_ai AFTER INSERT ON drawers BEGIN
    INSERT INTO vector_log(row) VALUES (new.rowid);
END;
CREATE TRIGGER IF NOT EXISTS vector_log_ad AFTER DELETE ON drawers BEGIN
    INSERT INTO vector_log(row) VALUES (old.rowid);
END;
CREATE TRIGGER IF NOT EXISTS vector_log_au AFTER UPDATE OF embedding, wing, room ON drawers BEGIN
    INSERT INTO vector_log(row) VALUES (old.rowid);
    INSERT INTO vector_log(row) VALUES (new.rowid);
END;
"""

_WORD = re.compile(r"\w+", re.UNICODE)


def fts_terms(text: str) -> list[str]:
    """The FTS5 terms of free text, each quoted: stopwords dropped; a CJK run becomes its
    bigrams, as the index stores it; a lone CJK character matches as a prefix (any bigram
    starting with it), only when nothing else is left."""
    words: list[str] = []
    cjk: list[str] = []
    noise: list[str] = []
    singles: list[str] = []
    for word in _WORD.findall(text):
        pos = 0
        for m in CJK_RUN.finditer(word):
            if m.start() > pos:
                words.append(word[pos : m.start()].lower())
            for gram in bigrams(m.group()):
                if len(gram) == 1:
                    singles.append(gram)
                else:
                    (noise if is_question_gram(gram) else cjk).append(gram)
            pos = m.end()
        if pos < len(word):
            words.append(word[pos:].lower())
    terms = [_quote(w) for w in words if w not in STOPWORDS]
    terms += [_quote(g) for g in cjk]
    if not terms:  # only stopwords, question words or lone CJK characters: use them after all
        terms = [_quote(w) for w in words] + [_quote(g) for g in noise]
        terms += [_quote(c) + " *" for c in singles]
    return list(dict.fromkeys(terms))


def translated_share(groups: Sequence[Sequence[str]], texts: dict[str, str]) -> dict[str, float]:
    """For each text (id -> text) holding any of the words: the share of `groups` (one group
    of alternative words per word of a question) it holds, each group weighed by its idf over
    these texts (BM25's, as FTS5 counts it), so a specific word counts more than one most
    texts hold. 0 to 1, comparable across searches. Uses the keyword index's tokenizer (so
    "invoices" holds "invoice") in a throwaway in-memory index: the same cost at a million
    drawers as at ten."""
    if not groups or not texts:
        return {}
    ids = list(texts)
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(text, tokenize='{FTS_TOKENIZER}')")
        conn.executemany(
            "INSERT INTO t(rowid, text) VALUES (?, ?)",
            [(n, index_text(texts[i])) for n, i in enumerate(ids, start=1)],
        )
        held: dict[str, float] = {}
        total = 0.0
        for group in groups:
            match = fts_query(" ".join(group))
            if match is None:
                continue
            rows = [r[0] for r in conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (match,))]
            weight = max(1e-6, math.log((len(ids) - len(rows) + 0.5) / (len(rows) + 0.5)))
            total += weight
            for rowid in rows:
                held[ids[rowid - 1]] = held.get(ids[rowid - 1], 0.0) + weight
        return {i: w / total for i, w in held.items()} if total else {}
    finally:
        conn.close()


def fts_query(text: str) -> str | None:
    """Turn free text into a safe FTS5 query: its terms (`fts_terms`) joined by OR."""
    terms = fts_terms(text)
    return " OR ".join(terms) if terms else None


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


@dataclass(frozen=True)
class DrawerRow:
    id: str
    wing: str
    room: str
    source_file: str
    chunk_index: int | None
    filed_at: str
    text: str
    metadata: dict[str, Any]


@dataclass(frozen=True)
class CandidateRow:
    """What a search's ranking reads of a candidate (`Catalog.candidates`): its text and
    place, and the two metadata fields the ranking rules test (read by SQLite: no metadata
    is parsed for the ~100 candidates of a search)."""

    id: str
    room: str
    source_file: str
    chunk_index: int | None
    text: str
    kind: Any  # metadata "type" ("diary_entry" for a diary entry)
    ingest_mode: Any  # metadata "ingest_mode" ("convos" for a part of a conversation)


@dataclass(frozen=True)
class FileRecord:
    source_file: str
    source_root: str
    wing: str
    content_hash: str
    size: int
    mtime: float
    drawer_ids: list[str]
    ingest_mode: str


def _where(
    wing: str | None, room: str | None, prefix: str = "", filt: DrawerFilter | None = None
) -> tuple[str, list[Any]]:
    if filt is not None:
        return filt.sql(prefix)
    clauses, params = [], []
    if wing is not None:
        clauses.append(f"{prefix}wing = ?")
        params.append(wing)
    if room is not None:
        clauses.append(f"{prefix}room = ?")
        params.append(room)
    return (" AND ".join(clauses) or "1"), params


class Catalog:
    def __init__(self, palace_path: Path) -> None:
        self.path = palace_path / CATALOG_FILE
        self._db = PalaceDb(
            self.path,
            _SCHEMA,
            "The palace index",
            "; the next command rebuilds it from the drawers.",
            setup=_setup,
        )
        self._keep_postings = False
        self._postings: TermPostings | None = None

    # -- connection -------------------------------------------------------------------------
    @property
    def exists(self) -> bool:
        return self.path.exists()

    @property
    def conn(self) -> sqlite3.Connection:
        return self._db.conn

    def close(self) -> None:
        self._db.close()
        self._postings = None

    def keep_postings(self) -> None:
        """For a long-lived process: keep common words' postings in memory and rank the
        keyword side from them in a big palace (term_postings.py)."""
        self._keep_postings = True

    def _kept_postings(self) -> TermPostings | None:
        if not self._keep_postings:
            return None
        if self._postings is None or self._postings.conn is not self.conn:
            self._postings = TermPostings(self.conn, index_text)
        return self._postings

    def log_position(self) -> tuple[str, int] | None:
        """(catalogue token, last change-log sequence number) of vector_index.py's log, read
        only; None before the log exists. The number is AUTOINCREMENT's high-water mark, so it
        never goes back when the log's applied rows are trimmed."""
        try:
            token = self.get_meta(VECTOR_LOG_TOKEN)
            self.conn.execute("SELECT 1 FROM vector_log LIMIT 1")
            last = self.conn.execute(
                "SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'vector_log'), 0)"
            ).fetchone()
        except sqlite3.OperationalError:
            return None
        return (token, int(last[0])) if token else None

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        conn = self.conn
        with conn:
            yield conn

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """One read transaction: every read inside sees the catalogue as it was at the first
        one, whatever other processes commit meanwhile (WAL: it blocks no writer). Inside a
        transaction already open on this connection, it reads in that one."""
        conn = self.conn
        if conn.in_transaction:
            yield conn
            return
        conn.execute("BEGIN")
        try:
            conn.execute("SELECT 1 FROM drawers LIMIT 1").fetchone()  # the snapshot starts here
            yield conn
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")  # a read-only transaction: nothing to write

    # -- meta -------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, conn: sqlite3.Connection, key: str, value: str) -> None:
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    def bump_generation(self, conn: sqlite3.Connection) -> None:
        """Mark that the palace changed, so long-lived readers in other processes can notice."""
        conn.execute(
            "INSERT INTO meta(key, value) VALUES ('generation', '1') ON CONFLICT(key) "
            "DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)"
        )

    def generation(self) -> int:
        return int(self.get_meta("generation") or 0)

    # -- drawers ----------------------------------------------------------------------------
    def upsert_drawers(
        self,
        conn: sqlite3.Connection,
        rows: Sequence[DrawerRow],
        embeddings: Any,
        passages: dict[str, Any] | None = None,
    ) -> None:
        """Insert or replace `rows`; `embeddings` holds each row's vector, in order (the same
        vectors that went to Chroma: the catalogue mirrors them for search); `passages`, the
        passage vectors of the long ones (id -> matrix, passage_vectors.py)."""
        blobs = _blobs(embeddings, len(rows))
        for r, blob in zip(rows, blobs, strict=True):
            conn.execute("DELETE FROM drawers WHERE id = ?", (r.id,))
            cur = conn.execute(
                "INSERT INTO drawers(id, wing, room, source_file, chunk_index, filed_at, text, "
                "metadata, embedding) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    r.id,
                    r.wing,
                    r.room,
                    r.source_file,
                    r.chunk_index,
                    r.filed_at,
                    r.text,
                    json.dumps(r.metadata, ensure_ascii=False),
                    blob,
                ),
            )
            if passages and r.id in passages:
                _insert_passages(conn, cur.lastrowid, passages[r.id])

    def set_passages(self, conn: sqlite3.Connection, vectors: dict[str, Any]) -> int:
        """Give existing drawers their passage vectors (id -> matrix), replacing any they had;
        the drawer row is touched so that the vector index's change log names it. Returns
        how many drawers got them (a drawer gone meanwhile is skipped)."""
        done = 0
        for drawer_id, matrix in vectors.items():
            row = conn.execute("SELECT rowid FROM drawers WHERE id = ?", (drawer_id,)).fetchone()
            if row is None:
                continue
            conn.execute("DELETE FROM passages WHERE drawer = ?", (row[0],))
            _insert_passages(conn, row[0], matrix)
            conn.execute("UPDATE drawers SET wing = wing WHERE rowid = ?", (row[0],))
            done += 1
        return done

    def lacking_passages(self, min_chars: int, limit: int, after: int = 0) -> list[DrawerRow]:
        """Up to `limit` drawers (rowid order, after rowid `after`) longer than `min_chars`
        characters that have a vector but no passage vectors: those a `reembed` fills in.
        Each row's `chunk_index` is replaced by its rowid, for the next call's `after`."""
        try:
            found = self.conn.execute(
                "SELECT d.rowid, d.id, d.wing, d.room, d.source_file, d.filed_at, d.text, "
                "d.metadata FROM drawers d WHERE d.rowid > ? AND length(d.text) > ? "
                "AND d.embedding IS NOT NULL "
                "AND NOT EXISTS (SELECT 1 FROM passages p WHERE p.drawer = d.rowid) "
                "ORDER BY d.rowid LIMIT ?",
                (after, min_chars, limit),
            ).fetchall()
        except sqlite3.OperationalError:  # a read-only catalogue made before passages
            return []
        return [_row((r[1], r[2], r[3], r[4], r[0], r[5], r[6], r[7])) for r in found]

    def passage_vectors(
        self, wing: str | None = None, room: str | None = None, filt: DrawerFilter | None = None
    ) -> tuple[list[str], Any]:
        """The passage vectors of the drawers in wing/room (or `filt`): each one's drawer id
        and an (n, d) float32 matrix; ([], None) when there are none."""
        where, params = _where(wing, room, prefix="d.", filt=filt)
        try:
            rows = self.conn.execute(
                "SELECT d.id, p.embedding FROM passages p JOIN drawers d ON d.rowid = p.drawer "
                f"WHERE {where} ORDER BY p.drawer, p.n",
                params,
            ).fetchall()
        except sqlite3.OperationalError:  # a read-only catalogue made before passages
            return [], None
        if not rows:
            return [], None
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
        return [r[0] for r in rows], matrix.reshape(len(rows), -1)

    def set_embeddings(self, conn: sqlite3.Connection, ids: Sequence[str], embeddings: Any):
        """Fill in the vectors of existing rows (the backfill of an upgraded catalogue)."""
        conn.executemany(
            "UPDATE drawers SET embedding = ? WHERE id = ?",
            list(zip(_blobs(embeddings, len(ids)), ids, strict=True)),
        )

    def embedding_blobs(self, ids: Sequence[str]) -> dict[str, bytes | None]:
        """Each listed drawer's stored vector (float32 bytes), None where it has none."""
        out: dict[str, bytes | None] = {}
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            marks = ",".join("?" * len(part))
            for drawer_id, blob in self.conn.execute(
                f"SELECT id, embedding FROM drawers WHERE id IN ({marks})", part
            ):
                out[drawer_id] = blob
        return out

    def missing_vectors(self) -> bool:
        return (
            self.conn.execute("SELECT 1 FROM drawers WHERE embedding IS NULL LIMIT 1").fetchone()
            is not None
        )

    def vectors(
        self, wing: str | None = None, room: str | None = None, filt: DrawerFilter | None = None
    ) -> tuple[list[str], Any]:
        """The ids and an (n, d) float32 matrix of the drawers in wing/room (or `filt`), in
        rowid order; (ids, None) if any of them has no vector."""
        where, params = _where(wing, room, filt=filt)
        rows = self.conn.execute(
            f"SELECT id, embedding FROM drawers WHERE {where} ORDER BY rowid", params
        ).fetchall()
        ids = [r[0] for r in rows]
        if any(r[1] is None for r in rows):
            return ids, None
        if not rows:
            return ids, np.zeros((0, 0), dtype=np.float32)
        return ids, np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(
            len(rows), -1
        )

    def delete_drawers(self, conn: sqlite3.Connection, ids: Sequence[str]) -> None:
        conn.executemany("DELETE FROM drawers WHERE id = ?", [(i,) for i in ids])

    def drawer_ids_for_source(self, source_file: str) -> list[str]:
        rows = self.conn.execute("SELECT id FROM drawers WHERE source_file = ?", (source_file,))
        return [r[0] for r in rows]

    def count(
        self, wing: str | None = None, room: str | None = None, filt: DrawerFilter | None = None
    ) -> int:
        where, params = _where(wing, room, filt=filt)
        return self.conn.execute(f"SELECT COUNT(*) FROM drawers WHERE {where}", params).fetchone()[
            0
        ]

    def counts_by_wing_room(self) -> list[tuple[str, str, int]]:
        rows = self.conn.execute(
            "SELECT wing, room, COUNT(*) FROM drawers GROUP BY wing, room ORDER BY wing, room"
        )
        return [(w, r, n) for w, r, n in rows]

    def all_ids(self) -> set[str]:
        return {r[0] for r in self.conn.execute("SELECT id FROM drawers")}

    def present(self, ids: Sequence[str]) -> set[str]:
        """Which of `ids` are filed (ids only: no text is read)."""
        out: set[str] = set()
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            marks = ",".join("?" * len(part))
            out.update(
                r[0]
                for r in self.conn.execute(f"SELECT id FROM drawers WHERE id IN ({marks})", part)
            )
        return out

    def candidates(self, ids: Sequence[str]) -> dict[str, CandidateRow]:
        """The filed drawers among `ids` as a search's ranking reads them (`CandidateRow`)."""
        return self._by_id(
            "room, source_file, chunk_index, text, json_extract(metadata, '$.type'), "
            "json_extract(metadata, '$.ingest_mode')",
            ids,
            lambda row: CandidateRow(*row),
        )

    def get(self, ids: Sequence[str]) -> dict[str, DrawerRow]:
        return self._by_id(
            "wing, room, source_file, chunk_index, filed_at, text, metadata", ids, _row
        )

    def _by_id(self, columns: str, ids: Sequence[str], make: Callable[[tuple], T]) -> dict[str, T]:
        """id -> make(row) for the filed drawers among `ids`, a row being (id, *columns)."""
        out: dict[str, T] = {}
        for start in range(0, len(ids), 500):
            part = list(ids[start : start + 500])
            marks = ",".join("?" * len(part))
            for row in self.conn.execute(
                f"SELECT id, {columns} FROM drawers WHERE id IN ({marks})", part
            ):
                out[row[0]] = make(row)
        return out

    def iter_drawers(
        self,
        wing: str | None = None,
        room: str | None = None,
        order: str = "rowid",
        filt: DrawerFilter | None = None,
        limit: int = -1,
        offset: int = 0,
    ) -> Iterator[DrawerRow]:
        where, params = _where(wing, room, filt=filt)
        for row in self.conn.execute(
            "SELECT id, wing, room, source_file, chunk_index, filed_at, text, metadata "
            f"FROM drawers WHERE {where} ORDER BY {order} LIMIT ? OFFSET ?",
            [*params, limit, offset],
        ):
            yield _row(row)

    def lexical_search(
        self,
        query: str,
        limit: int,
        wing: str | None = None,
        room: str | None = None,
        filt: DrawerFilter | None = None,
    ) -> list[tuple[str, float]]:
        """BM25 ranking of drawers for `query`: [(drawer_id, score)], best first, score > 0."""
        terms = fts_terms(query)
        if not terms:
            return []
        match = " OR ".join(terms)
        where, params = _where(wing, room, prefix="d.", filt=filt)
        rows = lexical_topk.indexed_rows(self.conn)
        # A long-lived process over a big palace: common words from memory (term_postings.py).
        postings = self._kept_postings() if where == "1" else None
        position = self.log_position() if postings is not None else None
        if postings is not None and position is not None:
            kept = postings.top(terms, limit, rows, position)
            if kept is not None:
                return kept
        # A big palace: the same ranking from queries that score fewer rows (lexical_topk.py).
        split = lexical_topk.top_k(self.conn, terms, limit, where, params, rows)
        if split is not None:
            return split
        if where == "1":
            # No filter: rank inside the keyword index first, then look up the ids of the
            # `limit` best only. Joining first read the drawers row of every match (most of a
            # palace, for a common word) before the LIMIT; the same rows and scores come out.
            rows = self.conn.execute(
                "SELECT d.id, f.rank FROM (SELECT rowid, bm25(drawer_fts) AS rank "
                "FROM drawer_fts WHERE drawer_fts MATCH ? ORDER BY rank LIMIT ?) AS f "
                "JOIN drawers d ON d.rowid = f.rowid ORDER BY f.rank",
                [match, limit],
            )
        else:
            rows = self.conn.execute(
                "SELECT d.id, bm25(drawer_fts) AS rank FROM drawer_fts JOIN drawers d "
                f"ON d.rowid = drawer_fts.rowid WHERE drawer_fts MATCH ? AND {where} "
                "ORDER BY rank LIMIT ?",
                [match, *params, limit],
            )
        return [(drawer_id, -rank) for drawer_id, rank in rows]

    def query_weight(self, query: str) -> float:
        """The sum of the query terms' BM25 idf (FTS5's formula) over the whole index: what a
        drawer matching every term once would roughly score. A BM25 score divided by it says
        how much of the query a drawer matched, comparable across queries and palaces."""
        terms = fts_terms(query)
        if not terms:
            return 0.0
        total = lexical_topk.indexed_rows(self.conn)  # bm25()'s own count, read, not scanned
        weight = 0.0
        postings = self._kept_postings()
        position = self.log_position() if postings is not None else None
        for term in terms:
            n = postings.held(term, position) if postings is not None else None
            if n is None:
                n = self.conn.execute(
                    "SELECT COUNT(*) FROM drawer_fts WHERE drawer_fts MATCH ?", (term,)
                ).fetchone()[0]
            weight += max(1e-6, math.log((total - n + 0.5) / (n + 0.5))) if n else 0.0
        return weight

    def clear(self, conn: sqlite3.Connection) -> None:
        conn.execute("DELETE FROM drawers")
        conn.execute("INSERT INTO drawer_fts(drawer_fts) VALUES ('delete-all')")

    # -- files ------------------------------------------------------------------------------
    def get_file(self, source_file: str) -> FileRecord | None:
        row = self.conn.execute(
            "SELECT source_file, source_root, wing, content_hash, size, mtime, drawer_ids, "
            "ingest_mode FROM files WHERE source_file = ?",
            (source_file,),
        ).fetchone()
        return _file(row) if row else None

    def files_under(self, source_root: str) -> dict[str, FileRecord]:
        rows = self.conn.execute(
            "SELECT source_file, source_root, wing, content_hash, size, mtime, drawer_ids, "
            "ingest_mode FROM files WHERE source_root = ?",
            (source_root,),
        )
        return {r[0]: _file(r) for r in rows}

    def put_file(self, conn: sqlite3.Connection, rec: FileRecord, mined_at: str) -> None:
        conn.execute(
            "INSERT OR REPLACE INTO files(source_file, source_root, wing, content_hash, size, "
            "mtime, drawer_ids, ingest_mode, mined_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                rec.source_file,
                rec.source_root,
                rec.wing,
                rec.content_hash,
                rec.size,
                rec.mtime,
                json.dumps(rec.drawer_ids),
                rec.ingest_mode,
                mined_at,
            ),
        )

    def touch_file(self, conn: sqlite3.Connection, source_file: str, size: int, mtime: float):
        conn.execute(
            "UPDATE files SET size = ?, mtime = ? WHERE source_file = ?",
            (size, mtime, source_file),
        )

    def invalidate_file(self, conn: sqlite3.Connection, source_file: str) -> None:
        """Mark a mined file as changed, so the next mine reads it again."""
        conn.execute(
            "UPDATE files SET size = -1, mtime = -1, content_hash = '' WHERE source_file = ?",
            (source_file,),
        )

    def delete_file(self, conn: sqlite3.Connection, source_file: str) -> None:
        conn.execute("DELETE FROM files WHERE source_file = ?", (source_file,))


def _setup(conn: sqlite3.Connection) -> None:
    """Bring the catalogue to this schema. Opening one that is already there writes nothing
    (every statement below reads first), so a search never waits for a writer here."""
    conn.create_function(INDEX_TEXT_FN, 1, _index_text, deterministic=True)
    _migrate(conn)
    _drop_index(conn, "drawers_source")  # (source_file): drawers_source_chunk serves it
    if (
        conn.execute(
            "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'passages_%'"
        ).fetchone()[0]
        < 2
    ):
        conn.executescript(_PASSAGE_TRIGGERS)
    _ensure_keyword_index(conn)
    if not _has_meta(conn, VECTORS_META):
        conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES (?, '1')", (VECTORS_META,))
    if not has_vector_log(conn):
        ensure_vector_log(conn)
    # Only when it differs: REPLACE rewrites the row even with the same value, so a palace
    # that is only read (search, export, migrate's source) would change on disk.
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is None or row[0] != str(SCHEMA_VERSION):
        conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)",
            (str(SCHEMA_VERSION),),
        )


def _drop_index(conn: sqlite3.Connection, name: str) -> None:
    """Drop an index an earlier version made, once (a read-only palace keeps it)."""
    if conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?", (name,)
    ).fetchone():
        try:
            conn.execute(f"DROP INDEX {name}")
        except sqlite3.OperationalError as exc:
            if "readonly" not in str(exc).lower():
                raise


def _has_meta(conn: sqlite3.Connection, key: str) -> bool:
    return conn.execute("SELECT 1 FROM meta WHERE key = ?", (key,)).fetchone() is not None


def has_vector_log(conn: sqlite3.Connection) -> bool:
    """The change log vector_index.py follows is there (read only)."""
    trigger = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = 'vector_log_au'"
    ).fetchone()
    return trigger is not None and _has_meta(conn, VECTOR_LOG_TOKEN)


def ensure_vector_log(conn: sqlite3.Connection) -> None:
    """Create the change log and name this catalogue (a new token: an index built from another
    catalogue is rebuilt). A write of its own; commits what `conn` had pending first."""
    conn.commit()
    conn.executescript(
        "BEGIN IMMEDIATE;"
        + _VECTOR_LOG
        + "INSERT OR IGNORE INTO meta(key, value) VALUES "
        + f"('{VECTOR_LOG_TOKEN}', '{secrets.token_hex(8)}');COMMIT;"
    )


def _migrate(conn: sqlite3.Connection) -> None:
    """Bring a catalogue made by an older version up to this schema."""
    if add_column(conn, "drawers", "embedding", "BLOB"):
        # Its rows have no vectors yet: search uses Chroma until a sync fills them in.
        has_rows = conn.execute("SELECT 1 FROM drawers LIMIT 1").fetchone() is not None
        conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
            (VECTORS_META, "0" if has_rows else "1"),
        )


def _index_text(text: Any) -> Any:
    return index_text(text) if isinstance(text, str) else text


def _ensure_keyword_index(conn: sqlite3.Connection) -> None:
    """Create the keyword index, or re-index a catalogue whose index splits text another way
    (made before CJK bigrams): once, under a write lock, with a notice on stderr."""
    if _fts_tokens(conn) == FTS_TOKENS:
        for statement in _FTS_STATEMENTS:  # no-ops unless part of it was dropped
            conn.execute(statement)
        return
    conn.commit()
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:  # a read-only palace keeps its old index
        if "readonly" in str(exc).lower():
            return
        raise
    try:
        if _fts_tokens(conn) == FTS_TOKENS:  # another process re-indexed it meanwhile
            conn.commit()
            return
        for trigger in ("drawers_ai", "drawers_ad", "drawers_au"):
            conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        conn.execute("DROP TABLE IF EXISTS drawer_fts")
        for statement in _FTS_STATEMENTS:
            conn.execute(statement)
        count = conn.execute(
            f"INSERT INTO drawer_fts(rowid, text) SELECT rowid, {INDEX_TEXT_FN}(text) FROM drawers"
        ).rowcount
        conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (FTS_META, FTS_TOKENS)
        )
        conn.commit()
    except BaseException:
        conn.rollback()
        raise
    if count > 0:
        notices.warning(
            "Re-indexed %d drawers' keywords so that Chinese, Japanese and Korean words can be "
            "found (a one-time upgrade of this palace's index; nothing to do).",
            count,
        )


def _fts_tokens(conn: sqlite3.Connection) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (FTS_META,)).fetchone()
    return row[0] if row else None


def _blobs(embeddings: Any, n: int) -> list[bytes]:
    if n == 0:
        return []

    matrix = np.asarray(embeddings, dtype=np.float32)
    return [v.tobytes() for v in matrix.reshape(n, -1)]


def _insert_passages(conn: sqlite3.Connection, rowid: int | None, matrix: Any) -> None:
    blobs = _blobs(matrix, len(matrix))
    conn.executemany(
        "INSERT INTO passages(drawer, n, embedding) VALUES (?, ?, ?)",
        [(rowid, n, blob) for n, blob in enumerate(blobs)],
    )


def _row(row: tuple) -> DrawerRow:
    return DrawerRow(
        id=row[0],
        wing=row[1],
        room=row[2],
        source_file=row[3],
        chunk_index=row[4],
        filed_at=row[5],
        text=row[6],
        metadata=json.loads(row[7] or "{}"),
    )


def _file(row: tuple) -> FileRecord:
    return FileRecord(
        source_file=row[0],
        source_root=row[1],
        wing=row[2],
        content_hash=row[3],
        size=row[4],
        mtime=row[5],
        drawer_ids=json.loads(row[6]),
        ingest_mode=row[7],
    )
