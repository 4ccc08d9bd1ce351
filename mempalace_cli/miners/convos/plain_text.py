"""Plain-text transcripts (`.txt`, `.md`, anything textual).

Two conventions are recognised:
- speaker prefixes: a line starting `User:` / `Human:` / `You:` opens a user turn and one
  starting `Assistant:` / `AI:` / `Claude:` / `ChatGPT:` (and a few more) opens a reply;
  markdown bold around the label (`**User:**`) is accepted; the turn runs until the next label;
- quoted user turns (MemPalace's convention): lines starting with `>` are the user's turn,
  and the lines after them, up to the next `>` line, are the reply.
Prefixes win when a file has both kinds of line. A short first line before any turn (a
markdown heading, say) becomes the title; other text before the first turn is kept as an
exchange of its own, spoken by "note".
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from mempalace_cli.miners.convos.model import (
    ASSISTANT,
    USER,
    Exchange,
    ParseError,
    Problem,
    Turn,
    first_user_line,
    pair_turns,
)
from mempalace_cli.miners.project import FileText, read_text_file

FORMAT = "plain_text"
MAX_BYTES = 50_000_000
TITLE_CHARS = 120
_USER_LABELS = {"user", "human", "you", "me"}
_REPLY_LABELS = {
    "assistant",
    "ai",
    "claude",
    "chatgpt",
    "gpt",
    "bot",
    "gemini",
    "model",
    "copilot",
    "codex",
}
_PREFIX = re.compile(
    r"^\*{0,2}(?P<label>" + "|".join(sorted(_USER_LABELS | _REPLY_LABELS)) + r")\*{0,2}\s*:"
    r"\*{0,2}[ \t]?(?P<rest>.*)$",
    re.IGNORECASE,
)
_QUOTE = re.compile(r"^>[ \t]?(?P<rest>.*)$")


def transcript_mode(lines: list[str]) -> str | None:
    """'prefix', 'quote', or None when the text is not a transcript."""
    sides = set()
    quoted = other = 0
    for line in lines:
        m = _PREFIX.match(line)
        if m:
            sides.add(USER if m.group("label").lower() in _USER_LABELS else ASSISTANT)
        elif _QUOTE.match(line):
            quoted += 1
        elif line.strip():
            other += 1
    if sides == {USER, ASSISTANT}:
        return "prefix"
    if quoted and other:
        return "quote"
    return None


def looks_like(head: str) -> bool:
    return transcript_mode(head.splitlines()[:2000]) is not None


def turns_of(text: str) -> tuple[list[Turn], str]:
    """(turns, title) for a transcript's text."""
    lines = text.splitlines()
    mode = transcript_mode(lines)
    if mode is None:
        raise ParseError("line 1", "no 'User:'/'Assistant:' speaker lines or '>' user turns")
    title = ""
    turns: list[Turn] = []
    role, speaker, body = ASSISTANT, "", []  # text before the first turn: the preamble

    def close() -> None:
        content = "\n".join(body).strip()
        if content:
            turns.append(Turn(role, speaker or "note", content))

    for line in lines:
        if mode == "prefix":
            m = _PREFIX.match(line)
            if m:
                close()
                label = m.group("label")
                role = USER if label.lower() in _USER_LABELS else ASSISTANT
                speaker, body = label, [m.group("rest")]
                continue
        else:
            m = _QUOTE.match(line)
            if m:
                if role != USER or not speaker:
                    close()
                    role, speaker, body = USER, "user", []
                body.append(m.group("rest"))
                continue
            if role == USER and speaker:
                close()
                role, speaker, body = ASSISTANT, "assistant", []
        first = not speaker and not title and not "".join(body).strip()
        if first and line.strip() and len(line.strip()) <= TITLE_CHARS:
            title = line.strip().lstrip("#").strip()
            continue
        body.append(line)
    close()
    if not title:
        title = first_user_line(turns)
    return turns, title


def parse(path: Path) -> Iterator[Exchange | Problem]:
    content = read_text_file(path, MAX_BYTES)
    if not isinstance(content, FileText):
        raise ParseError("file", content)
    turns, title = turns_of(content.text)
    yield from pair_turns(turns, FORMAT, "", title)
