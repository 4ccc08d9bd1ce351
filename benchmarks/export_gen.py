"""Write a ChatGPT-format export (`conversations.json`) of about --size-mb megabytes.

    python benchmarks/export_gen.py OUT_DIR --size-mb 200 [--grow 0.01]

The words are real: user and assistant turns of the LongMemEval-S dev haystack
(../shared/bench, read at run time; nothing of it is stored in this repository), recombined at
random (seeded) into conversations of 4-30 exchanges, so that every exchange is distinct.
Without that file, synthetic sentences stand in. `--grow 0.01` writes the same export followed
by 1% more conversations: the first part is byte-for-byte the same conversations, so a re-mine
should embed only the new exchanges. Prints a JSON summary (conversations, exchanges, bytes).
Never commit the output.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale import BENCH, TurnPool  # noqa: E402


def conversation(pool: TurnPool, rng: random.Random, number: int) -> tuple[dict[str, Any], int]:
    """One conversation in ChatGPT's export shape (a mapping of nodes, one linear branch)."""
    exchanges = rng.randint(4, 30)
    base = 1_700_000_000 + number * 3600
    mapping: dict[str, Any] = {}
    root = str(uuid.UUID(int=rng.getrandbits(128)))
    mapping[root] = {"id": root, "message": None, "parent": None, "children": []}
    parent = root
    for i in range(exchanges * 2):
        role = "user" if i % 2 == 0 else "assistant"
        turns = pool.user if role == "user" else pool.assistant
        text = turns[rng.randrange(len(turns))]
        if role == "assistant":  # a window of the answer: recombined, and distinct
            start = rng.randrange(max(1, len(text) - 400))
            text = text[start : start + rng.randint(300, 1500)]
        node = str(uuid.UUID(int=rng.getrandbits(128)))
        mapping[node] = {
            "id": node,
            "message": {
                "id": node,
                "author": {"role": role, "name": None, "metadata": {}},
                "create_time": base + i * 30.0,
                "content": {"content_type": "text", "parts": [text]},
                "status": "finished_successfully",
                "metadata": {},
            },
            "parent": parent,
            "children": [],
        }
        mapping[parent]["children"].append(node)
        parent = node
    conv = {
        "title": f"Conversation {number}",
        "create_time": float(base),
        "update_time": base + exchanges * 60.0,
        "mapping": mapping,
        "current_node": parent,
        "conversation_id": str(uuid.UUID(int=rng.getrandbits(128))),
    }
    return conv, exchanges


def write_export(out_dir: Path, size_mb: float, grow: float = 0.0, data: Path = BENCH) -> dict:
    """Write out_dir/conversations.json; the first conversations are the same for any --grow."""
    pool = TurnPool(data)
    rng = random.Random(2024)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = size_mb * 1_000_000
    written, convs, exchanges = 0, 0, 0
    base_convs = None
    path = out_dir / "conversations.json"
    with open(path, "w", encoding="utf-8") as f:
        f.write("[")
        while True:
            if base_convs is None and written >= target:
                base_convs = convs
                if not grow:
                    break
            if base_convs is not None and convs >= base_convs + max(1, round(base_convs * grow)):
                break
            conv, n = conversation(pool, rng, convs)
            text = json.dumps(conv, ensure_ascii=False)
            f.write(("," if convs else "") + "\n" + text)
            written += len(text.encode("utf-8")) + 2
            convs += 1
            exchanges += n
        f.write("\n]\n")
    return {
        "path": str(path),
        "bytes": path.stat().st_size,
        "conversations": convs,
        "exchanges": exchanges,
        "base_conversations": base_convs,
        "text_source": pool.source,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--size-mb", type=float, default=200.0)
    ap.add_argument("--grow", type=float, default=0.0, help="extra share of conversations")
    ap.add_argument("--data", type=Path, default=BENCH)
    args = ap.parse_args(argv)
    print(json.dumps(write_export(args.out_dir, args.size_mb, args.grow, args.data), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
