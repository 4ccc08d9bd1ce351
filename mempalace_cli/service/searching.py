"""Search: rank drawers for a query by keywords (BM25 over the catalogue), by meaning (the
vector index or Chroma) or both fused (mempalace_cli/search/fusion.py), with wing, room, date
and source filters, and read the hits from one snapshot of the catalogue. A part the `Palace`
facade owns (`palace.searching`); `Palace.search` forwards to it. The benchmarks call its
candidate steps (`search_candidates`, `fuse_candidates`) to compare rankings on the same
candidates.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from importlib import import_module
from typing import Any

from mempalace_cli.common.cjk import has_cjk
from mempalace_cli.common.errors import InvalidInputError
from mempalace_cli.common.lazy import lazy
from mempalace_cli.search import crosslingual, fusion
from mempalace_cli.search import rules as search_rules
from mempalace_cli.search.dates import Period, find_period, resolve_range
from mempalace_cli.service.core import Part
from mempalace_cli.service.names import empty_filter_hint, name_to_read
from mempalace_cli.service.results import Ranking
from mempalace_cli.storage.catalog import translated_share
from mempalace_cli.storage.filters import (
    DrawerFilter,
    dateless_counts_sql,
    dateless_hint,
    drawer_date,
)
from mempalace_cli.storage.passage_vectors import best_similarity, unit_passages
from mempalace_cli.storage.store import where_filter
from mempalace_cli.storage.vector_index import VectorIndex, row_similarities

np = lazy("numpy")

MAX_RESULTS = 100
# A search query longer than this is refused before any work (a 15 MB query took 25 s and
# gigabytes). The model reads 256 tokens and keyword search gains nothing from pages of text.
MAX_QUERY_CHARS = 10_000
MAX_DISTANCE = 2.0  # cosine distance: 0 identical, 1 unrelated, 2 opposite
# How deep each side ranks before fusion (mempalace_cli/search/fusion.py decides the order).
CANDIDATES = 50
# A date or source filter on the vector side: the index's nearest FILTER_POOL x depth drawers
# are tested first, then more, up to FILTER_POOL_MAX (0.1 s at 100,000 drawers); a filter
# that passes fewer ranks its drawers exactly instead (Search._nearest_passing).
FILTER_POOL = 4
FILTER_POOL_MAX = 5000
SEARCH_MODES = ("hybrid", "vector", "lexical")


def _cosine(a: Any, b: Any) -> float:
    a, b = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    return float(a @ b / max(float(np.linalg.norm(a) * np.linalg.norm(b)), 1e-12))


def _unit(vec: Any) -> Any:
    v = np.asarray(vec, dtype=np.float32).reshape(-1)
    return v / max(float(np.linalg.norm(v)), 1e-12)


def similarity(distance: float) -> float:
    """Cosine similarity from cosine distance, as every result reports it."""
    return round(1.0 - distance, 3)


class Search(Part):
    """Ranks drawers for a query (see the module docstring), over the palace's catalogue,
    vector index, drawer store and embedder."""

    _stay_warm = False  # stay_warm(): a long-lived process keeps reusable search state

    # -- search -----------------------------------------------------------------------------
    def search(
        self,
        query: str,
        wing: str | None = None,
        room: str | None = None,
        limit: int = 5,
        mode: str = "hybrid",
        since: str | None = None,
        before: str | None = None,
        source_file: str | None = None,
        max_distance: float | None = None,
        now: str | None = None,
        time_in_query: bool = True,
    ) -> Ranking:
        """Rank drawers for `query`. `hybrid` fuses BM25 and vector scores by each side's
        confidence (mempalace_cli/search/fusion.py);
        `similarity` is always the cosine similarity of the query and the drawer, whatever the
        ranking.

        Filters: `wing`/`room` (names as filed, or as they normalise), `since` (dated on or
        after) and `before` (dated strictly before): a drawer's date is the date of what it
        records (filters.py); ISO dates or relative ones (`last month`, 上个月: dates.py)
        read at `now` (clock.py; default the clock); `source_file` (exact, a path ending or a
        folder) and `max_distance` (drop hits whose cosine distance to the query is larger). A
        filtered search that finds nothing carries `hint`, naming the closest wings or rooms.

        Without since/before, a query that names a time (`time_in_query`: "last month",
        上个月) ranks the candidates dated then first, and says so in `time`."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError("The search query is empty.", hint="Say what to look for.")
        if len(query) > MAX_QUERY_CHARS:
            raise InvalidInputError(
                f"The search query is {len(query):,} characters; at most {MAX_QUERY_CHARS:,} "
                "are searched.",
                hint="Search with the key sentence or a few keywords instead of a whole text.",
            )
        if not 1 <= limit <= MAX_RESULTS:
            raise InvalidInputError(f"The result limit must be 1 to {MAX_RESULTS}, not {limit}.")
        if mode not in SEARCH_MODES:
            raise InvalidInputError(
                f"Unknown search mode {mode!r}.", hint=f"Use one of: {', '.join(SEARCH_MODES)}."
            )
        if max_distance is not None:
            if isinstance(max_distance, bool) or not isinstance(max_distance, int | float):
                raise InvalidInputError(f"max_distance must be a number, not {max_distance!r}.")
            if not 0.0 <= max_distance <= MAX_DISTANCE:
                raise InvalidInputError(
                    f"max_distance must be 0 to {MAX_DISTANCE:g} (cosine distance), "
                    f"not {max_distance}.",
                    hint="0.5 keeps close matches only; 1 drops unrelated ones.",
                )
            if mode == "lexical":
                raise InvalidInputError(
                    "max_distance needs the vector side, which lexical mode skips.",
                    hint="Use mode hybrid or vector, or drop max_distance.",
                )
        since_n, before_n = resolve_range(since, before, now)  # an empty range is refused
        # A question that names a time ("last month", 上个月) ranks the drawers dated then
        # first, when no date filter is given (dates.py; benchmarks/dates_bench.py measured it).
        period = None
        if time_in_query and not (since_n or before_n):
            period = find_period(query, now)
        self.require()
        # Embed the query with the palace's own model (loading it on a cold start) while
        # sync() opens Chroma. The model is resolved here, on this thread.
        self.current_binding()
        embedder = self.embedder
        embedding = _InBackground(embedder.embed_query, query) if mode != "lexical" else None
        # A Chinese query in hybrid mode is also translated (crosslingual.py): the dictionary
        # loads beside the model, on a thread of its own.
        translation = (
            _InBackground(crosslingual.translate, query)
            if mode == "hybrid" and self._bridges(query)
            else None
        )
        try:
            return self._search(
                query,
                wing,
                room,
                limit,
                mode,
                embedding,
                since_n,
                before_n,
                source_file,
                max_distance,
                translation,
                period,
            )
        finally:
            # Never leave the thread running into interpreter exit (an early error, say):
            # onnxruntime loading on a thread the interpreter tears down aborts the process.
            for running in (embedding, translation):
                if running is not None:
                    running.wait()

    def _search(
        self,
        query: str,
        wing: str | None,
        room: str | None,
        limit: int,
        mode: str,
        embedding: _InBackground | None,
        since_n: str | None = None,
        before_n: str | None = None,
        source_file: str | None = None,
        max_distance: float | None = None,
        translation: _InBackground | None = None,
        period: Period | None = None,
    ) -> dict[str, Any]:
        # A catalogue known to mirror the store answers alone: no chromadb import at all.
        # Otherwise it is brought in step first: the only write a search may cause, and only
        # when another writer left the catalogue behind (never on the hot path).
        from_catalog = self.catalog_trusted()
        if not from_catalog:
            self.sync(restamp=True)
        # Everything the search reads of the catalogue reads one snapshot of it (one read
        # transaction, which blocks no writer and writes nothing): the names, both sides'
        # candidates, the fusion and the hits' rows. A drawer another process deletes
        # meanwhile is either wholly there (its text, wing and room) or not a hit at all.
        with self.catalog.snapshot():
            asked = (wing, room)
            wing, room = self._read_names(wing, room)
            filt = DrawerFilter(wing, room, since_n, before_n, source_file or None)
            filters: dict[str, Any] = {"wing": wing, "room": room}
            extra = {"since": since_n, "before": before_n, "source_file": source_file or None}
            filters.update({k: v for k, v in {**extra, "max_distance": max_distance}.items() if v})
            depth = max(CANDIDATES, limit * 3)
            all_distances: dict[str, float] = {}
            # The keyword side runs while the query is embedded (on its thread): neither
            # waits for the other.
            lexical_hits = self.lexical_candidates(
                query, wing, room, depth, mode, filt=filt if filt.beyond_place else None
            )
            query_vec = embedding.result() if embedding is not None else None
            # After a sync the catalogue mirrors the store; a filter beyond wing/room is
            # answered from it (Chroma can't compare dates).
            query_vec, vector_hits = self.vector_candidates(
                query,
                wing,
                room,
                depth,
                mode,
                query_vec,
                catalog_distances=all_distances if from_catalog or filt.beyond_place else None,
                filt=filt if filt.beyond_place else None,
            )
            vector_hits = self._still_filed(vector_hits)
            plan = _Plan(
                query,
                wing,
                room,
                asked,
                limit,
                mode,
                filt,
                filters,
                max_distance,
                from_catalog,
                period,
            )
            return self._rank_and_read(
                plan, query_vec, vector_hits, lexical_hits, all_distances, translation
            )

    def _still_filed(
        self, vector_hits: list[tuple[str, float, str, dict[str, Any]]]
    ) -> list[tuple[str, float, str, dict[str, Any]]]:
        """The vector hits whose drawer is in the catalogue as the caller's snapshot reads it
        (a hit from the store that the snapshot no longer, or not yet, holds is dropped: the
        rest of the search reads that snapshot)."""
        filed = self.catalog.present([h[0] for h in vector_hits]) if vector_hits else set()
        return [h for h in vector_hits if h[0] in filed]

    def _rank_and_read(
        self,
        plan: _Plan,
        query_vec: Any,
        vector_hits: list[tuple[str, float, str, dict[str, Any]]],
        lexical_hits: list[tuple[str, float]],
        all_distances: dict[str, float],
        translation: _InBackground | None,
    ) -> Ranking:
        """Fuse both sides' candidates and read the hits (inside the search's snapshot)."""
        query, wing, room, asked, limit, mode = (
            plan.query,
            plan.wing,
            plan.room,
            plan.asked,
            plan.limit,
            plan.mode,
        )
        filt, filters, max_distance, from_catalog = (
            plan.filt,
            plan.filters,
            plan.max_distance,
            plan.from_catalog,
        )
        # The dictionary bridge scores the candidates' texts only (the same cost at a million
        # drawers as at ten): it re-ranks what the two sides found, it doesn't search.
        # The candidates' texts, read once: the bridge, the fusion and the ranking rules use them.
        read = search_rules.read_candidates(self.catalog, vector_hits, lexical_hits)
        texts, diaries, sources = read.texts, read.diaries, read.sources
        # A chat turn or a file's chunk is also read with the drawers beside it (fusion.py,
        # with_neighbours): the fusion sees both sides' scores lifted by the neighbours'.
        fused_vector, fused_lexical = vector_hits, lexical_hits
        if mode == "hybrid" and query_vec is not None:
            fused_vector, fused_lexical = self._with_neighbours(
                plan, query_vec, vector_hits, lexical_hits, read, all_distances
            )
        translated_hits = {}
        if translation is not None:
            translated_hits = translated_share(translation.result(), texts)
        # One side alone keeps that side's own order (similarity, or BM25): the fusion's
        # script rules are for weighing two sides against each other.
        single = None if mode == "hybrid" else fusion.FusionParams(method="rrf")
        scores = self.fuse_candidates(
            query, fused_vector, fused_lexical, single, translated_hits, texts, sources
        )
        ranked = fusion.order(scores, [(h[0], 1.0 - h[1]) for h in vector_hits], lexical_hits)
        dated: set[str] = set()
        if plan.period is not None:
            ranked, dated = self._dated_first(ranked, plan.period)
        # Own script before bridge-only hits, sources before diaries, copies folded.
        arranged = search_rules.arrange(
            ranked,
            texts,
            query=query,
            query_script=fusion.script_of(query),
            similarity={h[0]: 1.0 - h[1] for h in vector_hits},
            lexical=[i for i, _ in lexical_hits],
            translated=translated_hits,
            diaries=diaries,
            keep=limit if max_distance is None else len(ranked),
        )
        ranked = arranged.ranked
        top = ranked[:limit] if max_distance is None else ranked

        distances = {h[0]: h[1] for h in vector_hits}
        from_store = {h[0]: (h[2], h[3]) for h in vector_hits}
        rows = self.catalog.get(top)
        missing = [i for i in top if i not in distances and query_vec is not None]
        for drawer_id in [i for i in missing if i in all_distances]:
            distances[drawer_id] = all_distances[drawer_id]
        missing = [i for i in missing if i not in distances]
        if missing and from_catalog:  # lexical-only results: their vectors are in the catalogue
            unit = _unit(query_vec)
            distances.update(self.vector_index().exact_distances(unit, missing, column="id"))
            missing = [i for i in missing if i not in distances]
        if missing:
            got = self.store.get(missing, include=["embeddings"])
            for drawer_id, emb in zip(got["ids"], got["embeddings"], strict=True):
                distances[drawer_id] = 1.0 - _cosine(query_vec, emb)
        if max_distance is not None:
            top = [i for i in top if distances.get(i, MAX_DISTANCE) <= max_distance][:limit]

        results = []
        lexical_ids = {i for i, _ in lexical_hits}
        translated_ids = {i for i, share in translated_hits.items() if share > 0}
        query_script = fusion.script_of(query)
        for drawer_id in top:
            row = rows.get(drawer_id)
            if row is not None:
                text, meta = (
                    row.text,
                    {
                        **row.metadata,
                        "wing": row.wing,
                        "room": row.room,
                        "source_file": row.source_file,
                    },
                )
            elif from_store.get(drawer_id, ("", {}))[0]:
                text, meta = from_store[drawer_id]
            else:  # gone (read in the snapshot, so never expected): never a hit without text
                continue
            results.append(
                {
                    "drawer_id": drawer_id,
                    "text": text,
                    "wing": meta.get("wing", ""),
                    "room": meta.get("room", ""),
                    "source_file": meta.get("source_file", ""),
                    # The score that sets the order (weighted RRF), beside the similarity.
                    "rank_score": round(scores[drawer_id], 6),
                    "similarity": similarity(distances[drawer_id])
                    if drawer_id in distances
                    else None,
                    "line_start": meta.get("line_start"),
                    "line_end": meta.get("line_end"),
                    # The date of what it records (filters.py), as the date filters read it.
                    "date": drawer_date(meta, row.filed_at if row is not None else None),
                    "matched_by": [
                        side
                        for side, hit in (
                            ("vector", drawer_id in from_store),
                            ("lexical", drawer_id in lexical_ids),
                            # the bridge counts only across scripts (fusion.py)
                            (
                                "translated",
                                drawer_id in translated_ids
                                and fusion.script_of(text) != query_script,
                            ),
                        )
                        if hit
                    ],
                    "metadata": meta,
                }
            )
        search_rules.mark_copies(results, arranged.copies)
        found: dict[str, Any] = {
            "query": query,
            "filters": filters,
            "mode": mode,
            "results": results,
        }
        if not results and (wing or room or filt.beyond_place or max_distance is not None):
            places = self.known_places()
            found["hint"] = empty_filter_hint(
                wing,
                room,
                places,
                places,
                filt.beyond_place or max_distance is not None,
                asked,
            )
        if plan.period is not None:
            found["time"] = {
                "named": plan.period.text,
                "since": plan.period.since,
                "before": plan.period.before,
                "ranked_first": sum(1 for r in results if r["drawer_id"] in dated),
            }
        if filt.by_date:
            self._say_dateless(found, filt)
        return found

    def _with_neighbours(
        self,
        plan: _Plan,
        query_vec: Any,
        vector_hits: list[tuple[str, float, str, dict[str, Any]]],
        lexical_hits: list[tuple[str, float]],
        read: search_rules.Candidates,
        distances: dict[str, float],
    ) -> tuple[list[tuple[str, float, str, dict[str, Any]]], list[tuple[str, float]]]:
        """Both sides' candidates as the fusion reads them when the palace's fusion reads a
        drawer with its neighbours (`neighbour_weight`; fusion.with_neighbours): the drawers
        within `neighbour_reach` chunks of each side's first candidates, in the same source
        file and within the search's filters, join the candidates (their texts and sources
        added to `read`, their cosine distances to `distances`), and every candidate's scores
        are lifted by its neighbours'. Only the parts of a conversation (`read.parts`:
        `mine --mode convos`, the session hook) are read this way: a turn means what the turns
        around it say, while a note's sections stand on their own (a note whose other parts
        also answer gains through the sibling lift instead). Every other drawer ranks as
        before."""
        params = fusion.for_model(self.binding().model)
        weight, reach = params.neighbour_weight, params.neighbour_reach
        if not weight or not (vector_hits or lexical_hits):
            return vector_hits, lexical_hits
        similarity = {h[0]: 1.0 - h[1] for h in vector_hits}
        vector = list(similarity.items())
        place = dict(read.parts)
        seeds = [d for d in fusion.neighbour_seeds(vector, lexical_hits) if d in place]
        if not seeds:
            return vector_hits, lexical_hits
        for drawer_id in place:
            if drawer_id not in similarity and drawer_id in distances:
                similarity[drawer_id] = 1.0 - distances[drawer_id]
        # One catalogue read: each seed's span (reach chunks either side: the seed and the
        # other chunk numbers), and the other candidates whose cosine the vector side did not
        # give (a span of one chunk: that drawer alone).
        spans = [
            (place[d][0], place[d][1] - reach, place[d][1] + reach, place[d][1], d) for d in seeds
        ]
        seeded = set(seeds)
        spans += [
            (source, chunk, chunk, chunk, d)
            for d, (source, chunk) in place.items()
            if d not in similarity and d not in seeded
        ]
        where, values = plan.filt.sql("d.")
        rows = self.catalog.conn.execute(  # one index lookup per span (no DISTINCT: 2.5x slower)
            f"WITH k(s, lo, hi, own, id) AS (VALUES {','.join(['(?, ?, ?, ?, ?)'] * len(spans))}) "
            "SELECT d.id, d.source_file, d.chunk_index, d.text, d.rowid, d.embedding "
            "FROM k CROSS JOIN drawers d "
            "ON d.source_file = k.s AND d.chunk_index BETWEEN k.lo AND k.hi "
            f"WHERE (d.chunk_index != k.own OR d.id = k.id) AND {where}",
            [v for span in spans for v in span] + values,
        ).fetchall()
        vectors: dict[str, tuple[int, bytes]] = {}
        for drawer_id, source, chunk, text, rowid, embedding in rows:
            if drawer_id not in place:
                place[drawer_id] = (source, chunk)
                read.texts.setdefault(drawer_id, text)
                read.sources.setdefault(drawer_id, source)
            if drawer_id not in similarity and drawer_id in distances:
                similarity[drawer_id] = 1.0 - distances[drawer_id]
            elif drawer_id not in similarity and embedding is not None:
                vectors[drawer_id] = (rowid, embedding)
        # Exact cosines of the keyword candidates and added neighbours the vector side didn't
        # return, from the vectors just read (the store's where the catalogue has none).
        unit = _unit(query_vec)
        got: list[tuple[str, float]] = []
        if vectors:
            sims = row_similarities(self.catalog.conn, list(vectors.values()), unit)
            got += [(d, 1.0 - s) for d, s in zip(vectors, sims.tolist(), strict=True)]
        unknown = [d for d in place if d not in similarity and d not in vectors]
        if unknown:
            stored = self.store.get(unknown, include=["embeddings"])
            got += [
                (i, 1.0 - _cosine(unit, e))
                for i, e in zip(stored["ids"], stored["embeddings"], strict=True)
            ]
        for drawer_id, distance in got:
            distances[drawer_id] = distance
            similarity[drawer_id] = 1.0 - distance
        at = {spot: drawer_id for drawer_id, spot in place.items()}
        steps = [n for n in range(-reach, reach + 1) if n]
        beside = {
            d: [at[(source, chunk + n)] for n in steps if (source, chunk + n) in at]
            for d, (source, chunk) in place.items()
        }
        vec, lex = fusion.with_neighbours(vector, lexical_hits, beside, similarity, weight)
        return [(d, 1.0 - c, "", {}) for d, c in vec], lex

    def _dated_first(self, ranked: list[str], period: Period) -> tuple[list[str], set[str]]:
        """`ranked` with the drawers dated in `period` first, each part in its own order
        (the date test is the filters' own, filters.py)."""
        where, params = DrawerFilter(since=period.since, before=period.before).sql()
        dated: set[str] = set()
        for start in range(0, len(ranked), 500):
            part = ranked[start : start + 500]
            marks = ",".join("?" * len(part))
            dated.update(
                r[0]
                for r in self.catalog.conn.execute(
                    f"SELECT id FROM drawers WHERE id IN ({marks}) AND {where}", [*part, *params]
                )
            )
        return [i for i in ranked if i in dated] + [i for i in ranked if i not in dated], dated

    def _say_dateless(self, found: dict[str, Any], filt: DrawerFilter) -> None:
        """A date filter can't place drawers without a date: say how many it left out (and
        how many carry only an older version's file-time date), in `hint`."""
        sql, params = dateless_counts_sql(filt)
        # Two partial indexes hold exactly these drawers: the count reads only them.
        undated, older = self.catalog.conn.execute(sql, params).fetchone()
        said = dateless_hint(undated, older)
        if undated:
            found["undated_left_out"] = undated
        if said:
            found["hint"] = f"{found['hint']} {said}" if found.get("hint") else said

    def _read_names(self, wing: str | None, room: str | None) -> tuple[str | None, str | None]:
        """Wing and room filters under the one name rule (see service/names.py)."""
        if wing is None and room is None:
            return None, None
        places = self.known_places()
        rooms = {r for v in places.values() for r in v}
        return name_to_read(wing, places, "wing"), name_to_read(room, rooms, "room")

    def fuse_candidates(
        self,
        query: str,
        vector_hits: list[tuple[str, float, str, dict[str, Any]]],
        lexical_hits: list[tuple[str, float]],
        params: fusion.FusionParams | None = None,
        translated: dict[str, float] | None = None,
        texts: dict[str, str] | None = None,
        sources: dict[str, str] | None = None,
    ) -> dict[str, float]:
        """Each candidate's rank score (higher first) from both sides, each side weighed by its
        confidence and by whether a candidate is written in the query's script (fusion.py);
        `translated` is the dictionary bridge's side (catalog.translated_share); `texts`, the
        candidates' texts if the caller has read them already (`candidate_texts`); `sources`,
        their source files (a drawer whose file's other parts score too gains: with_siblings).
        Without `params`, the fusion chosen for the palace's model."""
        if params is None:
            params = fusion.for_model(self.binding().model)
        scripts: dict[str, str] = {}
        if params.reads_scripts:  # rank fusion within one script needs no candidate texts
            if texts is None:
                texts = self.candidate_texts(vector_hits, lexical_hits)
            scripts = {i: fusion.script_of(t) for i, t in texts.items()}
        scores = fusion.fuse_scores(
            [(h[0], 1.0 - h[1]) for h in vector_hits],
            lexical_hits,
            fusion.script_of(query),
            scripts,
            params,
            (lambda: self.catalog.query_weight(query)) if lexical_hits else 0.0,
            translated or {},
        )
        if sources and params.sibling_weight:
            scores = fusion.with_siblings(scores, sources, params.sibling_weight)
        return scores

    def _bridges(self, query: str) -> bool:
        """Whether a search for `query` reads the dictionary bridge: a CJK query, in a palace
        whose model's fusion gives the translated side a weight."""
        return has_cjk(query) and fusion.for_model(self.binding().model).translated_weight > 0

    def candidate_texts(
        self,
        vector_hits: list[tuple[str, float, str, dict[str, Any]]],
        lexical_hits: list[tuple[str, float]],
    ) -> dict[str, str]:
        """Each candidate's text (id -> text): from the catalogue, else as the store returned
        it with the vector hit."""
        ids = list(dict.fromkeys([h[0] for h in vector_hits] + [i for i, _ in lexical_hits]))
        texts = {i: r.text for i, r in self.catalog.get(ids).items()}
        texts.update({h[0]: h[2] for h in vector_hits if h[0] not in texts})
        return texts

    def _embed_query(self, query: str) -> Any:
        return self.embedder.embed_query(query)

    def search_candidates(
        self,
        query: str,
        wing: str | None,
        room: str | None,
        depth: int,
        mode: str = "hybrid",
        query_vec: Any = None,
        catalog_distances: dict[str, float] | None = None,
        filt: DrawerFilter | None = None,
    ) -> tuple[Any, list[tuple[str, float, str, dict[str, Any]]], list[tuple[str, float]]]:
        """Both sides' ranked candidates, unfused: (query vector, vector hits, lexical hits).
        The benchmarks use this to compare fusion methods on the same candidates.

        With `catalog_distances` (a dict to fill: every filtered drawer's distance), the vector
        side is an exact cosine ranking over the catalogue's vectors instead of a Chroma query;
        the caller has checked that the catalogue is in step (`catalog_trusted`)."""
        query_vec, vector_hits = self.vector_candidates(
            query, wing, room, depth, mode, query_vec, catalog_distances, filt
        )
        lexical_hits = self.lexical_candidates(query, wing, room, depth, mode, filt)
        return query_vec, vector_hits, lexical_hits

    def vector_candidates(
        self,
        query: str,
        wing: str | None,
        room: str | None,
        depth: int,
        mode: str = "hybrid",
        query_vec: Any = None,
        catalog_distances: dict[str, float] | None = None,
        filt: DrawerFilter | None = None,
    ) -> tuple[Any, list[tuple[str, float, str, dict[str, Any]]]]:
        """The vector side of `search_candidates`: (query vector, hits), none in lexical mode.
        A hit from the catalogue or its vector index carries no text ("", {}); one from Chroma
        carries the drawer's document and metadata."""
        if query_vec is None and mode != "lexical":
            query_vec = self._embed_query(query)
        hits: list[tuple[str, float, str, dict[str, Any]]] | None = None
        if query_vec is not None and catalog_distances is not None:
            # None: a row without its vector; Chroma answers (no repair here: a search's
            # reads may be inside a snapshot, and the caller synced before).
            hits = self._catalog_vector_hits(query_vec, depth, wing, room, catalog_distances, filt)
        if query_vec is not None and hits is None:
            if filt is None:
                hits = self.store.query(query_vec, depth, where_filter(wing, room))
            else:  # rare: vectors not mirrored yet; rank the filtered drawers from Chroma
                allowed = {r.id for r in self.catalog.iter_drawers(filt=filt)}
                wide = self.store.query(
                    query_vec, max(depth, len(allowed)), where_filter(wing, room)
                )
                hits = [h for h in wide if h[0] in allowed][:depth]
        return query_vec, hits or []

    def lexical_candidates(
        self,
        query: str,
        wing: str | None,
        room: str | None,
        depth: int,
        mode: str = "hybrid",
        filt: DrawerFilter | None = None,
    ) -> list[tuple[str, float]]:
        """The keyword side of `search_candidates` (BM25 over the catalogue); none in vector
        mode."""
        if mode == "vector":
            return []
        return self.catalog.lexical_search(query, depth, wing, room, filt=filt)

    def _catalog_vector_hits(
        self,
        query_vec: Any,
        depth: int,
        wing: str | None,
        room: str | None,
        distances: dict[str, float],
        filt: DrawerFilter | None = None,
    ) -> list[tuple[str, float, str, dict[str, Any]]] | None:
        """The `depth` nearest drawers by cosine distance (as Chroma's cosine space measures
        it) over the catalogue's vectors; fills `distances` for those (every filtered drawer on
        the in-memory fallback). None if a filtered drawer has no vector in the catalogue."""
        # The on-disk index (vector_index.py) answers with memory and time that do not grow
        # with the palace; None where it can't be used (e.g. a read-only palace). Date and
        # source filters (`filt`) are not in the index: its nearest drawers are filtered
        # (`_nearest_passing`); only a filter too narrow for that reads the filtered rows'
        # vectors, exactly (a scan of every drawer: 1 s or more at 100,000).
        narrow = filt is not None and filt.beyond_place
        # Read as it is (upkeep=False): writers keep it up to date, a search never writes it.
        index = self.vector_index()
        if narrow:
            assert filt is not None
            nearest = self._nearest_passing(index, query_vec, depth, wing, room, filt)
        else:
            nearest = index.nearest(query_vec, depth, wing, room, False)
        if nearest is not None:
            distances.update(nearest)
            return [(i, d, "", {}) for i, d in nearest]
        return self._catalog_vector_hits_in_memory(query_vec, depth, wing, room, distances, filt)

    def _nearest_passing(
        self,
        index: VectorIndex,
        query_vec: Any,
        depth: int,
        wing: str | None,
        room: str | None,
        filt: DrawerFilter,
    ) -> list[tuple[str, float]] | None:
        """The `depth` nearest drawers in wing/room that pass `filt` (a date or source filter),
        from the index: its nearest drawers, the filter tested on those only, the pool widened
        (by the share that passed) until `depth` pass or the index has no more. Any drawer that
        passes and is left out is farther than every one kept: the ranking is the index's, as
        without a filter. None when the index can't be used or the filter is so narrow that
        more than FILTER_POOL_MAX drawers would be needed: the caller ranks exactly."""
        want = depth * FILTER_POOL
        where, params = filt.sql()
        while True:
            nearest = index.nearest(query_vec, want, wing, room, False)
            if nearest is None:
                return None
            passing = set()
            for start in range(0, len(nearest), 500):
                part = [i for i, _ in nearest[start : start + 500]]
                marks = ",".join("?" * len(part))
                passing.update(
                    r[0]
                    for r in self.catalog.conn.execute(
                        f"SELECT id FROM drawers WHERE id IN ({marks}) AND {where}",
                        [*part, *params],
                    )
                )
            kept = [(i, d) for i, d in nearest if i in passing]
            if len(kept) >= depth or len(nearest) < want:  # enough, or all there is
                return kept[:depth]
            if want >= FILTER_POOL_MAX:
                return None
            share = max(len(kept), 1) / len(nearest)
            want = min(FILTER_POOL_MAX, max(want * 4, int(depth / share * 1.5)))

    def stay_warm(self) -> None:
        """For a long-lived process (the MCP server): keep what repeated searches reuse in
        memory, read on first use and kept true across writes by any process: the vector
        index's codes (vector_index.py; dim + dim/8 bytes a drawer) and, in a big palace,
        common words' postings (term_postings.py; at most ~160 MB)."""
        self._stay_warm = True
        self.catalog.keep_postings()
        index = getattr(self, "_vector_index", None)
        if index is not None:
            index.keep_codes()

    def vector_index(self) -> VectorIndex:
        """The palace's vector index, bound to the current catalogue connection."""
        index = getattr(self, "_vector_index", None)
        if index is None or index.conn is not self.catalog.conn:
            index = self._vector_index = VectorIndex(self.index_dir, self.catalog.conn)
            if self._stay_warm:
                index.keep_codes()
        return index

    def _catalog_vector_hits_in_memory(
        self,
        query_vec: Any,
        depth: int,
        wing: str | None,
        room: str | None,
        distances: dict[str, float],
        filt: DrawerFilter | None = None,
    ) -> list[tuple[str, float, str, dict[str, Any]]] | None:
        """Exact cosine over every filtered catalogue vector, read into memory."""
        # A long-lived process (MCP server, benchmarks) keeps the last matrix read, normalised,
        # for as long as the palace generation (bumped by every write) stays the same. The
        # generation is read first: a write landing in between only makes the cache reload.
        key = (self.catalog.generation(), wing, room, filt)
        cached = getattr(self, "_vector_cache", None)
        if cached is not None and cached[0] == key:
            ids, unit, passages = cached[1], cached[2], cached[3]
        else:
            ids, matrix = self.catalog.vectors(wing, room, filt=filt)
            if matrix is None:
                return None
            if not ids:
                return []
            norms = np.linalg.norm(matrix, axis=1, keepdims=True)
            unit = matrix / np.maximum(norms, 1e-12)
            # A long drawer scores as its closest passage when closer (passage_vectors.py).
            passages = unit_passages(self.catalog, ids, wing, room, filt)
            self._vector_cache = (key, ids, unit, passages)
        if not ids:
            return []
        q = np.asarray(query_vec, dtype=np.float32)
        if unit.shape[1] != q.shape[0]:  # vectors of another model: a reembed just switched
            return None
        q = q / max(float(np.linalg.norm(q)), 1e-12)
        sims = unit @ q
        if passages is not None and passages[1].shape[1] == q.shape[0]:
            sims = best_similarity(sims, passages[0], passages[1] @ q)
        dist = 1.0 - sims
        distances.update(zip(ids, dist.tolist(), strict=True))
        order = np.argsort(dist, kind="stable")[:depth]
        return [(ids[i], float(dist[i]), "", {}) for i in order.tolist()]


@dataclass(frozen=True)
class _Plan:
    """One search, as `_search` resolved it (names read, filters built)."""

    query: str
    wing: str | None
    room: str | None
    asked: tuple[str | None, str | None]  # wing and room as given, for hints
    limit: int
    mode: str
    filt: DrawerFilter
    filters: dict[str, Any]
    max_distance: float | None
    from_catalog: bool
    period: Period | None = None  # a time the query names: drawers dated then rank first


class _InBackground:
    """Run one call on a thread; `result()` joins it and re-raises what it raised."""

    def __init__(self, fn: Any, *args: Any) -> None:
        # numpy breaks when two threads import it at once (chromadb here, onnxruntime there):
        # import it on this thread first.
        import_module("numpy")

        self._value: Any = None
        self._error: BaseException | None = None
        # Not a daemon: the interpreter joins it at exit instead of tearing it down mid-load.
        self._thread = threading.Thread(target=self._run, args=(fn, args), daemon=False)
        self._thread.start()

    def _run(self, fn: Any, args: tuple[Any, ...]) -> None:
        try:
            self._value = fn(*args)
        except BaseException as exc:  # handed to the caller in result()
            self._error = exc

    def wait(self) -> None:
        """Join the thread, whatever it did (its result or error is kept for `result`)."""
        self._thread.join()

    def result(self) -> Any:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value
