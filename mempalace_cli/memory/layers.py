"""The wake-up context an agent loads at the start of a session, under a token budget.

Four layers of memory, cheapest first:
- L0 identity: `$MEMPALACE_HOME/identity.txt`, written by the user;
- L1 essential story: the drawers that matter most, one line each, grouped by room;
- L2 room recall and L3 deep search: the ordinary search calls, made on demand.
Wake-up assembles L0, L1 and the memory protocol. Everything is counted with the embedding
model's tokenizer and the result never exceeds the budget. No store or model is needed: the
drawers come from the catalogue.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from mempalace_cli.common.cjk import CJK_CLASS
from mempalace_cli.common.errors import ConfigError
from mempalace_cli.memory import aaak
from mempalace_cli.memory.protocol import PROTOCOL
from mempalace_cli.storage.catalog import DrawerRow

Counter = Callable[[str], int]

L0_NAME = "L0 identity"
L1_NAME = "L1 essential story"
PROTOCOL_NAME = "protocol"
DEFAULT_BUDGET = 1200
MIN_BUDGET = 50
MAX_BUDGET = 100_000
L0_SHARE = 0.25  # identity may use at most this share of the budget (and at least L0_FLOOR)
L0_FLOOR = 40
L1_MAX_ENTRIES = 40
L1_RESERVE = 60  # the full protocol is shown only if L1 keeps at least this many tokens
L1_MAX_MISSES = 20  # stop looking once this many entries in a row did not fit

L0_HEADER = "## L0 identity"
L1_HEADER = "## L1 essential story"
PROTOCOL_HEADER = "## Memory protocol"
PROTOCOL_POINTER = (
    "Not shown: it does not fit this budget. Read it with `mempalace wake-up --budget 1200` "
    "or the mempalace_wake_up tool."
)


def identity_hint(path: Path) -> str:
    return (
        f"No identity yet. Create {path} with a few lines on who you are, who you work with "
        "and what matters now."
    )


def read_identity(path: Path) -> str | None:
    """The identity text, or None when the file is missing or empty."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(
            f"Could not read the identity file {path}: {exc}.",
            hint="Check the file's permissions, or remove it to see the wake-up hint.",
        ) from exc
    return text.strip() or None


# -- budget fitting ---------------------------------------------------------------------------
# Pieces a text may be cut between: runs of spaces, single CJK characters, other words.
_PIECE = re.compile(rf"\s+|[{CJK_CLASS}]|[^\s{CJK_CLASS}]+")


def fit_text(text: str, count: Counter, limit: int) -> str:
    """`text` cut at a word boundary (with a trailing …) so it counts at most `limit` tokens.
    Chinese, Japanese and Korean text has no spaces: it may be cut between any two of its
    characters."""
    if count(text) <= limit:
        return text
    pieces = [p for p in _PIECE.findall(text) if p]
    lo, hi = 0, len(pieces)  # the longest prefix that fits, by binary search
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count("".join(pieces[:mid]).rstrip() + " …") <= limit:
            lo = mid
        else:
            hi = mid - 1
    head = "".join(pieces[:lo]).rstrip()
    return head + " …" if head else ""


# -- L1 selection -----------------------------------------------------------------------------
@dataclass(frozen=True)
class StoryEntry:
    row: DrawerRow
    stars: int
    kind: int  # weight of its strongest flag: decision > preference > milestone, people
    signal: int
    recency: float

    def sort_key(self) -> tuple[Any, ...]:
        # Newer wins by the day, so files written together are ranked by their signal.
        return (-self.stars, -self.kind, -(self.recency // 86400), -self.signal, self.row.id)


def _recency(row: DrawerRow) -> float:
    mtime = row.metadata.get("source_mtime")
    if isinstance(mtime, int | float) and math.isfinite(mtime):
        return float(mtime)
    try:
        return datetime.fromisoformat(row.filed_at).timestamp() if row.filed_at else 0.0
    except ValueError:
        return 0.0


def rank_drawers(rows: Iterable[DrawerRow]) -> list[StoryEntry]:
    """Drawers by what an agent most needs to know: importance metadata when present, else
    decisions, preferences, milestones and people over code and boilerplate; newer first on a
    tie. One entry per source file (its best chunk), so one long document can't fill L1."""
    best: dict[str, StoryEntry] = {}
    for row in rows:
        flags = aaak.find_flags(row.text, row.source_file)
        entry = StoryEntry(
            row,
            aaak.importance(row.metadata, flags),
            max((aaak.FLAGS[f][2] for f in flags), default=0),
            aaak.signal(row.text),
            _recency(row),
        )
        key = row.source_file or row.id
        if key not in best or entry.sort_key() < best[key].sort_key():
            best[key] = entry
    return sorted(best.values(), key=StoryEntry.sort_key)


def source_label(row: DrawerRow) -> str:
    if not row.source_file:
        return row.id
    label = Path(row.source_file).name
    start = row.metadata.get("line_start")
    return f"{label}:{start}" if isinstance(start, int) and start > 0 else label


def entry_line(entry: StoryEntry) -> str:
    row = entry.row
    rec = aaak.analyze(row.text, {**row.metadata, "source_file": row.source_file})
    return f"- {rec.key} ({source_label(row)})"


def story_layer(
    entries: list[StoryEntry], count: Counter, limit: int
) -> tuple[str, list[dict[str, Any]]]:
    """The L1 text: the best entries that fit `limit` tokens, grouped by room (rooms in the
    order of their best entry), and the chosen drawers as data."""
    used = count(L1_HEADER)
    if used > limit:
        return "", []
    chosen: list[tuple[StoryEntry, str]] = []
    rooms: set[tuple[str, str]] = set()
    misses = 0
    for entry in entries:
        if len(chosen) >= L1_MAX_ENTRIES or misses >= L1_MAX_MISSES:
            break
        line = entry_line(entry)
        place = (entry.row.wing, entry.row.room)
        cost = count(line) + (0 if place in rooms else count(_room_header(*place)))
        if used + cost > limit:
            misses += 1
            continue
        misses = 0
        used += cost
        rooms.add(place)
        chosen.append((entry, line))
    if not chosen:
        return "", []
    groups: dict[tuple[str, str], list[str]] = {}
    for entry, line in chosen:
        groups.setdefault((entry.row.wing, entry.row.room), []).append(line)
    lines = [L1_HEADER]
    for place, group in groups.items():
        lines.append(_room_header(*place))
        lines.extend(group)
    drawers = [
        {
            "drawer_id": e.row.id,
            "wing": e.row.wing,
            "room": e.row.room,
            "source_file": e.row.source_file,
            "importance": e.stars,
            "summary": line[2:],
        }
        for e, line in chosen
    ]
    return "\n".join(lines), drawers


def _room_header(wing: str, room: str) -> str:
    return f"[{wing or '-'}/{room or '-'}]"


# -- assembly ---------------------------------------------------------------------------------
def assemble(
    identity: str | None,
    identity_path: Path,
    entries: list[StoryEntry] | None,
    story_note: str | None,
    count: Counter,
    budget: int,
) -> dict[str, Any]:
    """Build the wake-up text from its parts within `budget` tokens.

    L0 comes first and is capped to a share of the budget; the protocol takes what it needs
    when it fits (else a one-line pointer to it); L1 fills what is left. `story_note` replaces
    the L1 entries when there is nothing to rank (no palace, empty wing...).
    """
    l0_body = identity if identity is not None else identity_hint(identity_path)
    l0_cap = min(budget, max(L0_FLOOR, int(budget * L0_SHARE)))
    l0 = fit_text(f"{L0_HEADER}\n{l0_body}", count, l0_cap)
    remaining = budget - count(l0)

    proto = f"{PROTOCOL_HEADER}\n{PROTOCOL.strip()}"
    if count(proto) > remaining - L1_RESERVE:
        proto = fit_text(f"{PROTOCOL_HEADER}\n{PROTOCOL_POINTER}", count, remaining)
        proto = proto if proto.endswith(PROTOCOL_POINTER) else ""
    remaining -= count(proto)

    drawers: list[dict[str, Any]] = []
    if story_note is not None or not entries:
        note = story_note or "The palace holds no drawers yet. Next: mempalace mine <dir>"
        l1 = fit_text(f"{L1_HEADER}\n{note}", count, remaining)
    else:
        l1, drawers = story_layer(entries, count, remaining)

    layers = [
        {"name": L0_NAME, "text": l0, "tokens": count(l0)},
        {"name": L1_NAME, "text": l1, "tokens": count(l1), "drawers": drawers},
        {"name": PROTOCOL_NAME, "text": proto, "tokens": count(proto)},
    ]
    text = "\n\n".join(layer["text"] for layer in layers if layer["text"])
    # The tokenizer splits on whitespace, so the parts add up exactly; this is only a guard.
    text = fit_text(text, count, budget)
    total = count(text)
    return {
        "text": text,
        "budget": budget,
        "total_tokens": total,
        "layers": layers,
        "identity_path": str(identity_path),
    }
