"""Cut text into overlapping chunks at paragraph or line boundaries, keeping line ranges.

Every chunk is a verbatim slice of the source text: nothing is normalised or dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mempalace_cli.common.cjk import CJK_CHAR, has_cjk

CHUNK_CHARS = 800
OVERLAP_CHARS = 100
# Everything up to and including the last whitespace character or CJK sentence/clause mark
# (greedy, then one backtrack): where an over-long line may be cut.
_UP_TO_LAST_SPACE = re.compile(r".*[\s。！？；，、]", re.DOTALL)
# Sizes are in English-equivalent characters: a CJK character costs about one model token,
# as much as four characters of English, so it counts 4 (English-only text is unaffected).
CJK_CHAR_WEIGHT = 4


def text_size(text: str) -> int:
    if not has_cjk(text):
        return len(text)
    return len(text) + (CJK_CHAR_WEIGHT - 1) * len(CJK_CHAR.findall(text))


@dataclass(frozen=True)
class Chunk:
    index: int
    text: str
    line_start: int  # 1-based, inclusive
    line_end: int


def _split_long_line(line: str, limit: int) -> list[str]:
    """Split one over-long line (minified code, a pasted blob, a Chinese paragraph) at
    whitespace or CJK punctuation, never mid-word unless a single word is longer than the
    limit (in characters of this line). Linear: each cut looks at one window of `limit`
    characters, and the line is never copied except into its pieces."""
    pieces: list[str] = []
    pos, end = 0, len(line)
    while end - pos > limit:
        m = _UP_TO_LAST_SPACE.match(line, pos, pos + limit)
        cut = m.end() - pos if m else -1
        if cut <= limit // 4:
            cut = limit
        pieces.append(line[pos : pos + cut])
        pos += cut
    if pos < end:
        pieces.append(line[pos:])
    return pieces


def chunk_text(text: str, size: int = CHUNK_CHARS, overlap: int = OVERLAP_CHARS) -> list[Chunk]:
    """Greedy packing of whole lines up to `size` characters, preferring to end a chunk at a
    blank line (paragraph) in its second half; the next chunk starts with whole lines covering
    about `overlap` characters of the previous one. Linear in the text's length: lengths of
    runs of units come from a prefix sum, never from re-adding them."""
    if not text.strip():
        return []
    # (piece, line number); long lines become several pieces on the same line number.
    units: list[tuple[str, int]] = []
    for lineno, line in enumerate(text.splitlines(keepends=True), start=1):
        line_size = text_size(line)
        if line_size > size:
            # The cut in characters that makes each piece about `size` in size.
            limit = max(1, size * len(line) // line_size)
            units.extend((p, lineno) for p in _split_long_line(line, limit))
        else:
            units.append((line, lineno))
    # prefix[i] = size of units[:i] (text_size: CJK characters weigh more)
    prefix = [0]
    for piece, _ in units:
        prefix.append(prefix[-1] + text_size(piece))

    chunks: list[Chunk] = []
    start = 0
    while start < len(units):
        end = start + 1  # a chunk holds at least one unit
        while end < len(units) and prefix[end + 1] - prefix[start] <= size:
            end += 1
        if end < len(units):
            # Prefer a paragraph break in the second half of the chunk.
            for k in range(end - 1, start, -1):
                if prefix[k] - prefix[start] < size // 2:
                    break
                if not units[k][0].strip():
                    end = k + 1
                    break
        body = "".join(u[0] for u in units[start:end])
        if body.strip():
            chunks.append(Chunk(len(chunks), body, units[start][1], units[end - 1][1]))
        if end >= len(units):
            break
        # Step back over whole units worth about `overlap` characters.
        back = end
        while back - 1 > start and prefix[end] - prefix[back - 1] <= overlap:
            back -= 1
        start = back if back > start else end
    return chunks
