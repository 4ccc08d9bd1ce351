"""Retrieval quality on LongMemEval-S and LoCoMo, through the palace service and our embedder.

Fixed protocol (see ../shared/bench/README.md): the documents are built exactly as the protocol
says, filed into a fresh temporary palace (one per LongMemEval question, one per LoCoMo
conversation with a room per granularity) with `Palace.add_drawers`, and ranked by
`Palace.search` in each mode: vector, lexical and hybrid (the default).

Product pipeline (`--pipeline`): the sessions are written as conversation files, mined with
`Palace.mine(mode="convos")` exactly as `mempalace mine --mode convos` does, searched with the
default ranking, and each hit mapped back to the session file it came from (sessions ranked by
their best drawer).

Usage:
    python benchmarks/retrieval.py                      # both benchmarks, fixed protocol
    python benchmarks/retrieval.py --pipeline           # + the product pipeline
    python benchmarks/retrieval.py --bench lme --limit 10
Writes results JSON and a markdown table (default benchmarks/results/retrieval.{json,md}).
Nothing is cached between runs: every run embeds every document again.
"""

from __future__ import annotations

import argparse
import json
import lzma
import math
import os
import platform
import re
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_models import PRODUCT_NAMES  # noqa: E402

from mempalace_cli.miners.rooms import normalize_name  # noqa: E402
from mempalace_cli.service import Palace  # noqa: E402

DEFAULT_DATA = REPO.parent / "shared" / "bench"
LME_FILE = "longmemeval_s_dev50.json.xz"
# The LoCoMo dev conversations: the first five, and two more added for issue 27.
LOCOMO_FILES = ("locomo_dev5.json", "locomo_dev_more2.json")
MODES = ("vector", "lexical", "hybrid")
TOP = 10
# Candidate depth for the product pipeline: many drawers per session, so rank deeper than 10
# drawers to find 10 distinct sessions.
PIPELINE_DEPTH = 100


# -- metrics ----------------------------------------------------------------------------------
def recall_any(ranked: list[str], gold: set[str], k: int) -> float:
    return 1.0 if gold & set(ranked[:k]) else 0.0


def recall_all(ranked: list[str], gold: set[str], k: int) -> float:
    return 1.0 if gold and gold <= set(ranked[:k]) else 0.0


def recall_frac(ranked: list[str], gold: set[str], k: int) -> float:
    return len(gold & set(ranked[:k])) / len(gold) if gold else 1.0


def ndcg(ranked: list[str], gold: set[str], k: int) -> float:
    """Binary-relevance NDCG, ideal over all evidence (the official LongMemEval definition)."""
    dcg = sum(1.0 / math.log2(i + 2) for i, d in enumerate(ranked[:k]) if d in gold)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(gold), k)))
    return dcg / ideal if ideal else 0.0


def mean(xs: Iterable[float]) -> float:
    xs = list(xs)
    return round(sum(xs) / len(xs), 4) if xs else float("nan")


def summarise(rows: list[dict[str, Any]], metrics: list[str], group: str) -> dict[str, Any]:
    """{mode: {"all": {metric: mean}, "by_<group>": {value: {metric: mean, "n": n}}}}."""
    out: dict[str, Any] = {}
    for mode in {r["mode"] for r in rows}:
        mine = [r for r in rows if r["mode"] == mode]
        groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in mine:
            groups[str(r[group])].append(r)
        out[mode] = {
            "all": {m: mean(r[m] for r in mine) for m in metrics} | {"n": len(mine)},
            f"by_{group}": {
                g: {m: mean(r[m] for r in rs) for m in metrics} | {"n": len(rs)}
                for g, rs in sorted(groups.items())
            },
        }
    return out


# -- palaces ----------------------------------------------------------------------------------
class TempPalaces:
    """Fresh palaces under one temporary directory, removed when done; their drawers and
    queries embedded by `model` (benchmarks/bench_models.py)."""

    def __init__(self, model: str = "minilm") -> None:
        self.model = model
        self.root = Path(tempfile.mkdtemp(prefix="mp-bench-"))
        self.home = self.root / "home"
        self.home.mkdir()
        self.n = 0

    def new(self) -> Palace:
        self.n += 1
        from bench_models import new_palace

        return new_palace(self.model, self.root / f"palace{self.n}", self.home)

    def drop(self, palace: Palace) -> None:
        palace.close()
        if "store" in palace.core.__dict__:
            palace.store.reset_handle()
        shutil.rmtree(palace.path, ignore_errors=True)

    def cleanup(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def file_documents(
    palace: Palace,
    docs: list[tuple[str, str]],
    wing: str,
    room: str,
    chunks: list[tuple[str, int]] | None = None,
) -> dict[str, list[str]]:
    """File (doc_id, text) pairs as drawers; returns drawer id -> the doc ids it stands for
    (documents with identical text share a drawer, and a hit on it counts for each). With
    `chunks`, each document is filed as a chunk of a longer source, (source file, chunk
    index), as a mined conversation stores its turns; else it is its own source."""
    places = chunks or [(doc_id, None) for doc_id, _ in docs]
    res = palace.add_drawers(
        [
            {"wing": wing, "room": room, "content": text, "source_file": src}
            # a turn of a session, filed as a mined conversation files it
            | ({"chunk_index": n, "metadata": {"ingest_mode": "convos"}} if n is not None else {})
            for (_, text), (src, n) in zip(docs, places, strict=True)
        ],
        added_by="benchmark",
    )
    back: dict[str, list[str]] = defaultdict(list)
    for drawer_id, (doc_id, _) in zip(res["drawer_ids"], docs, strict=True):
        back[drawer_id].append(doc_id)
    return back


def ranked_docs(
    palace: Palace, query: str, mode: str, back: dict[str, list[str]], wing: str, room: str
) -> list[str]:
    hits = palace.search(query, wing=wing, room=room, limit=TOP, mode=mode)["results"]
    out: list[str] = []
    for hit in hits:
        for doc_id in back.get(hit["drawer_id"], []):
            if doc_id not in out:
                out.append(doc_id)
    return out


def dump_candidates(
    palace: Palace, query: str, wing: str, room: str, back: dict[str, list[str]]
) -> dict[str, Any]:
    """Both sides' raw candidate lists (50 deep), for offline fusion tuning (tune_fusion.py),
    with the query's script and each candidate's script where it differs from LATIN."""
    from mempalace_cli.search.fusion import LATIN, script_of

    _, vec, lex = palace.searching.search_candidates(query, wing, room, 50)
    ids = list(dict.fromkeys([h[0] for h in vec] + [i for i, _ in lex]))
    rows = palace.catalog.get(ids)
    scripts = {back[i][0]: script_of(rows[i].text) for i in ids if i in rows}
    return {
        "vector": [[back[h[0]][0], round(1.0 - h[1], 5)] for h in vec],
        "lexical": [[back[i][0], round(s, 5)] for i, s in lex],
        "query_script": script_of(query),
        "query_weight": round(palace.catalog.query_weight(query), 5),
        "scripts": {d: s for d, s in scripts.items() if s != LATIN},
    }


# -- LongMemEval-S ----------------------------------------------------------------------------
def load_lme(data: Path) -> list[dict[str, Any]]:
    with lzma.open(data / LME_FILE, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def lme_documents(q: dict[str, Any]) -> list[tuple[str, str]]:
    docs = []
    for sid, session in zip(q["haystack_session_ids"], q["haystack_sessions"], strict=True):
        text = "\n".join(t["content"] for t in session if t["role"] == "user")
        if text.strip():
            docs.append((sid, text))
    return docs


def lme_scores(ranked: list[str], gold: set[str]) -> dict[str, float]:
    return {
        "recall_any@1": recall_any(ranked, gold, 1),
        "recall_any@3": recall_any(ranked, gold, 3),
        "recall_any@5": recall_any(ranked, gold, 5),
        "recall_any@10": recall_any(ranked, gold, 10),
        "recall_all@5": recall_all(ranked, gold, 5),
        "ndcg@10": ndcg(ranked, gold, 10),
    }


LME_METRICS = [
    "recall_any@1",
    "recall_any@3",
    "recall_any@5",
    "recall_any@10",
    "recall_all@5",
    "ndcg@10",
]


def run_lme(questions: list[dict[str, Any]], tmp: TempPalaces, dump: list | None) -> dict:
    rows: list[dict[str, Any]] = []
    t_build = t_query = 0.0
    n_docs = 0
    for q in questions:
        palace = tmp.new()
        docs = lme_documents(q)
        n_docs += len(docs)
        t0 = time.perf_counter()
        back = file_documents(palace, docs, "lme", "sessions")
        t_build += time.perf_counter() - t0
        gold = set(q["answer_session_ids"])
        t0 = time.perf_counter()
        for mode in MODES:
            ranked = ranked_docs(palace, q["question"], mode, back, "lme", "sessions")
            rows.append(
                {"id": q["question_id"], "mode": mode, "type": q["question_type"], "ranked": ranked}
                | lme_scores(ranked, gold)
            )
        t_query += time.perf_counter() - t0
        if dump is not None:
            dump.append(
                {
                    "bench": "lme",
                    "id": q["question_id"],
                    "type": q["question_type"],
                    "gold": sorted(gold),
                    "lengths": {d: len(t) for d, t in docs},
                }
                | dump_candidates(palace, q["question"], "lme", "sessions", back)
            )
        tmp.drop(palace)
    return {
        "protocol": "LongMemEval-S session level: one document per session (user turns, "
        "joined with newline), query = question; recall_any over all questions incl. _abs",
        "questions": len(questions),
        "documents": n_docs,
        "seconds": {"file_documents": round(t_build, 1), "search": round(t_query, 1)},
        "summary": summarise(rows, LME_METRICS, "type"),
        "per_question": [
            {k: v for k, v in r.items() if k != "ranked"} | {"top": r["ranked"][:5]} for r in rows
        ],
    }


# -- LoCoMo -----------------------------------------------------------------------------------
_SESSION_KEY = re.compile(r"^session_(\d+)$")
_EVIDENCE = re.compile(r"D(\d+):")


def load_locomo(data: Path) -> list[dict[str, Any]]:
    samples: list[dict[str, Any]] = []
    for name in LOCOMO_FILES:
        if (data / name).exists():
            samples += json.loads((data / name).read_text(encoding="utf-8"))
    return samples


def locomo_sessions(conv: dict[str, Any]) -> list[tuple[int, list[dict[str, Any]]]]:
    found = [(int(m.group(1)), v) for k, v in conv.items() if (m := _SESSION_KEY.match(k))]
    return sorted((n, turns) for n, turns in found if turns)


def render_turn(turn: dict[str, Any]) -> str:
    return f'{turn["speaker"]} said, "{turn["text"]}"'


def locomo_gold_sessions(evidence: list[str]) -> set[str]:
    return {f"session_{int(m.group(1))}" for e in evidence if (m := _EVIDENCE.match(e))}


def run_locomo(
    samples: list[dict[str, Any]], tmp: TempPalaces, dump: list | None, dump_only: bool = False
) -> dict:
    rows_s: list[dict[str, Any]] = []
    rows_d: list[dict[str, Any]] = []
    t_build = t_query = 0.0
    n_sessions = n_turns = 0
    for sample in samples:
        palace = tmp.new()
        sessions = locomo_sessions(sample["conversation"])
        s_docs = [
            (f"session_{n}", "\n".join(render_turn(t) for t in turns)) for n, turns in sessions
        ]
        d_docs = [(t["dia_id"], render_turn(t)) for _, turns in sessions for t in turns]
        n_sessions += len(s_docs)
        n_turns += len(d_docs)
        wing = normalize_name(sample["sample_id"])
        t0 = time.perf_counter()
        back_s = file_documents(palace, s_docs, wing, "sessions")
        # the dialog level's turns filed as chunks of their session (source file = the
        # session, chunk index = the turn's place), as `mine --mode convos` files a chat
        places = [(f"session_{n}", i) for n, turns in sessions for i in range(len(turns))]
        back_d = {} if dump_only else file_documents(palace, d_docs, wing, "dialogs", places)
        t_build += time.perf_counter() - t0
        t0 = time.perf_counter()
        for qi, qa in enumerate(sample["qa"]):
            evidence = [str(e) for e in qa.get("evidence") or []]
            gold_s = locomo_gold_sessions(evidence)
            gold_d = set(evidence)
            base = {"id": f"{wing}#{qi}", "category": qa["category"]}
            for mode in () if dump_only else MODES:
                ranked = ranked_docs(palace, qa["question"], mode, back_s, wing, "sessions")
                rows_s.append(
                    base
                    | {
                        "mode": mode,
                        "recall@5": recall_frac(ranked, gold_s, 5),
                        "recall@10": recall_frac(ranked, gold_s, 10),
                    }
                )
                ranked = ranked_docs(palace, qa["question"], mode, back_d, wing, "dialogs")
                rows_d.append(base | {"mode": mode, "recall@10": recall_frac(ranked, gold_d, 10)})
            if dump is not None:
                dump.append(
                    {
                        "bench": "locomo",
                        "id": base["id"],
                        "type": qa["category"],
                        "gold": sorted(gold_s),
                        "lengths": {d: len(t) for d, t in s_docs},
                    }
                    | dump_candidates(palace, qa["question"], wing, "sessions", back_s)
                )
        t_query += time.perf_counter() - t0
        tmp.drop(palace)
    return {
        "protocol": "LoCoMo: one document per session ('{speaker} said, \"{text}\"' per turn) "
        "and one per turn (dialog level); fractional recall, no-evidence questions score 1.0",
        "questions": len(rows_s) // len(MODES),
        "documents": {"sessions": n_sessions, "dialogs": n_turns},
        "seconds": {"file_documents": round(t_build, 1), "search": round(t_query, 1)},
        "session": summarise(rows_s, ["recall@5", "recall@10"], "category"),
        "dialog": summarise(rows_d, ["recall@10"], "category"),
    }


# -- the product pipeline ---------------------------------------------------------------------
def mine_convos(palace: Palace, folder: Path, wing: str) -> dict[str, Any]:
    return palace.mine(str(folder), mode="convos", wing=wing)


def ranked_sessions(
    palace: Palace,
    query: str,
    wing: str,
    to_doc: Callable[[str], str],
    mode: str = "hybrid",
    depth: int = PIPELINE_DEPTH,
) -> list[str]:
    """Sessions ranked by their best drawer under `mode` (hybrid = the default ranking)."""
    hits = palace.search(query, wing=wing, limit=depth, mode=mode)["results"]
    out: list[str] = []
    for hit in hits:
        doc = to_doc(hit["source_file"])
        if doc not in out:
            out.append(doc)
    return out


def write_lme_session(folder: Path, sid: str, session: list[dict[str, Any]]) -> None:
    """A plain-text transcript with `User:` / `Assistant:` speaker prefixes."""
    lines = [f"{'User' if t['role'] == 'user' else 'Assistant'}: {t['content']}\n" for t in session]
    (folder / f"{_safe(sid)}.txt").write_text("\n".join(lines), encoding="utf-8")


def write_locomo_session(folder: Path, n: int, turns: list[dict[str, Any]], speaker_a: str) -> None:
    """Two people chatting: the first speaker as `User:`, the other as `Assistant:`, each line
    keeping the speaker's name (the questions ask about people by name)."""
    lines = [
        f"{'User' if t['speaker'] == speaker_a else 'Assistant'}: {t['speaker']}: {t['text']}\n"
        for t in turns
    ]
    (folder / f"session_{n}.txt").write_text("\n".join(lines), encoding="utf-8")


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def run_pipeline(
    lme: list[dict[str, Any]], locomo: list[dict[str, Any]], tmp: TempPalaces
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "note": "sessions written as conversation files, mined with "
        "mine(mode='convos'), searched with each ranking (hybrid is the default); sessions "
        f"ranked by their best drawer among the top {PIPELINE_DEPTH} drawers"
    }
    if lme:
        rows = []
        t0 = time.perf_counter()
        drawers = 0
        for q in lme:
            palace = tmp.new()
            folder = tmp.root / "convos"
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            names = {}
            for sid, session in zip(q["haystack_session_ids"], q["haystack_sessions"], strict=True):
                write_lme_session(folder, sid, session)
                names[f"{_safe(sid)}.txt"] = sid
            report = mine_convos(palace, folder, "lme")
            drawers += report.get("drawers", {}).get("added", 0)

            def to_doc(source: str, names: dict[str, str] = names) -> str:
                return names.get(Path(source).name, source)

            for mode in MODES:
                ranked = ranked_sessions(palace, q["question"], "lme", to_doc, mode)
                rows.append(
                    {"id": q["question_id"], "mode": mode, "type": q["question_type"]}
                    | lme_scores(ranked, set(q["answer_session_ids"]))
                )
            tmp.drop(palace)
        out["lme"] = {
            "questions": len(lme),
            "drawers": drawers,
            "seconds": round(time.perf_counter() - t0, 1),
            "summary": summarise(rows, LME_METRICS, "type"),
        }
    if locomo:
        rows = []
        t0 = time.perf_counter()
        drawers = 0
        for sample in locomo:
            palace = tmp.new()
            folder = tmp.root / "convos"
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            for n, turns in locomo_sessions(sample["conversation"]):
                write_locomo_session(folder, n, turns, sample["conversation"]["speaker_a"])
            wing = normalize_name(sample["sample_id"])
            report = mine_convos(palace, folder, wing)
            drawers += report.get("drawers", {}).get("added", 0)
            for qi, qa in enumerate(sample["qa"]):
                gold = locomo_gold_sessions([str(e) for e in qa.get("evidence") or []])
                for mode in MODES:
                    ranked = ranked_sessions(
                        palace, qa["question"], wing, lambda s: Path(s).stem, mode
                    )
                    rows.append(
                        {
                            "id": f"{wing}#{qi}",
                            "mode": mode,
                            "category": qa["category"],
                            "recall@5": recall_frac(ranked, gold, 5),
                            "recall@10": recall_frac(ranked, gold, 10),
                        }
                    )
            tmp.drop(palace)
        out["locomo"] = {
            "questions": len(rows) // len(MODES),
            "drawers": drawers,
            "seconds": round(time.perf_counter() - t0, 1),
            "session": summarise(rows, ["recall@5", "recall@10"], "category"),
        }
    return out


# -- report -----------------------------------------------------------------------------------
def markdown(results: dict[str, Any]) -> str:
    lines = [f"# Retrieval benchmark ({results['date']})", ""]
    lme = results.get("lme")
    if lme:
        lines += [
            f"## LongMemEval-S dev{lme['questions']}, session level ({lme['documents']} documents)",
            "",
            "| ranking | " + " | ".join(LME_METRICS) + " |",
            "|---|" + "---|" * len(LME_METRICS),
        ]
        for mode in MODES:
            s = lme["summary"][mode]["all"]
            lines.append(f"| {mode} | " + " | ".join(f"{s[m]:.3f}" for m in LME_METRICS) + " |")
        lines += [
            "",
            "Per question type (hybrid): ",
            "",
            "| type | n | R@5 vector | R@5 lexical | R@5 hybrid | NDCG@10 hybrid |",
            "|---|---|---|---|---|---|",
        ]
        for t, s in lme["summary"]["hybrid"]["by_type"].items():
            v = lme["summary"]["vector"]["by_type"][t]["recall_any@5"]
            lx = lme["summary"]["lexical"]["by_type"][t]["recall_any@5"]
            lines.append(
                f"| {t} | {s['n']} | {v:.3f} | {lx:.3f} | {s['recall_any@5']:.3f} | "
                f"{s['ndcg@10']:.3f} |"
            )
        lines.append("")
    loc = results.get("locomo")
    if loc and loc["session"]:  # empty after --dump-only
        lines += [
            f"## LoCoMo dev ({loc['questions']} questions, "
            f"{loc['documents']['sessions']} sessions, {loc['documents']['dialogs']} "
            "turns)",
            "",
            "| ranking | session R@5 | session R@10 | dialog R@10 |",
            "|---|---|---|---|",
        ]
        for mode in MODES:
            s, d = loc["session"][mode]["all"], loc["dialog"][mode]["all"]
            lines.append(
                f"| {mode} | {s['recall@5']:.3f} | {s['recall@10']:.3f} | {d['recall@10']:.3f} |"
            )
        lines += [
            "",
            "Per category (session R@10 / dialog R@10):",
            "",
            "| category | n | vector | lexical | hybrid |",
            "|---|---|---|---|---|",
        ]
        for c, s in loc["session"]["hybrid"]["by_category"].items():
            cells = [
                f"{loc['session'][m]['by_category'][c]['recall@10']:.3f} / "
                f"{loc['dialog'][m]['by_category'][c]['recall@10']:.3f}"
                for m in MODES
            ]
            lines.append(f"| {c} | {s['n']} | " + " | ".join(cells) + " |")
        lines.append("")
    pipe = results.get("pipeline")
    if pipe:
        lines += [
            "## Product pipeline (mine --mode convos, default search)",
            "",
            pipe["note"] + ".",
            "",
            "| benchmark | drawers | metric | vector | lexical | hybrid |",
            "|---|---|---|---|---|---|",
        ]
        if "lme" in pipe:
            sm = pipe["lme"]["summary"]
            for m in LME_METRICS:
                lines.append(
                    f"| LongMemEval-S session, first {pipe['lme']['questions']} questions | "
                    f"{pipe['lme']['drawers']} | {m} | "
                    + " | ".join(f"{sm[mode]['all'][m]:.3f}" for mode in MODES)
                    + " |"
                )
        if "locomo" in pipe:
            sm = pipe["locomo"]["session"]
            for m in ("recall@5", "recall@10"):
                lines.append(
                    f"| LoCoMo session, {pipe['locomo']['questions']} questions | "
                    f"{pipe['locomo']['drawers']} | {m} | "
                    + " | ".join(f"{sm[mode]['all'][m]:.3f}" for mode in MODES)
                    + " |"
                )
        lines.append("")
    lines.append(f"Total wall time: {results['seconds']} s on {results['machine']}.")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the bench data folder")
    ap.add_argument("--bench", choices=("lme", "locomo", "all"), default="all")
    ap.add_argument("--limit", type=int, default=0, help="only the first N questions/convs")
    ap.add_argument("--pipeline", action="store_true", help="also run the product pipeline")
    ap.add_argument("--pipeline-only", action="store_true", help="only the product pipeline")
    ap.add_argument(
        "--pipeline-lme",
        type=int,
        default=10,
        help="LongMemEval questions in the pipeline run (each mines ~900 drawers; 0 = all)",
    )
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "retrieval.json")
    ap.add_argument("--dump", type=Path, help="write raw candidate lists for tune_fusion.py")
    ap.add_argument(
        "--model", default="minilm", help="embedding model (benchmarks/bench_models.py)"
    )
    ap.add_argument(
        "--dump-only",
        action="store_true",
        help="LoCoMo: only the session candidates for --dump (no dialog level, no mode runs)",
    )
    args = ap.parse_args(argv)

    t_start = time.perf_counter()
    lme = load_lme(args.data) if args.bench in ("lme", "all") else []
    locomo = load_locomo(args.data) if args.bench in ("locomo", "all") else []
    if args.limit:
        lme, locomo = lme[: args.limit], locomo[: args.limit]
    from dataclasses import asdict

    from mempalace_cli.search import fusion

    results: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}",
        "fusion": asdict(fusion.for_model(PRODUCT_NAMES.get(args.model, args.model))),
        "model": args.model,
    }
    dump: list | None = [] if args.dump else None
    tmp = TempPalaces(args.model)
    try:
        if not args.pipeline_only:
            if lme:
                results["lme"] = run_lme(lme, tmp, dump)
                print(json.dumps(results["lme"]["summary"]["hybrid"]["all"]), file=sys.stderr)
            if locomo:
                results["locomo"] = run_locomo(locomo, tmp, dump, args.dump_only)
                if not args.dump_only:
                    print(
                        json.dumps(results["locomo"]["session"]["hybrid"]["all"]), file=sys.stderr
                    )
        if args.pipeline or args.pipeline_only:
            pipe_lme = lme[: args.pipeline_lme] if args.pipeline_lme else lme
            results["pipeline"] = run_pipeline(pipe_lme, locomo, tmp)
    finally:
        tmp.cleanup()
    results["seconds"] = round(time.perf_counter() - t_start, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    md = markdown(results)
    args.out.with_suffix(".md").write_text(md, encoding="utf-8")
    if dump is not None:
        args.dump.write_text(json.dumps(dump), encoding="utf-8")
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
