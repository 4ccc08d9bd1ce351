"""The passage of a drawer that best answers a query, and where its query terms are.

A drawer is about 800 characters; a person scanning results wants the few lines that match,
not the drawer's first 200 characters. Matching is deliberately simple and explainable: a
query word matches a text word with the same crude stem ("failures" ~ "failure"), CJK
characters match one by one. No rich/typer here: the CLI styles the spans this returns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mempalace_cli.common.cjk import CJK_CHAR as _CJK
from mempalace_cli.common.wordlists import STOPWORDS

PASSAGE_LINES = 6
PASSAGE_CHARS = 480
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Passage:
    first: int  # index of the first line of the passage in the drawer's text (0-based)
    lines: list[str]  # the passage's lines, verbatim (over-long lines cut around a match)
    matched: bool  # whether any query term occurs in it
    cut_before: bool  # lines of the drawer come before the passage
    cut_after: bool  # ...and after it


def stem(word: str) -> str:
    """A crude stem: move, moved, moves -> mov; failure, failures -> failur."""
    word = word.lower()
    for suffix in ("ing", "ies", "es", "ed", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            word = word[: -len(suffix)]
            break
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


def query_terms(query: str) -> set[str]:
    """The stems of the query's meaningful words, plus each CJK character on its own."""
    terms: set[str] = set()
    for word in _WORD.findall(query):
        if _CJK.search(word):
            terms.update(_CJK.findall(word))
            continue
        if word.lower() not in STOPWORDS and len(word) > 1:
            terms.add(stem(word))
    return terms


def term_spans(line: str, terms: set[str]) -> list[tuple[int, int]]:
    """(start, end) of every query term in `line`, in order, not overlapping."""
    if not terms:
        return []
    spans: list[tuple[int, int]] = []
    for m in _WORD.finditer(line):
        word = m.group()
        if _CJK.search(word):
            spans += [
                (m.start() + c.start(), m.start() + c.end())
                for c in _CJK.finditer(word)
                if c.group() in terms
            ]
        elif stem(word) in terms:
            spans.append(m.span())
    return spans


def _line_terms(line: str, terms: set[str]) -> set[str]:
    found = set()
    for start, end in term_spans(line, terms):
        piece = line[start:end]
        found.add(piece if _CJK.match(piece) else stem(piece))
    return found


def best_passage(
    text: str, query: str, max_lines: int = PASSAGE_LINES, max_chars: int = PASSAGE_CHARS
) -> Passage:
    """The window of at most `max_lines` lines (and about `max_chars` characters) covering the
    most distinct query terms, then the most hits, then opening closest to its first hit; the
    earliest wins ties. Without any hit, the drawer's first lines."""
    lines = text.splitlines() or [""]
    terms = query_terms(query)
    per_line = [_line_terms(line, terms) for line in lines]
    hits = [len(term_spans(line, terms)) for line in lines]
    best = (-1, -1, 0, 0, 1)  # (distinct terms, hits, -lines before the first hit, first, end)
    for first in range(len(lines)):
        if not lines[first].strip() and first + 1 < len(lines):
            continue  # never open a passage on a blank line
        seen: set[str] = set()
        count, chars, lead = 0, 0, None
        for end in range(first, min(len(lines), first + max_lines)):
            if end > first and chars + len(lines[end]) > max_chars:
                break
            seen |= per_line[end]
            count += hits[end]
            chars += len(lines[end]) + 1
            if lead is None and hits[end]:
                lead = end - first
            score = (len(seen), count, -(lead or 0))
            if score > best[:3]:
                best = (len(seen), count, -(lead or 0), first, end + 1)
    _, count, _, first, end = best
    if count <= 0:  # nothing matched: the opening lines, as many as fit
        first, end, chars = 0, 0, 0
        limit = min(len(lines), max_lines)
        while end < limit and (end == 0 or chars + len(lines[end]) <= max_chars):
            chars += len(lines[end]) + 1
            end += 1
    else:  # a little context after a short hit, within the limits
        chars = sum(len(x) + 1 for x in lines[first:end])
        while end < len(lines) and end - first < 3 and chars + len(lines[end]) <= max_chars:
            chars += len(lines[end]) + 1
            end += 1
    while end - 1 > first and not lines[end - 1].strip():
        end -= 1
    window = [_cut_long_line(line, terms, max_chars) for line in lines[first:end]]
    return Passage(first, window, count > 0, first > 0, end < len(lines))


def _cut_long_line(line: str, terms: set[str], max_chars: int) -> str:
    """A line longer than `max_chars`, cut to about that many characters around its first
    match (at word boundaries), with … where text was left out."""
    if len(line) <= max_chars:
        return line
    spans = term_spans(line, terms)
    centre = spans[0][0] if spans else 0
    start = max(0, centre - max_chars // 3)
    end = min(len(line), start + max_chars)
    if start > 0:
        space = line.find(" ", start)
        start = space + 1 if 0 <= space < centre else start
    if end < len(line):
        space = line.rfind(" ", start, end)
        end = space if space > start else end
    return ("…" if start > 0 else "") + line[start:end] + ("…" if end < len(line) else "")
