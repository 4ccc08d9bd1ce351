"""Reading and filing drawers: status, search (hybrid lexical + vector), add, delete, dedupe."""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from typing import Any

from mempalace_cli.common.cjk import has_cjk
from mempalace_cli.common.errors import InvalidInputError, NotFoundError
from mempalace_cli.common.textsafe import clean_text
from mempalace_cli.miners.dates import filed_date
from mempalace_cli.search import crosslingual, fusion
from mempalace_cli.search import rules as search_rules
from mempalace_cli.search.dates import Period, find_period, resolve_range
from mempalace_cli.search.sameness import says_the_same
from mempalace_cli.service.core import PalaceCore, now_iso
from mempalace_cli.service.names import empty_filter_hint, name_to_file, name_to_read
from mempalace_cli.storage.catalog import DrawerRow, translated_share
from mempalace_cli.storage.drawer_ids import candidate_ids, filed_under
from mempalace_cli.storage.drawer_ids import drawer_id as hand_filed_id
from mempalace_cli.storage.filters import (
    DrawerFilter,
    dateless_counts_sql,
    dateless_hint,
    drawer_date,
)
from mempalace_cli.storage.store import where_filter
from mempalace_cli.storage.vector_index import VectorIndex

MAX_RESULTS = 100
MAX_DRAWER_CHARS = 100_000
# A search query longer than this is refused before any work (a 15 MB query took 25 s and
# gigabytes). The model reads 256 tokens and keyword search gains nothing from pages of text.
MAX_QUERY_CHARS = 10_000
MAX_DISTANCE = 2.0  # cosine distance: 0 identical, 1 unrelated, 2 opposite
DUPLICATE_THRESHOLD = 0.9
# How deep each side ranks before fusion (mempalace_cli/search/fusion.py decides the order).
CANDIDATES = 50
SEARCH_MODES = ("hybrid", "vector", "lexical")


def _cosine(a: Any, b: Any) -> float:
    import numpy as np

    a, b = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    return float(a @ b / max(float(np.linalg.norm(a) * np.linalg.norm(b)), 1e-12))


def _unit(vec: Any) -> Any:
    import numpy as np

    v = np.asarray(vec, dtype=np.float32).reshape(-1)
    return v / max(float(np.linalg.norm(v)), 1e-12)


def _similarity(distance: float) -> float:
    return round(1.0 - distance, 3)


class DrawerOps(PalaceCore):
    _stay_warm = False  # stay_warm(): a long-lived process keeps reusable search state

    # -- overview ---------------------------------------------------------------------------
    def status(self, verify: bool = False) -> dict[str, Any]:
        """Counts per wing and room, from the catalogue once it is in step with Chroma. With
        `verify`, every drawer in Chroma is first compared with the catalogue by content (the
        full check behind `status --verify`) and any difference repaired from Chroma."""
        self.require()
        verified: dict[str, Any] | None = None
        if verify:
            self.refresh()
            checked, repair = self.consistency.verify()
            if repair is not None:
                self.store.mark_fresh(self.catalog.generation())
            verified = {
                "drawers_checked": checked,
                "all_matched": repair is None,
                "repair": repair.to_dict() if repair is not None else None,
            }
        self.sync()
        wings: dict[str, int] = {}
        rooms: dict[str, int] = {}
        taxonomy: dict[str, dict[str, int]] = {}
        for wing, room, n in self.catalog.counts_by_wing_room():
            wings[wing] = wings.get(wing, 0) + n
            rooms[room] = rooms.get(room, 0) + n
            taxonomy.setdefault(wing, {})[room] = n
        return {
            "palace_path": str(self.path),
            "store": self.store.location,
            "total_drawers": sum(wings.values()),
            # Queries are embedded with it; all-MiniLM-L6-v2 is English-only.
            "embedding_model": self.current_binding().model,
            "wings": wings,
            "rooms": rooms,
            "taxonomy": taxonomy,
            # Chroma is the truth; what the index mirrors, and its last repair from Chroma.
            "consistency": self.consistency.report(),
        } | ({"verified": verified} if verified is not None else {})

    def list_wings(self) -> dict[str, Any]:
        return {"wings": self.status()["wings"]}

    def list_rooms(self, wing: str | None = None) -> dict[str, Any]:
        status = self.status()
        taxonomy = status["taxonomy"]
        asked = wing
        wing = name_to_read(wing, taxonomy, "wing")
        if wing is None:
            return {"wing": None, "rooms": status["rooms"]}
        result: dict[str, Any] = {"wing": wing, "rooms": taxonomy.get(wing, {})}
        if not result["rooms"]:
            result["hint"] = empty_filter_hint(wing, None, taxonomy, taxonomy, asked=(asked, None))
        return result

    def known_places(self) -> dict[str, list[str]]:
        """wing -> its rooms, from the catalogue (for name resolution and hints)."""
        places: dict[str, list[str]] = {}
        for wing, room, _n in self.catalog.counts_by_wing_room():
            places.setdefault(wing, []).append(room)
        return places

    def get_taxonomy(self) -> dict[str, Any]:
        return {"taxonomy": self.status()["taxonomy"]}

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
    ) -> dict[str, Any]:
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
        from_catalog = self.catalog_trusted()
        if not from_catalog:
            self.sync(restamp=True)
        asked = (wing, room)
        wing, room = self._read_names(wing, room)
        filt = DrawerFilter(wing, room, since_n, before_n, source_file or None)
        filters: dict[str, Any] = {"wing": wing, "room": room}
        extra = {"since": since_n, "before": before_n, "source_file": source_file or None}
        filters.update({k: v for k, v in {**extra, "max_distance": max_distance}.items() if v})
        depth = max(CANDIDATES, limit * 3)
        query_vec = embedding.result() if embedding is not None else None
        all_distances: dict[str, float] = {}
        # After a sync the catalogue mirrors the store; a filter beyond wing/room is answered
        # from it (Chroma can't compare dates).
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
        # Everything after the vector side reads one snapshot of the catalogue: the keyword
        # side, fusion and the hits' text. A drawer another process deletes meanwhile is
        # either wholly there (its text, wing and room) or not a hit at all.
        with self.catalog.snapshot():
            vector_hits = self._still_filed(vector_hits)
            lexical_hits = self.lexical_candidates(
                query, wing, room, depth, mode, filt=filt if filt.beyond_place else None
            )
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
        """The vector hits whose drawer is still in the catalogue (read in the caller's
        snapshot), or that came from the store with their own text and metadata."""
        bare = [h[0] for h in vector_hits if not h[2]]
        filed = self.catalog.present(bare) if bare else set()
        return [h for h in vector_hits if h[2] or h[0] in filed]

    def _rank_and_read(
        self,
        plan: _Plan,
        query_vec: Any,
        vector_hits: list[tuple[str, float, str, dict[str, Any]]],
        lexical_hits: list[tuple[str, float]],
        all_distances: dict[str, float],
        translation: _InBackground | None,
    ) -> dict[str, Any]:
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
        texts, diaries = search_rules.read_candidates(self.catalog, vector_hits, lexical_hits)
        translated_hits = {}
        if translation is not None:
            translated_hits = translated_share(translation.result(), texts)
        # One side alone keeps that side's own order (similarity, or BM25): the fusion's
        # script rules are for weighing two sides against each other.
        single = None if mode == "hybrid" else fusion.FusionParams(method="rrf")
        scores = self.fuse_candidates(
            query, vector_hits, lexical_hits, single, translated_hits, texts
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
                    "similarity": _similarity(distances[drawer_id])
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
    ) -> dict[str, float]:
        """Each candidate's rank score (higher first) from both sides, each side weighed by its
        confidence and by whether a candidate is written in the query's script (fusion.py);
        `translated` is the dictionary bridge's side (catalog.translated_share); `texts`, the
        candidates' texts if the caller has read them already (`candidate_texts`).
        Without `params`, the fusion chosen for the palace's model."""
        if params is None:
            params = fusion.for_model(self.binding().model)
        scripts: dict[str, str] = {}
        if params.reads_scripts:  # rank fusion within one script needs no candidate texts
            if texts is None:
                texts = self.candidate_texts(vector_hits, lexical_hits)
            scripts = {i: fusion.script_of(t) for i, t in texts.items()}
        return fusion.fuse_scores(
            [(h[0], 1.0 - h[1]) for h in vector_hits],
            lexical_hits,
            fusion.script_of(query),
            scripts,
            params,
            (lambda: self.catalog.query_weight(query)) if lexical_hits else 0.0,
            translated or {},
        )

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
            hits = self._catalog_vector_hits(query_vec, depth, wing, room, catalog_distances, filt)
            if hits is None:  # a row without its vector: Chroma answers, after a sync
                self.sync(restamp=True)
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
        # with the palace; it is None where it can't be used (e.g. a read-only palace).
        # Date and source filters (`filt`) are not in the index: those searches read the
        # filtered rows' vectors, exactly, as before.
        narrow = filt is not None and filt.beyond_place
        nearest = None if narrow else self.vector_index().nearest(query_vec, depth, wing, room)
        if nearest is not None:
            distances.update(nearest)
            return [(i, d, "", {}) for i, d in nearest]
        return self._catalog_vector_hits_in_memory(query_vec, depth, wing, room, distances, filt)

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
        import numpy as np

        # A long-lived process (MCP server, benchmarks) keeps the last matrix read, normalised,
        # for as long as the palace generation (bumped by every write) stays the same. The
        # generation is read first: a write landing in between only makes the cache reload.
        key = (self.catalog.generation(), wing, room, filt)
        cached = getattr(self, "_vector_cache", None)
        if cached is not None and cached[0] == key:
            ids, unit = cached[1], cached[2]
        else:
            ids, matrix = self.catalog.vectors(wing, room, filt=filt)
            if matrix is None:
                return None
            if not ids:
                return []
            norms = np.linalg.norm(matrix, axis=1, keepdims=True)
            unit = matrix / np.maximum(norms, 1e-12)
            self._vector_cache = (key, ids, unit)
        if not ids:
            return []
        q = np.asarray(query_vec, dtype=np.float32)
        if unit.shape[1] != q.shape[0]:  # vectors of another model: a reembed just switched
            return None
        q = q / max(float(np.linalg.norm(q)), 1e-12)
        dist = 1.0 - unit @ q
        distances.update(zip(ids, dist.tolist(), strict=True))
        order = np.argsort(dist, kind="stable")[:depth]
        return [(ids[i], float(dist[i]), "", {}) for i in order.tolist()]

    # -- single drawers ---------------------------------------------------------------------
    def get_drawer(self, drawer_id: str) -> dict[str, Any]:
        self.require()
        self.sync()
        row = self.catalog.get([drawer_id]).get(drawer_id)
        if row is None:
            raise NotFoundError(
                f"No drawer with id {drawer_id!r}.",
                hint="Drawer ids come from search results (drawer_id).",
            )
        return {
            "drawer_id": row.id,
            "text": row.text,
            "wing": row.wing,
            "room": row.room,
            "source_file": row.source_file,
            "filed_at": row.filed_at,
            "metadata": row.metadata,
        }

    def check_duplicate(self, content: str, threshold: float = DUPLICATE_THRESHOLD) -> dict:
        _check_content(content)
        if not 0.0 < threshold <= 1.0:
            raise InvalidInputError(f"threshold must be in (0, 1], not {threshold}.")
        if not self.exists():
            return {"is_duplicate": False, "matches": [], "similar": []}
        self.sync()
        vec = self.embedder.embed([content])[0]
        matches, similar = self.near_duplicates(vec, content, threshold)
        return {"is_duplicate": bool(matches), "matches": matches, "similar": similar}

    def near_duplicates(
        self,
        vec: Any,
        content: str,
        threshold: float = DUPLICATE_THRESHOLD,
        exclude: str | None = None,
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The drawers nearest to `vec` (but `exclude`), split in two: duplicates say the same
        words as `content` (a write is refused), similar ones are at least `threshold` close
        with other words (perhaps an older version of the same fact: the write goes ahead).
        See sameness.py: similarity alone can't tell the two apart."""
        duplicates: list[dict[str, Any]] = []
        similar: list[dict[str, Any]] = []
        for i, d, doc, m in self.store.query(vec, 6, None):
            if i == exclude:
                continue
            entry = {
                "drawer_id": i,
                "similarity": _similarity(d),
                "wing": m.get("wing"),
                "room": m.get("room"),
                "text": doc[:300],
            }
            if says_the_same(content, doc or ""):
                duplicates.append(entry)
            elif 1.0 - d >= threshold:
                similar.append(entry)
        return duplicates[:5], similar[:5]

    def add_drawer(
        self,
        wing: str,
        room: str,
        content: str,
        source_file: str | None = None,
        added_by: str = "mcp",
        metadata: dict[str, Any] | None = None,
        check_duplicates: bool = True,
    ) -> dict[str, Any]:
        """File one drawer by hand. Identical content in the same place is idempotent; content
        that says the same words as a close drawer anywhere is refused as a duplicate (see
        sameness.py); a close drawer with other words is returned as `similar`."""
        _check_content(content)
        wing_n, room_n = name_to_file(wing, "wing"), name_to_file(room, "room")
        # Secrets never enter the palace (miners/secrets.py): redacted, and counted.
        from mempalace_cli.miners.secrets import redact_for_drawer

        content, source_file, secrets = redact_for_drawer(clean_text(content), source_file)
        digest = hashlib.sha256(content.encode("utf-8")).hexdigest()
        drawer_id = hand_filed_id(wing_n, room_n, digest)
        self.create()
        self.sync()
        stored = self.catalog.get(candidate_ids(wing_n, room_n, digest))
        already = filed_under(stored, wing_n, room_n, digest, content)
        if already:
            return {"success": True, "drawer_id": already, "already_stored": True} | secrets
        vec = self.embedder.embed([content])
        similar: list[dict[str, Any]] = []
        if check_duplicates:
            matches, similar = self.near_duplicates(vec[0], content)
            if matches:
                return {"success": False, "reason": "duplicate", "matches": matches} | secrets
        meta: dict[str, Any] = dict(metadata or {})
        meta.update(
            added_by=added_by, content_hash=digest, ingest_mode=meta.get("ingest_mode", "manual")
        )
        filed = now_iso()
        meta.update(filed_date(meta, filed))  # what search --since/--before compare
        row = DrawerRow(drawer_id, wing_n, room_n, source_file or "", None, filed, content, meta)
        with self.lock.hold():
            self._file_drawers([row], vec)
        done = {"success": True, "drawer_id": drawer_id, "wing": wing_n, "room": room_n}
        return done | ({"similar": similar} if similar else {}) | secrets

    def add_drawers(self, drawers: list[dict[str, Any]], added_by: str = "mcp") -> dict[str, Any]:
        """File many drawers at once: one embedding pass, one lock hold, no duplicate check.

        Each item is {wing, room, content, source_file?, metadata?}. Ids are derived exactly as
        `add_drawer` derives them, so identical content in the same place is stored once."""
        rows: dict[str, DrawerRow] = {}
        ids: list[str] = []
        digests: dict[str, tuple[str, str, str]] = {}
        stamp = now_iso()
        from mempalace_cli.miners.secrets import redact_for_drawer

        redacted = 0  # secrets replaced by [REDACTED:kind]
        for n, item in enumerate(drawers):
            wing, room = item.get("wing"), item.get("room")
            try:
                text = _check_content(item.get("content"))
            except InvalidInputError as exc:
                raise InvalidInputError(f"Drawer {n}: {exc.message}", hint=exc.hint) from exc
            try:
                wing_n, room_n = name_to_file(wing, "wing"), name_to_file(room, "room")
            except InvalidInputError as exc:
                raise InvalidInputError(f"Drawer {n}: {exc.message}", hint=exc.hint) from exc
            content, source, secrets = redact_for_drawer(clean_text(text), item.get("source_file"))
            redacted += secrets["secrets_redacted"]
            digest = hashlib.sha256(content.encode("utf-8")).hexdigest()
            drawer_id = hand_filed_id(wing_n, room_n, digest)
            ids.append(drawer_id)
            digests[drawer_id] = (wing_n, room_n, digest)
            meta: dict[str, Any] = dict(item.get("metadata") or {})
            meta.update(
                added_by=added_by,
                content_hash=digest,
                ingest_mode=meta.get("ingest_mode", "manual"),
            )
            try:
                meta.update(filed_date(meta, stamp))  # its own `date`, else its filing
            except InvalidInputError as exc:
                raise InvalidInputError(f"Drawer {n}: {exc.message}", hint=exc.hint) from exc
            rows.setdefault(
                drawer_id,
                DrawerRow(
                    drawer_id,
                    wing_n,
                    room_n,
                    source or "",
                    None,
                    stamp,
                    content,
                    meta,
                ),
            )
        self.create()
        self.sync()
        stored = self.catalog.get([c for i in rows for c in candidate_ids(*digests[i])])
        filed = {i: filed_under(stored, *digests[i], rows[i].text) for i in rows}
        ids = [filed.get(i) or i for i in ids]  # content filed under a legacy id keeps it
        new_rows = [r for i, r in rows.items() if not filed[i]]
        if new_rows:
            vecs = self.embedder.embed([r.text for r in new_rows])
            with self.lock.hold():
                self._file_drawers(new_rows, vecs)
        return {
            "success": True,
            "drawer_ids": ids,
            "added": len(new_rows),
            "already_stored": len(rows) - len(new_rows),
            "secrets_redacted": redacted,
        }

    def delete_drawer(self, drawer_id: str) -> dict[str, Any]:
        self.require()
        self.sync()
        if drawer_id not in self.catalog.get([drawer_id]):
            raise NotFoundError(
                f"No drawer with id {drawer_id!r}; nothing was deleted.",
                hint="Drawer ids come from search results (drawer_id).",
            )
        with self.lock.hold():
            self._remove_drawers([drawer_id])
        return {"success": True, "drawer_id": drawer_id}


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
        import numpy  # noqa: F401

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


def _check_content(content: object) -> str:
    """`content` as a drawer's text, or InvalidInputError for an empty or oversized one."""
    if not isinstance(content, str) or not content.strip():
        raise InvalidInputError("The content is empty.", hint="Pass the text to store.")
    if len(content) > MAX_DRAWER_CHARS:
        raise InvalidInputError(
            f"The content is {len(content):,} characters; one drawer holds at most "
            f"{MAX_DRAWER_CHARS:,}.",
            hint="Split it into several drawers, or save it as a file and mine the folder.",
        )
    return content


def row_summary(row: DrawerRow) -> dict[str, Any]:
    return {"drawer_id": row.id, "wing": row.wing, "room": row.room, "source_file": row.source_file}
