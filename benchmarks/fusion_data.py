"""Every score a fusion can use, per dev question, computed once and cached (issue 27).

For LongMemEval-S dev50 and the LoCoMo dev conversations (locomo_dev5.json + locomo_dev_more2.json)
this files the fixed-protocol documents into fresh palaces exactly as benchmarks/retrieval.py does
(`Palace.add_drawers`, the product's catalogue and keyword index) and records, per question:

- the keyword side: BM25 candidates (50 deep, as a search asks) and the query's BM25 weight;
- the vector side: the cosine similarity of the query to *every* document's own vector
  (`vector_all`), and what the product's vector side returns, 50 deep (`vector_product`: a
  document longer than PASSAGES_FROM scored by its best passage when closer, the passage
  vectors filed by `add_drawers` itself, storage/passage_vectors.py);
- passages: each document's best passage cosine at PASSAGE_SIZES characters (the product's
  splitter, whatever the document's length: `passage_best`), and the earlier measurement's
  best ~800-character run of turns (`vector_passage`), to compare ways of scoring a long
  document by its parts;
- for LoCoMo also the dialog level (one document per turn; `vector_window_top`: each turn
  read with the turn before and after it, measured, not in the product) and the product
  pipeline (sessions mined with `mine --mode convos`, 100 drawers deep, each drawer mapped to
  its session).

Vectors come from the product's embedder for `--model` (USE by default) through a cache keyed
by the text, stored in `--cache`, so a second run embeds nothing. Output: one JSON file per
benchmark under `--out` (default /tmp/fz), read by benchmarks/fusion_cv.py.

    python benchmarks/fusion_data.py --model use --out /tmp/fz
    python benchmarks/fusion_data.py --bench lme --cache /tmp/fz/vectors_use_lme.pkl --out /tmp/fz
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_models import PRODUCT_NAMES  # noqa: E402
from retrieval import (  # noqa: E402
    DEFAULT_DATA,
    load_lme,
    locomo_gold_sessions,
    locomo_sessions,
    render_turn,
    write_locomo_session,
)

from mempalace_cli.miners.rooms import normalize_name  # noqa: E402
from mempalace_cli.storage.passage_vectors import text_size  # noqa: E402

LOCOMO_FILES = ("locomo_dev5.json", "locomo_dev_more2.json")
DEPTH = 50
PIPELINE_DEPTH = 100
# Every candidate of a conversation (its turns or drawers number a few hundred): the neighbours'
# scores, however far down their side ranks them.
DEEP = 5000
PASSAGE_CHARS = 800
# Passage sizes compared (the product's splitter, storage/passage_vectors.py; it ships with
# PASSAGE_CHARS there): each document's best passage at each size, however long the document.
PASSAGE_SIZES = (300, 400, 600)
# The pipeline's drawers per conversation: id -> [session, chunk index, characters] (written
# beside the pipeline's file, locomo_pipeline_layout_<model>.json); "dialogs/<conversation>":
# each turn's characters.
LAYOUT: dict[str, dict[str, list[Any]]] = {}


class CachingEmbedder:
    """The product's embedder for a model, with every text's vector kept by its hash."""

    def __init__(self, model: str, cache: Path) -> None:
        from mempalace_cli.embedders import make_embedder

        self.inner = make_embedder(PRODUCT_NAMES[model])
        self.name, self.dimension = self.inner.name, self.inner.dimension
        self.path = cache
        self.vectors: dict[str, Any] = {}
        if cache.exists():
            self.vectors = pickle.loads(cache.read_bytes())
        self.new = 0

    def ensure_loaded(self) -> None:
        self.inner.ensure_loaded()

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()

    def embed(self, texts: list[str], batch_size: int = 32) -> Any:
        import numpy as np

        todo = list(dict.fromkeys(t for t in texts if self.key(t) not in self.vectors))
        for start in range(0, len(todo), 64):
            part = todo[start : start + 64]
            for text, vec in zip(part, self.inner.embed(part), strict=True):
                self.vectors[self.key(text)] = np.asarray(vec, dtype=np.float32)
            self.new += len(part)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self.vectors[self.key(t)] for t in texts])

    def embed_query(self, text: str) -> Any:
        return self.embed([text])[0]

    def save(self) -> None:
        if self.new:
            tmp = self.path.with_suffix(".tmp")
            tmp.write_bytes(pickle.dumps(self.vectors))
            tmp.replace(self.path)
            self.new = 0


def palace_with(embedder: CachingEmbedder, path: Path, home: Path, model: str) -> Any:
    from mempalace_cli.common.config import resolve_settings
    from mempalace_cli.service import Palace

    class CachedPalace(Palace):
        @property
        def embedder(self) -> Any:  # type: ignore[override]
            return embedder

    settings = resolve_settings(path, home=home)
    settings.raw["embedding_model"] = PRODUCT_NAMES[model]
    return CachedPalace(settings)


def passages(turns: list[str], size: int = PASSAGE_CHARS) -> list[str]:
    """Consecutive turns packed into pieces of about `size` characters (a turn longer than
    that is its own piece, cut at 8,000 as the embedder cuts)."""
    out: list[str] = []
    cur: list[str] = []
    for t in turns:
        if cur and sum(len(x) + 1 for x in cur) + len(t) > size:
            out.append("\n".join(cur))
            cur = []
        cur.append(t)
    if cur:
        out.append("\n".join(cur))
    return out


def passage_scores(
    emb: CachingEmbedder, query_vec: Any, docs: list[tuple[str, str]]
) -> dict[str, dict[str, float]]:
    """Per passage size, each document's best passage cosine, passages cut by the product's
    splitter (passage_texts) whatever the document's length; a document of one passage is
    left out (its own vector is its passage)."""
    from mempalace_cli.storage.passage_vectors import passage_texts

    out: dict[str, dict[str, float]] = {}
    for size in PASSAGE_SIZES:
        best = {}
        for doc_id, text in docs:
            pieces = passage_texts(text, size, 0)
            if pieces:
                best[doc_id] = max(cosines(emb, query_vec, pieces))
        out[str(size)] = best
    return out


def product_vector(palace: Any, query: str, wing: str, room: str, back: Any) -> list:
    """The product's own vector side (the catalogue's exact ranking, a long document by its
    best passage when closer), DEPTH deep: [[document, cosine]]."""
    _, hits = palace.searching.vector_candidates(query, wing, room, DEPTH, catalog_distances={})
    return [[back(h[0]), round(1.0 - h[1], 5)] for h in hits]


def cosines(emb: CachingEmbedder, query_vec: Any, texts: list[str]) -> list[float]:
    import numpy as np

    m = emb.embed(texts)
    q = query_vec / max(float(np.linalg.norm(query_vec)), 1e-12)
    norms = np.maximum(np.linalg.norm(m, axis=1), 1e-12)
    return [round(float(x), 5) for x in (m @ q) / norms]


def file_docs(palace: Any, docs: list[tuple[str, str]], wing: str, room: str) -> dict[str, str]:
    res = palace.add_drawers(
        [{"wing": wing, "room": room, "content": t, "source_file": d} for d, t in docs],
        added_by="benchmark",
    )
    back: dict[str, str] = {}
    for drawer_id, (doc_id, _) in zip(res["drawer_ids"], docs, strict=True):
        back.setdefault(drawer_id, doc_id)
    return back


def lexical(palace: Any, query: str, wing: str, room: str | None, back: Any, depth: int) -> dict:
    hits = palace.searching.lexical_candidates(query, wing, room, depth)
    return {
        "lexical": [[back(i), round(s, 5)] for i, s in hits],
        "query_weight": round(palace.catalog.query_weight(query), 5),
    }


def run_lme(emb: CachingEmbedder, model: str, data: Path, root: Path) -> list[dict[str, Any]]:
    out = []
    for n, q in enumerate(load_lme(data)):
        palace = palace_with(emb, root / f"lme{n}", root / "home", model)
        docs, parts = [], {}
        for sid, session in zip(q["haystack_session_ids"], q["haystack_sessions"], strict=True):
            user = [t["content"] for t in session if t["role"] == "user"]
            if user:
                docs.append((sid, "\n".join(user)))
                parts[sid] = passages(user)
        back = file_docs(palace, docs, "lme", "sessions")
        qv = emb.embed_query(q["question"])
        full = dict(zip([d for d, _ in docs], cosines(emb, qv, [t for _, t in docs]), strict=True))
        best = {d: max(cosines(emb, qv, p)) for d, p in parts.items()}
        out.append(
            {
                "bench": "lme",
                "id": q["question_id"],
                "type": q["question_type"],
                "fold_key": q["question_id"],
                "gold": sorted(set(q["answer_session_ids"])),
                "lengths": {d: len(t) for d, t in docs},
                "sizes": {d: text_size(t) for d, t in docs},
                "passages": {d: len(p) for d, p in parts.items()},
                "vector_all": full,
                "vector_passage": best,
                "passage_best": passage_scores(emb, qv, docs),
                "vector_product": product_vector(
                    palace, q["question"], "lme", "sessions", back.__getitem__
                ),
            }
            | lexical(palace, q["question"], "lme", "sessions", back.__getitem__, DEPTH)
        )
        palace.close()
        shutil.rmtree(root / f"lme{n}", ignore_errors=True)
        if n % 10 == 9:
            emb.save()
            print(f"lme {n + 1}", file=sys.stderr, flush=True)
    emb.save()
    return out


def run_locomo(
    emb: CachingEmbedder, model: str, data: Path, root: Path, pipeline: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    samples = []
    for name in LOCOMO_FILES:
        samples += json.loads((data / name).read_text(encoding="utf-8"))
    sessions_out, dialogs_out, pipe_out = [], [], []
    for sample in samples:
        wing = normalize_name(sample["sample_id"])
        palace = palace_with(emb, root / wing, root / "home", model)
        sessions = locomo_sessions(sample["conversation"])
        turns = {f"session_{n}": [render_turn(t) for t in ts] for n, ts in sessions}
        s_docs = [(s, "\n".join(ts)) for s, ts in turns.items()]
        d_docs = [(t["dia_id"], render_turn(t)) for _, ts in sessions for t in ts]
        back_s = file_docs(palace, s_docs, wing, "sessions")
        back_d = file_docs(palace, d_docs, wing, "dialogs")
        parts = {s: passages(ts) for s, ts in turns.items()}
        windows = [
            "\n".join(ts[max(0, i - 1) : i + 2]) for _, ts in turns.items() for i in range(len(ts))
        ]
        emb.embed([t for _, t in s_docs] + [t for _, t in d_docs] + windows)
        LAYOUT[f"dialogs/{wing}"] = {d: [d.split(":")[0], None, len(t)] for d, t in d_docs}
        for qi, qa in enumerate(sample["qa"]):
            evidence = [str(e) for e in qa.get("evidence") or []]
            base = {
                "id": f"{wing}#{qi}",
                "type": qa["category"],
                "fold_key": wing,
            }
            qv = emb.embed_query(qa["question"])
            full = dict(zip(turns, cosines(emb, qv, [t for _, t in s_docs]), strict=True))
            best = {s: max(cosines(emb, qv, p)) for s, p in parts.items()}
            turn_cos = cosines(emb, qv, [t for _, t in d_docs])
            by_turn = dict(zip([d for d, _ in d_docs], turn_cos, strict=True))
            best_turn = {s: max(by_turn[d] for d, _ in d_docs_of(s, d_docs)) for s in turns}
            win_cos = cosines(emb, qv, windows)
            by_window = sorted(
                zip([d for d, _ in d_docs], win_cos, strict=True), key=lambda x: -x[1]
            )
            sessions_out.append(
                base
                | {
                    "bench": "locomo",
                    "gold": sorted(locomo_gold_sessions(evidence)),
                    "lengths": {d: len(t) for d, t in s_docs},
                    "sizes": {d: text_size(t) for d, t in s_docs},
                    "vector_all": full,
                    "vector_passage": best,
                    "vector_turn": best_turn,
                    "passage_best": passage_scores(emb, qv, s_docs),
                    "vector_product": product_vector(
                        palace, qa["question"], wing, "sessions", back_s.__getitem__
                    ),
                }
                | lexical(palace, qa["question"], wing, "sessions", back_s.__getitem__, DEPTH)
            )
            top = sorted(by_turn.items(), key=lambda x: -x[1])[:DEPTH]
            dialogs_out.append(
                base
                | {
                    "bench": "locomo_dialog",
                    "gold": sorted(set(evidence)),
                    "vector_top": [[d, s] for d, s in top],
                    # each turn read with the one before and after it (measured, not shipped)
                    "vector_window_top": [[d, s] for d, s in by_window[:DEPTH]],
                    # every turn's cosine and every keyword match, for scoring a turn with its
                    # neighbours' scores (a turn's neighbours: the turns beside it, dia_id order)
                    "vector_all_turns": by_turn,
                    "lexical_all": lexical(
                        palace, qa["question"], wing, "dialogs", back_d.__getitem__, DEEP
                    )["lexical"],
                }
                | lexical(palace, qa["question"], wing, "dialogs", back_d.__getitem__, DEPTH)
            )
        palace.close()
        emb.save()
        if pipeline:
            pipe_out += mined(emb, model, sample, wing, root)
        print(f"locomo {wing}", file=sys.stderr, flush=True)
    return sessions_out, dialogs_out, pipe_out


def d_docs_of(session: str, d_docs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    n = session.split("_")[1]
    return [(d, t) for d, t in d_docs if d.split(":")[0] == f"D{n}"] or d_docs[:1]


def mined(
    emb: CachingEmbedder, model: str, sample: dict[str, Any], wing: str, root: Path
) -> list[dict[str, Any]]:
    """The product pipeline: sessions written as transcripts, `mine --mode convos`, both sides'
    drawer candidates 100 deep with each drawer's session."""
    folder = root / f"convos-{wing}"
    folder.mkdir()
    for n, turns in locomo_sessions(sample["conversation"]):
        write_locomo_session(folder, n, turns, sample["conversation"]["speaker_a"])
    palace = palace_with(emb, root / f"mined-{wing}", root / "home", model)
    palace.mine(str(folder), mode="convos", wing=wing)
    emb.save()
    rows = list(palace.catalog.iter_drawers(wing=wing))
    source = {r.id: Path(r.source_file).stem for r in rows}
    # each drawer's place in its file (source, chunk index): its neighbours are the chunks
    # beside it
    LAYOUT[wing] = {r.id: [Path(r.source_file).stem, r.chunk_index, len(r.text)] for r in rows}
    out = []
    for qi, qa in enumerate(sample["qa"]):
        _, vec, lex = palace.searching.search_candidates(
            qa["question"], wing, None, PIPELINE_DEPTH, catalog_distances={}
        )
        _, vec_all, lex_all = palace.searching.search_candidates(
            qa["question"], wing, None, DEEP, catalog_distances={}
        )
        out.append(
            {
                "bench": "locomo_pipeline",
                "id": f"{wing}#{qi}",
                "type": qa["category"],
                "fold_key": wing,
                "gold": sorted(locomo_gold_sessions([str(e) for e in qa.get("evidence") or []])),
                "vector_top": [[h[0], round(1.0 - h[1], 5)] for h in vec],
                "lexical": [[i, round(s, 5)] for i, s in lex],
                "query_weight": round(palace.catalog.query_weight(qa["question"]), 5),
                "source": {h[0]: source[h[0]] for h in vec} | {i: source[i] for i, _ in lex},
                "vector_all_drawers": {h[0]: round(1.0 - h[1], 5) for h in vec_all},
                "lexical_all": [[i, round(s, 5)] for i, s in lex_all],
            }
        )
    palace.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--model", default="use")
    ap.add_argument("--out", type=Path, default=Path("/tmp/fz"))
    ap.add_argument("--cache", type=Path, help="vector cache (default <out>/vectors_<model>.pkl)")
    ap.add_argument("--bench", choices=("lme", "locomo", "all"), default="all")
    ap.add_argument("--no-pipeline", action="store_true")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    emb = CachingEmbedder(args.model, args.cache or args.out / f"vectors_{args.model}.pkl")
    root = Path(tempfile.mkdtemp(prefix="mp-fz-"))
    (root / "home").mkdir()
    t0 = time.perf_counter()
    try:
        if args.bench in ("locomo", "all"):
            s, d, p = run_locomo(emb, args.model, args.data, root, not args.no_pipeline)
            for name, rows in (("locomo", s), ("locomo_dialog", d), ("locomo_pipeline", p)):
                if rows:
                    (args.out / f"{name}_{args.model}.json").write_text(json.dumps(rows))
            if LAYOUT:
                path = args.out / f"locomo_pipeline_layout_{args.model}.json"
                path.write_text(json.dumps(LAYOUT))
        if args.bench in ("lme", "all"):
            rows = run_lme(emb, args.model, args.data, root)
            (args.out / f"lme_{args.model}.json").write_text(json.dumps(rows))
    finally:
        emb.save()
        shutil.rmtree(root, ignore_errors=True)
    print(f"done in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
