"""Does a time named in a question help search find the answer, and how should it be used?

A question such as "what did we decide last month?" names a period (mempalace_cli/search/dates.py,
`find_period`, read at the question's own "now"). Five ways to use it are compared with plain
search, on the same palaces:

- `none`: the question as it is (today's behaviour);
- `filter`: only drawers dated in the period (`since` = its first day, `before` = the day after
  its last);
- `since`: only drawers dated from the period's first day on (what is said about a period is
  said during it or later, never before it);
- `first`: drawers dated in the period first (in their own order), then the rest;
- `since_first`: drawers dated from the period's start on first, then the rest;
- `boost`: one search; among its candidates, those dated in the period first (no second search:
  an in-period drawer the plain search did not reach stays out);
- `shipped`: what `search` now does by itself (`time_in_query`, read at `now`): `boost` over
  all of the search's candidates.

Two sets of questions:

1. LongMemEval-S dev50 (../shared/bench, fixed protocol: one drawer per session, the user turns),
   each session dated by its `haystack_dates` day, "now" = the question's `question_date`. Only
   questions that name a period change; the rest are scored unchanged and counted.
2. Time questions over examples/notes (below; written for this benchmark, gold = the note
   files), the folder mined as `mempalace mine` does (content dates: Date: lines, dated titles
   and file names, dated log sections), each question with its own "now".

Scores are recall_any@k over distinct sessions / files (LoCoMo: its fractional session recall),
k = 1, 3, 5, 10. The results files hold ids, dates and scores only (no benchmark text).

Usage:
    python benchmarks/dates_bench.py [--model use|minilm] [--out benchmarks/results/dates.json]
"""

from __future__ import annotations

import argparse
import json
import lzma
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_models import DEFAULT, new_palace  # noqa: E402

from mempalace_cli.search.dates import Period, find_period  # noqa: E402

DATA = REPO.parent / "shared" / "bench" / "longmemeval_s_dev50.json.xz"
NOTES = REPO / "examples" / "notes"
KS = (1, 3, 5, 10)
DEPTH = 50
STRATEGIES = ("none", "filter", "since", "first", "since_first", "boost", "shipped")

# (question, now, gold note files). Written for this benchmark: each names a time, and the
# notes hold an answer dated in it. Some have a same-topic note from another time (the weekly
# syncs, the two pricing notes) so the time is what tells them apart.
NOTES_QUESTIONS: list[tuple[str, str, set[str]]] = [
    (
        "What did we decide last month?",
        "2026-05-13",
        {"decisions/0007-pricing-tiers.md", "decisions/0008-on-call-rotation.md"},
    ),
    ("上个月我们为什么决定用 Clerk?", "2026-04-15", {"decisions/0006-auth0-to-clerk.md"}),
    (
        "What went wrong in the incident last month?",
        "2026-05-13",
        {
            "project/postmortem-2026-04-18-restore-failures.md",
            "meetings/2026-04-21-incident-review.md",
        },
    ),
    (
        "What did the weekly sync in March cover?",
        "2026-05-13",
        {"meetings/2026-03-10-weekly-sync.md"},
    ),
    (
        "What came up at the weekly sync in February?",
        "2026-05-13",
        {"meetings/2026-02-03-weekly-sync.md"},
    ),
    (
        "Which decisions did we make in January?",
        "2026-05-13",
        {"decisions/0001-postgres-for-metadata.md", "decisions/0002-minio-object-storage.md"},
    ),
    (
        "一月份我们做了哪些决定?",
        "2026-05-13",
        {"decisions/0001-postgres-for-metadata.md", "decisions/0002-minio-object-storage.md"},
    ),
    (
        "What did the customer tell us last month?",
        "2026-04-10",
        {"meetings/2026-03-24-customer-call-bramble.md"},
    ),
    ("What performance work did we do in March?", "2026-05-13", {"project/performance-notes.md"}),
    ("What did we measure last week?", "2026-05-06", {"project/performance-notes.md"}),
    ("二月份的架构评审讨论了什么?", "2026-05-13", {"meetings/2026-02-17-architecture-review.md"}),
    (
        "What did we decide about pricing two months ago?",
        "2026-06-09",
        {"decisions/0007-pricing-tiers.md", "meetings/2026-04-07-pricing-workshop.md"},
    ),
    ("上周的发布会议决定了什么?", "2026-05-13", {"meetings/2026-05-05-release-go-no-go.md"}),
    ("Who did we interview in March?", "2026-05-13", {"meetings/2026-03-02-hiring-debrief.md"}),
    (
        "What was planned for the quarter in January?",
        "2026-05-13",
        {"meetings/2026-01-13-q1-planning.md"},
    ),
    (
        "What did we decide about on-call last month?",
        "2026-05-13",
        {"decisions/0008-on-call-rotation.md"},
    ),
]


def recall(ranked: list[str], gold: set[str], k: int) -> float:
    return 1.0 if gold & set(ranked[:k]) else 0.0


def recall_frac(ranked: list[str], gold: set[str], k: int) -> float:
    """LoCoMo's protocol: the share of the gold sessions in the top k (1.0 without gold)."""
    return len(gold & set(ranked[:k])) / len(gold) if gold else 1.0


def _docs(hits: list[dict[str, Any]], to_doc: Callable[[str], str]) -> list[str]:
    out: list[str] = []
    for hit in hits:
        doc = to_doc(hit)
        if doc not in out:
            out.append(doc)
    return out


def rankings(
    search: Callable[..., dict[str, Any]],
    question: str,
    period: Period | None,
    to_doc: Callable[[dict[str, Any]], str],
    now: str,
) -> dict[str, list[str]]:
    """The documents each strategy ranks for `question`."""
    plain = search(question, limit=DEPTH, time_in_query=False)["results"]
    base = _docs(plain, to_doc)
    shipped = _docs(search(question, limit=DEPTH, now=now)["results"], to_doc)
    if period is None:
        return {s: base for s in STRATEGIES} | {"shipped": shipped}
    inside = [h for h in plain if _in(h.get("date"), period)]
    boosted = _docs(inside + [h for h in plain if h not in inside], to_doc)
    within = _docs(
        search(question, limit=DEPTH, since=period.since, before=period.before)["results"], to_doc
    )
    after = _docs(search(question, limit=DEPTH, since=period.since)["results"], to_doc)
    return {
        "none": base,
        "filter": within,
        "since": after,
        "first": within + [d for d in base if d not in within],
        "since_first": after + [d for d in base if d not in after],
        "boost": boosted,
        "shipped": shipped,
    }


def _in(stamp: str | None, period: Period) -> bool:
    """Whether a hit's date falls in the period (its local day, clock.py)."""
    if not stamp:
        return False
    from mempalace_cli.common.clock import local_date

    return period.since <= local_date(stamp) < period.before


def scores(
    ranked: dict[str, list[str]], gold: set[str], metric: Callable[..., float] = recall
) -> dict[str, dict[str, float]]:
    return {s: {f"R@{k}": metric(r, gold, k) for k in KS} for s, r in ranked.items()}


def mean_table(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for s in STRATEGIES:
        out[s] = (
            {
                f"R@{k}": round(sum(r["scores"][s][f"R@{k}"] for r in rows) / len(rows), 3)
                for k in KS
            }
            if rows
            else {}
        )
    return out


# -- LongMemEval ---------------------------------------------------------------------------------
def lme_day(stamp: str) -> str:
    return stamp[:10].replace("/", "-")  # "2023/05/20 (Sat) 07:46" -> 2023-05-20


def run_lme(model: str, tmp: Path) -> dict[str, Any]:
    with lzma.open(DATA, "rt", encoding="utf-8") as fh:
        questions = json.load(fh)
    rows: list[dict[str, Any]] = []
    unchanged: dict[str, int] = {}
    for n, q in enumerate(questions):
        now = lme_day(q["question_date"])
        period = find_period(q["question"], now)
        if period is None:
            unchanged[q["question_type"]] = unchanged.get(q["question_type"], 0) + 1
            continue
        palace = new_palace(model, tmp / f"lme{n}", tmp / "home")
        docs = []
        for sid, day, session in zip(
            q["haystack_session_ids"], q["haystack_dates"], q["haystack_sessions"], strict=True
        ):
            text = "\n".join(t["content"] for t in session if t["role"] == "user")
            if text.strip():
                docs.append(
                    {
                        "wing": "lme",
                        "room": "sessions",
                        "content": text,
                        "source_file": sid,
                        "metadata": {"date": lme_day(day)},
                    }
                )
        filed = palace.add_drawers(docs, added_by="benchmark")
        back = {i: d["source_file"] for i, d in zip(filed["drawer_ids"], docs, strict=True)}

        def search(query: str, _p: Any = palace, **kw: Any) -> dict[str, Any]:
            return _p.search(query, wing="lme", room="sessions", **kw)

        ranked = rankings(search, q["question"], period, lambda h, b=back: b[h["drawer_id"]], now)
        gold = set(q["answer_session_ids"])
        gold_days = sorted(
            lme_day(d)
            for s, d in zip(q["haystack_session_ids"], q["haystack_dates"], strict=True)
            if s in gold
        )
        rows.append(
            {
                "id": q["question_id"],
                "type": q["question_type"],
                "now": now,
                "period": period.describe(),
                "gold_days": gold_days,
                "scores": scores(ranked, gold),
            }
        )
        palace.close()
        shutil.rmtree(tmp / f"lme{n}", ignore_errors=True)
    temporal = sum(1 for q in questions if q["question_type"] == "temporal-reasoning")
    return {
        "questions": len(questions),
        "temporal_reasoning": temporal,
        "name_a_period": len(rows),
        "unchanged_by_type": unchanged,
        "changed": mean_table(rows),
        "per_question": rows,
    }


# -- LoCoMo --------------------------------------------------------------------------------------
def run_locomo(model: str, tmp: Path) -> dict[str, Any]:
    from retrieval import locomo_gold_sessions, locomo_sessions, render_turn

    from mempalace_cli.miners.dates import read_date

    samples = []
    for name in ("locomo_dev5.json", "locomo_dev_more2.json"):
        samples += json.loads((DATA.parent / name).read_text(encoding="utf-8"))
    rows: list[dict[str, Any]] = []
    total = 0
    for n, sample in enumerate(samples):
        conv = sample["conversation"]
        days = {
            f"session_{k}": read_date(conv.get(f"session_{k}_date_time", ""), anywhere=True)
            for k, _ in locomo_sessions(conv)
        }
        # LoCoMo gives no question date: "now" is the day after the last session.
        from datetime import date, timedelta

        now = date.fromisoformat(max(d for d in days.values() if d)) + timedelta(days=1)
        asked = []
        for qi, qa in enumerate(sample["qa"]):
            total += 1
            period = find_period(qa["question"], now.isoformat())
            if period is not None:
                asked.append((qi, qa, period))
        if not asked:
            continue
        palace = new_palace(model, tmp / f"locomo{n}", tmp / "home")
        docs = [
            {
                "wing": "locomo",
                "room": "sessions",
                "source_file": f"session_{k}",
                "content": "\n".join(render_turn(t) for t in turns),
                "metadata": {"date": days[f"session_{k}"]} if days[f"session_{k}"] else {},
            }
            for k, turns in locomo_sessions(conv)
        ]
        filed = palace.add_drawers(docs, added_by="benchmark")
        back = {i: d["source_file"] for i, d in zip(filed["drawer_ids"], docs, strict=True)}

        def search(query: str, _p: Any = palace, **kw: Any) -> dict[str, Any]:
            return _p.search(query, wing="locomo", room="sessions", **kw)

        for qi, qa, period in asked:
            gold = locomo_gold_sessions([str(e) for e in qa.get("evidence") or []])
            ranked = rankings(
                search,
                qa["question"],
                period,
                lambda h, b=back: b[h["drawer_id"]],
                now.isoformat(),
            )
            rows.append(
                {
                    "id": f"{sample['sample_id']}#{qi}",
                    "category": qa["category"],
                    "now": now.isoformat(),
                    "period": period.describe(),
                    "gold_days": sorted(days.get(g) or "?" for g in gold),
                    "scores": scores(ranked, gold, recall_frac),
                }
            )
        palace.close()
        shutil.rmtree(tmp / f"locomo{n}", ignore_errors=True)
    return {
        "questions": total,
        "name_a_period": len(rows),
        "changed": mean_table(rows),
        "per_question": rows,
    }


# -- examples/notes ------------------------------------------------------------------------------
def run_notes(model: str, tmp: Path) -> dict[str, Any]:
    folder = tmp / "notes"
    shutil.copytree(NOTES, folder, ignore=shutil.ignore_patterns("mempalace.toml"))
    palace = new_palace(model, tmp / "notes-palace", tmp / "home")
    palace.mine(str(folder), wing="notes")
    rows = []
    for question, now, gold in NOTES_QUESTIONS:
        period = find_period(question, now)
        ranked = rankings(
            palace.search,
            question,
            period,
            lambda h: Path(h["source_file"]).relative_to(folder).as_posix(),
            now,
        )
        rows.append(
            {
                "question": question,
                "now": now,
                "period": [period.text, period.describe()] if period else None,
                "scores": scores(ranked, gold),
            }
        )
    palace.close()
    return {"questions": len(rows), "all": mean_table(rows), "per_question": rows}


def markdown(results: dict[str, Any]) -> str:
    lines = [f"# A time named in the question ({results['date']}, model {results['model']})", ""]

    def table(title: str, means: dict[str, dict[str, float]]) -> None:
        lines.extend(
            [
                f"**{title}**",
                "",
                "| strategy | " + " | ".join(f"R@{k}" for k in KS) + " |",
                "|---|" + "---|" * len(KS),
            ]
        )
        for s in STRATEGIES:
            lines.append(f"| {s} | " + " | ".join(f"{means[s][f'R@{k}']:.3f}" for k in KS) + " |")
        lines.append("")

    lme = results["lme"]
    table(
        f"LongMemEval-S dev50: the {lme['name_a_period']} of {lme['questions']} questions that "
        f"name a period (the others are unchanged: {lme['unchanged_by_type']})",
        lme["changed"],
    )
    for r in lme["per_question"]:
        lines.append(
            f"- {r['id']} ({r['type']}): the period {r['period']} at "
            f"{r['now']}; gold sessions dated {', '.join(r['gold_days'])}; R@5 "
            + ", ".join(f"{s} {r['scores'][s]['R@5']:.0f}" for s in STRATEGIES)
        )
    lines.append("")
    loc = results["locomo"]
    table(
        f"LoCoMo (7 conversations): the {loc['name_a_period']} of {loc['questions']} questions "
        "that name a period, fractional session recall",
        loc["changed"],
    )
    notes = results["notes"]
    table(f"examples/notes: {notes['questions']} time questions", notes["all"])
    for r in notes["per_question"]:
        lines.append(
            f"- {r['question']} (now {r['now']}; {r['period']}): R@1 "
            + ", ".join(f"{s} {r['scores'][s]['R@1']:.0f}" for s in STRATEGIES)
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=DEFAULT, help="embedding model (bench_models.py)")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "dates.json")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="mp-dates-"))
    (tmp / "home").mkdir()
    try:
        results: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M"), "model": args.model}
        results["notes"] = run_notes(args.model, tmp)
        results["lme"] = run_lme(args.model, tmp)
        results["locomo"] = run_locomo(args.model, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    results["seconds"] = round(time.perf_counter() - t0, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    md = markdown(results)
    args.out.with_suffix(".md").write_text(md, encoding="utf-8")
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
