"""How one drawer reads on a terminal: where it came from (a path relative to the mined folder,
with its line range), and its lines with line numbers and the query's terms highlighted.

Shared by `search` (the passage around the best-matching lines, or --full) and `show`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mempalace_cli.common.lazy import lazy
from mempalace_cli.search.passages import best_passage, query_terms, term_spans

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

rich_text = lazy("rich.text")

HIGHLIGHT = "bold yellow"
INDENT = 3


def relative_source(item: dict[str, Any]) -> str:
    """The drawer's source, relative to the folder it was mined from when it lies inside it;
    otherwise the path as filed, with the home folder shown as ~."""
    meta = item.get("metadata") or {}
    source = item.get("source_file") or meta.get("source_file") or ""
    if not source:
        return ""
    root = meta.get("source_root")
    if root:
        try:
            return Path(source).relative_to(root).as_posix()
        except ValueError:
            pass
    home = os.path.expanduser("~")
    if home not in ("", "/") and source.startswith(home + os.sep):
        return "~" + source[len(home) :]
    return source


def where_label(item: dict[str, Any]) -> str:
    """`path:start-end` for a file's drawer; the conversation and speakers for a chat."""
    meta = item.get("metadata") or {}
    if meta.get("ingest_mode") == "convos":
        title = meta.get("conversation_title") or Path(item.get("source_file") or "-").name
        return f"{title} ({meta['speakers']})" if meta.get("speakers") else str(title)
    label = relative_source(item) or "(no source file)"
    start = item.get("line_start", meta.get("line_start"))
    end = item.get("line_end", meta.get("line_end"))
    if start:
        label += f":{start}" + (f"-{end}" if end and end != start else "")
    return label


def fit_path(label: str, width: int) -> str:
    """`label` in at most `width` cells without wrapping: over-long paths lose their leading
    folders (…/service/knowledge.py:3-9), never the file name in the middle of a word."""
    if len(label) <= width or width < 8:
        return label
    tail = label[-(width - 1) :]
    cut = tail.find("/")
    if 0 <= cut < len(tail) - 1:
        tail = tail[cut:]
    return "…" + tail


def highlighted(line: str, terms: set[str]) -> Text:
    text = rich_text.Text(line)
    for start, end in term_spans(line, terms):
        text.stylize(HIGHLIGHT, start, end)
    return text


def numbered_lines(
    console: Console, lines: list[str], first_number: int | None, terms: set[str], width: int
) -> list[Text]:
    """Each line after its source line number; a long line wraps at word boundaries and
    continues under itself, not under the number. No trailing padding."""

    last = "" if first_number is None else str(first_number + len(lines) - 1)
    gutter = len(last)
    room = max(width - gutter - 3, 10)
    out: list[rich_text.Text] = []
    for i, line in enumerate(lines):
        number = "" if first_number is None else str(first_number + i)
        pieces = highlighted(line, terms).wrap(console, room, overflow="fold") or [
            rich_text.Text("")
        ]
        for n, piece in enumerate(pieces):
            lead = f"{number:>{gutter}} │ " if n == 0 else " " * (gutter + 3)
            line_text = rich_text.Text(lead, style="dim") + piece
            line_text.rstrip()
            out.append(line_text)
    return out


def drawer_lines(
    console: Console, item: dict[str, Any], query: str, full: bool, width: int
) -> list[Text]:
    """The passage of the drawer that best matches `query` (or all of it with `full`), with
    ⋮ marking drawer lines left out."""

    text = item.get("text") or ""
    terms = query_terms(query) if query else set()
    meta = item.get("metadata") or {}
    start = item.get("line_start", meta.get("line_start"))
    if full:
        lines, first, before, after = text.splitlines() or [""], 0, False, False
    else:
        passage = best_passage(text, query)
        lines, first = passage.lines, passage.first
        before, after = passage.cut_before, passage.cut_after
    number = start + first if isinstance(start, int) else None
    body = numbered_lines(console, lines, number, terms, width)
    gap = rich_text.Text("  ⋮", style="dim")
    return ([gap] if before else []) + body + ([gap] if after else [])


def print_indented(console: Console, lines: list[Text], indent: int = INDENT) -> None:
    for line in lines:
        console.print(rich_text.Text(" " * indent) + line, no_wrap=True, overflow="crop")


def wrap_segments(segments: list[Text], width: int, indent: int = INDENT) -> Text:
    """Segments joined by three spaces on one line while they fit, else continued on the
    next line (indented): a label is never parted from its value."""

    line = rich_text.Text()
    used = 0
    for segment in segments:
        if used and used + 3 + segment.cell_len > width:
            line.append("\n" + " " * indent)
            used = indent
        elif used:
            line.append("   ")
            used += 3
        line.append_text(segment)
        used += segment.cell_len
    return line


def copies_note(item: dict[str, Any]) -> list[Text]:
    """`(+2 copies)` beside a search hit that stands for copies of its text elsewhere in the
    palace (search folds them into one hit; `--json` lists their ids in duplicate_ids)."""

    count = item.get("duplicates") or 0
    if not count:
        return []
    return [rich_text.Text(f"(+{count} {'copy' if count == 1 else 'copies'})", style="yellow")]
