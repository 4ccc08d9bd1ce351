"""How to split Chinese for the keyword index: bigrams vs a segmenter vs FTS5's trigram.

Every variant indexes the bilingual dev set's notes (tests/data/bilingual_dev.json) in an
in-memory FTS5 table and answers the same-language queries lexically (BM25, terms OR-ed, the
same stopwords); reported: recall@1/@3 for zh->zh (paraphrase and keyword queries apart) and
en->en, the time to load the splitter, and how fast it splits Chinese text.

    pip install jieba rjieba      # only for this comparison; the product needs neither
    python benchmarks/cjk_tokenizers.py

Variants: `unicode61` (before: a run of Chinese is one token), `bigrams` (the product:
mempalace_cli/common/cjk.py), `trigram` (FTS5's trigram tokenizer, the approach MemPalace 3.11 takes
with Chroma), `jieba` and `rjieba` (dictionary segmenters; query and notes segmented alike).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from mempalace_cli.common.cjk import index_text  # noqa: E402
from mempalace_cli.common.wordlists import STOPWORDS  # noqa: E402
from mempalace_cli.storage.catalog import fts_query  # noqa: E402

DEV_SET = REPO / "tests" / "data" / "bilingual_dev.json"
Splitter = Callable[[str], str]


def _plain_query(words: list[str]) -> str | None:
    terms = [w for w in words if w.lower() not in STOPWORDS and w.strip()]
    terms = list(dict.fromkeys(t.lower() for t in terms))
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms) or None


def _segmenter(name: str) -> tuple[Splitter, float]:
    t0 = time.perf_counter()
    if name == "jieba":
        import jieba

        jieba.setLogLevel(60)
        jieba.initialize()
        cut: Callable[[str], list[str]] = lambda s: list(jieba.cut(s))  # noqa: E731
    else:
        import rjieba

        cut = rjieba.cut
    cut("预热")
    return (lambda s: " ".join(cut(s))), time.perf_counter() - t0


def variants() -> dict[str, dict[str, Any]]:
    import re

    word = re.compile(r"\w+")
    out: dict[str, dict[str, Any]] = {
        "unicode61 (before)": {
            "tokenize": "porter unicode61 remove_diacritics 2",
            "index": lambda s: s,
            "query": lambda q: _plain_query(word.findall(q)),
            "load": 0.0,
        },
        "bigrams (chosen)": {
            "tokenize": "porter unicode61 remove_diacritics 2",
            "index": index_text,
            "query": fts_query,
            "load": 0.0,
        },
        "trigram": {
            "tokenize": "trigram",
            "index": lambda s: s,
            # trigram matches substrings of 3+ characters; shorter terms can't match at all
            "query": lambda q: _plain_query(word.findall(q)),
            "load": 0.0,
        },
    }
    for name in ("jieba", "rjieba"):
        try:
            split, load = _segmenter(name)
        except ImportError:
            continue
        out[name] = {
            "tokenize": "porter unicode61 remove_diacritics 2",
            "index": split,
            "query": lambda q, split=split: _plain_query(word.findall(split(q))),
            "load": load,
        }
    return out


def evaluate(v: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    conn = sqlite3.connect(":memory:")
    conn.execute(
        f"CREATE VIRTUAL TABLE t USING fts5(id UNINDEXED, text, tokenize='{v['tokenize']}')"
    )
    zh_text = "".join(n["text"] for n in data["notes"] if n["lang"] == "zh")
    t0 = time.perf_counter()
    for _ in range(20):
        v["index"](zh_text)
    chars_per_s = 20 * len(zh_text) / max(time.perf_counter() - t0, 1e-9)
    for n in data["notes"]:
        conn.execute("INSERT INTO t(id, text) VALUES (?, ?)", (n["id"], v["index"](n["text"])))
    groups: dict[str, list[tuple[float, float]]] = {}
    for q in data["queries"]:
        if q["direction"] not in ("zh->zh", "en->en"):
            continue
        match = v["query"](q["query"])
        ranked = []
        if match:
            ranked = [
                r[0]
                for r in conn.execute(
                    "SELECT id FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 3", (match,)
                )
            ]
        hit = (float(q["target"] in ranked[:1]), float(q["target"] in ranked[:3]))
        key = f"{q['direction']} {q['kind']}" if q["direction"] == "zh->zh" else q["direction"]
        groups.setdefault(key, []).append(hit)
    out = {
        k: {
            "r@1": round(sum(h[0] for h in hs) / len(hs), 3),
            "r@3": round(sum(h[1] for h in hs) / len(hs), 3),
            "n": len(hs),
        }
        for k, hs in sorted(groups.items())
    }
    return out | {"load_s": round(v["load"], 2), "chars_per_s": int(chars_per_s)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--out", type=Path, default=REPO / "benchmarks" / "results" / "cjk_tokenizers.json"
    )
    args = ap.parse_args(argv)
    data = json.loads(DEV_SET.read_text(encoding="utf-8"))
    results = {name: evaluate(v, data) for name, v in variants().items()}
    cols = ["zh->zh paraphrase", "zh->zh keyword", "en->en"]
    lines = [
        "| splitter | "
        + " | ".join(f"{c} R@1 / R@3" for c in cols)
        + " | load s | Chinese chars/s |",
        "|---|" + "---|" * (len(cols) + 2),
    ]
    for name, r in results.items():
        cells = [f"{r[c]['r@1']:.2f} / {r[c]['r@3']:.2f}" for c in cols]
        lines.append(
            f"| {name} | " + " | ".join(cells) + f" | {r['load_s']} | {r['chars_per_s']:,} |"
        )
    table = "\n".join(lines)
    args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    args.out.with_suffix(".md").write_text(
        "# Splitting Chinese for the keyword index\n\n"
        "Command: `python benchmarks/cjk_tokenizers.py`\n\n" + table + "\n",
        encoding="utf-8",
    )
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
