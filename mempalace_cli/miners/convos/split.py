"""Turn one exchange into drawer texts: the user's turn quoted with `> ` (the convention the
plain-text reader understands, so a drawer reads back as a transcript), then the reply.

An exchange longer than DRAWER_CHARS becomes several drawers. Cuts fall at paragraph breaks,
else line breaks, else sentence ends, else spaces: never inside a word, unless one "word"
(a pasted hash or blob) is itself longer than a drawer. Every reply part starts with the
user's question (shortened to CONTEXT_CHARS at a word boundary when it is long) so each drawer
can be read, and found, on its own.
"""

from __future__ import annotations

import re

DRAWER_CHARS = 1000  # about what the embedding model reads (256 tokens)
CONTEXT_CHARS = 240
MIN_PART_CHARS = 300
# From coarsest to finest; each match is a place a cut may follow.
_BREAKS = (
    re.compile(r"\n[ \t]*\n\s*"),
    re.compile(r"\n"),
    re.compile(r"(?<=[.!?…])[\"')\]]*\s+"),
    re.compile(r"\s+"),
)


def quote(text: str) -> str:
    return "\n".join(f"> {line}" if line.strip() else ">" for line in text.splitlines())


def render(user: str, reply: str) -> str:
    if not user:
        return reply
    return quote(user) + ("\n\n" + reply if reply else "")


def _pieces(text: str, pattern: re.Pattern[str]) -> list[str]:
    """`text` cut after each match of `pattern`; the pieces join back to `text`."""
    out, start = [], 0
    for m in pattern.finditer(text):
        if m.end() > start and m.end() < len(text):
            out.append(text[start : m.end()])
            start = m.end()
    out.append(text[start:])
    return [p for p in out if p]


def split_text(text: str, limit: int, level: int = 0) -> list[str]:
    """Pack `text` into parts of at most `limit` characters, cutting at the coarsest break
    that makes the parts fit. Parts are verbatim slices, trimmed of surrounding whitespace."""
    text = text.strip()
    if len(text) <= limit:
        return [text] if text else []
    if level == len(_BREAKS):
        return [text[i : i + limit] for i in range(0, len(text), limit)]
    parts: list[str] = []
    current = ""
    for piece in _pieces(text, _BREAKS[level]):
        if len(piece.strip()) > limit:
            if current.strip():
                parts.append(current.strip())
            current = ""
            parts.extend(split_text(piece, limit, level + 1))
        elif len(current) + len(piece.rstrip()) <= limit:
            current += piece
        else:
            if current.strip():
                parts.append(current.strip())
            current = piece
    if current.strip():
        parts.append(current.strip())
    return parts


def shorten(text: str, limit: int = CONTEXT_CHARS) -> str:
    """The start of `text`, cut at a sentence end or space, with … when something was cut."""
    text = text.strip()
    if len(text) <= limit:
        return text
    head = text[:limit]
    for pattern in (_BREAKS[2], _BREAKS[3]):
        cuts = [m.start() for m in pattern.finditer(head) if m.start() > limit // 3]
        if cuts:
            return head[: cuts[-1]].rstrip() + " …"
    return head.rstrip() + "…"


def split_exchange(user: str, reply: str, limit: int = DRAWER_CHARS) -> list[str]:
    """The drawer texts for one exchange, in order."""
    whole = render(user, reply)
    if len(whole) <= limit:
        return [whole]
    parts: list[str] = []
    context = user
    if len(quote(user)) > CONTEXT_CHARS + 20:
        # A long question gets drawers of its own; reply parts carry its opening as context.
        parts += [quote(p) for p in split_text(user, limit - limit // 8)]
        context = shorten(user)
    room = max(limit - len(render(context, "")) - 2, MIN_PART_CHARS)
    parts += [render(context, p) for p in split_text(reply, room)]
    return parts
