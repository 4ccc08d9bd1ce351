"""Cut text into overlapping chunks at paragraph or line boundaries, keeping line ranges.

Every chunk is a verbatim slice of the source text: nothing is normalised or dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CHUNK_CHARS = 800
OVERLAP_CHARS = 100
_SPACE = re.compile(r"\s")


@dataclass(frozen=True)
class Chunk:
    index: int
    text: str
    line_start: int  # 1-based, inclusive
    line_end: int


def _split_long_line(line: str, limit: int) -> list[str]:
    """Split one over-long line (minified code, a pasted blob) at whitespace, never mid-word
    unless a single word is longer than the limit."""
    pieces: list[str] = []
    rest = line
    while len(rest) > limit:
        cut = -1
        for m in _SPACE.finditer(rest, 0, limit):
            cut = m.end()
        if cut <= limit // 4:
            cut = limit
        pieces.append(rest[:cut])
        rest = rest[cut:]
    if rest:
        pieces.append(rest)
    return pieces


def chunk_text(text: str, size: int = CHUNK_CHARS, overlap: int = OVERLAP_CHARS) -> list[Chunk]:
    """Greedy packing of whole lines up to `size` characters, preferring to end a chunk at a
    blank line (paragraph) in its second half; the next chunk starts with whole lines covering
    about `overlap` characters of the previous one."""
    if not text.strip():
        return []
    # (piece, line number); long lines become several pieces on the same line number.
    units: list[tuple[str, int]] = []
    for lineno, line in enumerate(text.splitlines(keepends=True), start=1):
        if len(line) > size:
            units.extend((p, lineno) for p in _split_long_line(line, size))
        else:
            units.append((line, lineno))

    chunks: list[Chunk] = []
    start = 0
    while start < len(units):
        end, length = start, 0
        while end < len(units) and (length + len(units[end][0]) <= size or end == start):
            length += len(units[end][0])
            end += 1
        if end < len(units):
            # Prefer a paragraph break in the second half of the chunk.
            for k in range(end - 1, start, -1):
                if sum(len(units[j][0]) for j in range(start, k)) < size // 2:
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
        back, carried = end, 0
        while back - 1 > start and carried + len(units[back - 1][0]) <= overlap:
            back -= 1
            carried += len(units[back][0])
        start = back if back > start else end
    return chunks
