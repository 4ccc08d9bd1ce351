"""Read big JSON exports one record at a time.

`iter_json_array` walks a top-level JSON array (`conversations.json` can be hundreds of MB)
element by element with the standard library's C decoder, keeping only the current element
and a read buffer in memory. `iter_jsonl` does the same for one-object-per-line files.
Errors carry the line and column where parsing failed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from mempalace_cli.miners.convos.model import Exchange, ParseError, Problem

READ_CHARS = 1 << 20  # 1 Mi characters per read
# Python's JSON decoder recurses once per nesting level; past the interpreter's limit it raises
# RecursionError. No chat export nests anywhere near that deep.
TOO_DEEP = "JSON nested deeper than the reader allows (about 1,000 levels); not a chat export"
_WS = " \t\n\r"
_decoder = json.JSONDecoder()


class _Buffer:
    """A sliding window over a text file that remembers how far in (and how many lines) the
    dropped part was, so positions can be reported as line:column of the whole file."""

    def __init__(self, path: Path) -> None:
        self.fh = path.open("r", encoding="utf-8-sig", errors="strict", newline="")
        self.text = ""
        self.pos = 0
        self.eof = False
        self.dropped_lines = 0  # newlines in the part of the file already discarded
        self.dropped_tail = 0  # characters after the last discarded newline

    def close(self) -> None:
        self.fh.close()

    def more(self, at_least: int = READ_CHARS) -> bool:
        """Read more text; False at end of file."""
        if self.eof:
            return False
        # Discard what was consumed before growing the window.
        if self.pos:
            gone = self.text[: self.pos]
            newlines = gone.count("\n")
            if newlines:
                self.dropped_lines += newlines
                self.dropped_tail = len(gone) - gone.rfind("\n") - 1
            else:
                self.dropped_tail += len(gone)
            self.text = self.text[self.pos :]
            self.pos = 0
        try:
            chunk = self.fh.read(max(at_least, READ_CHARS))
        except UnicodeDecodeError as exc:
            raise ParseError(self.where(), f"not UTF-8 text ({exc.reason})") from exc
        if not chunk:
            self.eof = True
            return False
        self.text += chunk
        return True

    def skip_ws(self) -> str:
        """Move past whitespace; the next character, or "" at end of file."""
        while True:
            while self.pos < len(self.text) and self.text[self.pos] in _WS:
                self.pos += 1
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.more():
                return ""

    def where(self, pos: int | None = None) -> str:
        at = self.pos if pos is None else pos
        before = self.text[:at]
        newlines = before.count("\n")
        line = self.dropped_lines + newlines + 1
        col = at - before.rfind("\n") if newlines else self.dropped_tail + at + 1
        return f"line {line} column {col}"


def iter_json_array(path: Path) -> Iterator[Any]:
    """Yield each element of the JSON array that makes up the file, in order."""
    buf = _Buffer(path)
    try:
        if buf.skip_ws() != "[":
            raise ParseError(buf.where(), "expected a JSON array ('[')")
        buf.pos += 1
        first = True
        while True:
            ch = buf.skip_ws()
            if ch == "]":
                buf.pos += 1
                break
            if not first:
                if ch != ",":
                    raise ParseError(buf.where(), "expected ',' or ']' between array elements")
                buf.pos += 1
                buf.skip_ws()
            if buf.skip_ws() == "":
                raise ParseError(buf.where(), "the file ends inside the array (truncated?)")
            yield _decode_one(buf)
            first = False
        if buf.skip_ws() != "":
            raise ParseError(buf.where(), "unexpected text after the array")
    finally:
        buf.close()


def each_conversation(
    path: Path, parse_one: Callable[[dict[str, Any], str], Iterator[Exchange | Problem]]
) -> Iterator[Exchange | Problem]:
    """An export that is one JSON array of conversations (ChatGPT's, Claude.ai's), parsed one
    conversation at a time by `parse_one(conversation, where)`; an element that is not an
    object is a Problem, and the rest of the file is still read."""
    for position, conv in enumerate(iter_json_array(path)):
        where = f"conversation [{position}]"
        if isinstance(conv, dict):
            yield from parse_one(conv, where)
        else:
            yield Problem(where, "not a JSON object")


def _decode_one(buf: _Buffer) -> Any:
    """Decode the value at the buffer's position, reading more while it is incomplete. The
    read size doubles with each retry, so a huge element costs a few decodes, not thousands."""
    want = READ_CHARS
    while True:
        try:
            value, end = _decoder.raw_decode(buf.text, buf.pos)
        except RecursionError as exc:
            raise ParseError(buf.where(), TOO_DEEP) from exc
        except json.JSONDecodeError as exc:
            if buf.more(want):
                want *= 2
                continue
            raise ParseError(buf.where(exc.pos), f"invalid JSON ({exc.msg})") from exc
        # A number at the very end of the window may continue in the next read.
        if end == len(buf.text) and not buf.eof and buf.more(want):
            continue
        buf.pos = end
        return value


def iter_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """Yield (line number, value) for each non-blank line. A final line that is cut off (a
    session still being written) is ignored; a broken line before it is an error."""
    with path.open("r", encoding="utf-8-sig", errors="strict", newline="") as fh:
        pending: tuple[int, str, json.JSONDecodeError] | None = None
        lineno = 0
        try:
            for lineno, line in enumerate(fh, start=1):  # noqa: B007 - used after the loop
                if not line.strip():
                    continue
                if pending:
                    n, _, exc = pending
                    raise ParseError(f"line {n} column {exc.colno}", f"invalid JSON ({exc.msg})")
                try:
                    value = json.loads(line)
                except RecursionError as exc:
                    raise ParseError(f"line {lineno}", TOO_DEEP) from exc
                except json.JSONDecodeError as exc:
                    pending = (lineno, line, exc)
                    continue
                yield lineno, value
        except UnicodeDecodeError as exc:
            raise ParseError(f"line {lineno + 1}", f"not UTF-8 text ({exc.reason})") from exc
        if pending and pending[1].endswith("\n"):
            # A complete line (it ends with a newline) that is broken: not a partial write.
            n, _, exc = pending
            raise ParseError(f"line {n} column {exc.colno}", f"invalid JSON ({exc.msg})")
