"""Passage vectors: a long drawer is also embedded piece by piece, and scored by its best piece.

Why: one vector for a long drawer is the average of everything it says (the default model reads
up to 8,000 characters and pools them; MiniLM stops at 256 tokens, about 1,000 characters, and
never sees the rest). A 20-turn conversation whose one relevant turn answers the question
scores like the conversation's average topic. So a drawer longer than PASSAGES_FROM also gets
one vector per passage (whole lines packed to about PASSAGE_CHARS, an over-long line cut at a
space or a CJK sentence mark), and the vector side of a search scores the drawer by the best
of its own vector and its passages' (benchmarks/README.md, "Scoring a long document by its
passages", measures the sizes and the rule).

The passages are not drawers: they live in the catalogue's `passages` table (the drawer's rowid,
their number, their vector), are deleted with their drawer or when its vector changes, and are
never listed, counted or shown. Drawers mined from files (about 800 characters) and chat
exchanges (up to about 1,260) are below PASSAGES_FROM and get none: only long drawers filed by
hand or by an agent, or a whole document filed as one drawer, do.

Sizes count a CJK character as four (about one model token, as much as four characters of
English), as the miners' chunker does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from mempalace_cli.common.cjk import CJK_CHAR, has_cjk
from mempalace_cli.common.lazy import lazy

np = lazy("numpy")

# A passage holds about this much text (CJK characters weigh 4). Chosen on the LoCoMo and
# LongMemEval dev sets (benchmarks/fusion_cv.py --passage-sizes): 400 against 200-1,600.
PASSAGE_CHARS = 400
# Only a drawer longer than this gets passage vectors: longer than any drawer the miners file
# (file chunks are at most 800, chat exchange parts 1,000 plus 240 of the question).
PASSAGES_FROM = 1_300
# At most this many passages a drawer (the first ones; past ~100,000 characters a drawer's
# passages would cost more to embed than they add).
MAX_PASSAGES = 256
CJK_WEIGHT = 4
# Where an over-long line may be cut: after whitespace or a CJK sentence or clause mark.
_CUT = re.compile(r".*[\s。！？；，、]", re.DOTALL)


def text_size(text: str) -> int:
    """Length with each CJK character counted CJK_WEIGHT times."""
    if not has_cjk(text):
        return len(text)
    return len(text) + (CJK_WEIGHT - 1) * len(CJK_CHAR.findall(text))


def passage_texts(text: str, size: int = PASSAGE_CHARS, start: int = PASSAGES_FROM) -> list[str]:
    """The passages of a drawer's text: none when it is at most `start` long, else its lines
    packed greedily into pieces of at most about `size` (a longer line is cut at the last
    space or CJK mark that fits, or at `size` characters when it has none). Pieces are
    verbatim slices; blank lines only separate them."""
    if text_size(text) <= start:
        return []
    units: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        units.extend(_cut_line(line, size))
    out: list[str] = []
    current: list[str] = []
    used = 0
    for unit in units:
        n = text_size(unit) + 1
        if current and used + n > size:
            out.append("\n".join(current))
            current, used = [], 0
            if len(out) >= MAX_PASSAGES:
                return out
        current.append(unit)
        used += n
    if current and len(out) < MAX_PASSAGES:
        out.append("\n".join(current))
    return out if len(out) > 1 else []


def _cut_line(line: str, size: int) -> list[str]:
    weight = text_size(line)
    if weight <= size:
        return [line]
    limit = max(1, size * len(line) // weight)  # characters of this line per piece
    pieces: list[str] = []
    pos = 0
    while len(line) - pos > limit:
        m = _CUT.match(line, pos, pos + limit)
        cut = m.end() - pos if m else -1
        if cut <= limit // 4:
            cut = limit
        piece = line[pos : pos + cut].strip()
        if piece:
            pieces.append(piece)
        pos += cut
    rest = line[pos:].strip()
    if rest:
        pieces.append(rest)
    return pieces


def embed_passages(
    drawers: Iterable[tuple[str, str]], embed: Callable[[list[str]], Any]
) -> dict[str, Any]:
    """The passage vectors of the long drawers among `drawers` ((id, text) pairs): id ->
    (passages, dim) matrix, every passage embedded in one call of `embed`. Empty (and `embed`
    not called) when none is longer than PASSAGES_FROM."""
    pieces = {drawer_id: passage_texts(text) for drawer_id, text in drawers}
    flat = [p for found in pieces.values() for p in found]
    if not flat:
        return {}
    vectors = embed(flat)
    out: dict[str, Any] = {}
    at = 0
    for drawer_id, found in pieces.items():
        if found:
            out[drawer_id] = vectors[at : at + len(found)]
            at += len(found)
    return out


def best_similarity(similarities: Any, owners: Any, passage_similarities: Any) -> Any:
    """`similarities` (one per drawer) raised to each drawer's closest passage's where higher:
    `owners` holds, per passage, its drawer's position in `similarities`."""
    if len(owners):
        np.maximum.at(similarities, owners, passage_similarities.astype(similarities.dtype))
    return similarities


def unit_passages(catalog: Any, ids: list[str], wing: Any, room: Any, filt: Any) -> Any:
    """For an exact ranking over every drawer in wing/room (or `filt`) whose ids are `ids`:
    (owners, unit passage matrix), `owners` giving each passage's drawer position in `ids`;
    None when none of them has passages."""
    owners, matrix = catalog.passage_vectors(wing, room, filt=filt)
    if matrix is None:
        return None
    at = {drawer_id: i for i, drawer_id in enumerate(ids)}
    keep = [k for k, drawer_id in enumerate(owners) if drawer_id in at]
    if not keep:
        return None
    matrix = matrix[keep]
    unit = matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    return np.asarray([at[owners[k]] for k in keep], dtype=np.int64), unit
