"""The normalised shape every chat-export parser yields, and helpers they share.

A parser turns one export file into `Exchange` records: one user turn and the reply to it, in
the original words, with who said them and when. Everything format-specific stays in the
parser modules; the service only ever sees exchanges.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

USER = "user"
ASSISTANT = "assistant"


class ParseError(Exception):
    """The file can't be read as the format it looked like; `where` says the line or key."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}")
        self.where = where
        self.problem = problem


@dataclass(frozen=True)
class Turn:
    role: str  # USER or ASSISTANT: which side of the exchange the words belong to
    speaker: str  # who spoke, as the export names them ("user", "Human", "Alice Chen")
    text: str
    timestamp: str | None = None  # ISO 8601, UTC


@dataclass(frozen=True)
class Exchange:
    format: str  # claude_code, claude_ai, chatgpt, codex, slack, plain_text
    conversation_id: str  # stable across exports ("" when the format has none)
    title: str
    index: int  # position of the exchange in its conversation, from 0
    user: str  # the user's turn, verbatim ("" when a reply opens the conversation)
    reply: str  # the reply, verbatim ("" when nobody answered yet)
    user_speaker: str
    reply_speaker: str
    timestamp: str | None = None  # of the user's turn, else of the reply


@dataclass(frozen=True)
class Problem:
    """A part of a file that was left out (one conversation of an export, say); the rest of the
    file is still mined."""

    where: str
    problem: str


def iso_time(value: Any) -> str | None:
    """Epoch seconds (number or numeric string, as ChatGPT and Slack write them) or an ISO
    8601 string, as ISO 8601 in UTC to the second; None when there is no usable time."""
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        if isinstance(value, int | float):
            moment = datetime.fromtimestamp(float(value), UTC)
        else:
            text = str(value).strip()
            try:
                moment = datetime.fromtimestamp(float(text), UTC)
            except ValueError:
                moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
                if moment.tzinfo is None:
                    moment = moment.replace(tzinfo=UTC)
                moment = moment.astimezone(UTC)
    except (ValueError, OverflowError, OSError):
        return None
    return moment.isoformat(timespec="seconds")


def first_line_title(text: str, width: int = 80) -> str:
    """A title for a conversation that has none: the first non-empty line of its first turn."""
    for line in text.splitlines():
        line = " ".join(line.split())
        if line:
            if len(line) <= width:
                return line
            cut = line.rfind(" ", 0, width - 1)
            return line[: cut if cut > width // 2 else width - 1] + "…"
    return ""


def first_user_line(turns: Iterable[Turn]) -> str:
    """The title of a conversation the export leaves untitled: its first user turn's first
    line (`first_line_title`)."""
    return first_line_title(next((t.text for t in turns if t.role == USER), ""))


def pair_turns(
    turns: Iterable[Turn], fmt: str, conversation_id: str, title: str | None = None
) -> Iterator[Exchange]:
    """Group turns into exchanges: consecutive turns of one side join (blank line between),
    and each user turn with the replies that follow it makes one exchange. Replies before any
    user turn form an exchange with an empty user side, so no words are lost. A conversation
    the export leaves untitled (`title` None) is titled by `first_user_line`."""
    turns = list(turns)
    if title is None:
        title = first_user_line(turns)
    user: list[Turn] = []
    reply: list[Turn] = []
    index = 0

    def flush() -> Exchange | None:
        nonlocal index
        if not user and not reply:
            return None
        stamp = next((t.timestamp for t in user + reply if t.timestamp), None)
        ex = Exchange(
            format=fmt,
            conversation_id=conversation_id,
            title=title,
            index=index,
            user="\n\n".join(t.text for t in user),
            reply="\n\n".join(t.text for t in reply),
            user_speaker=_speakers(user),
            reply_speaker=_speakers(reply),
            timestamp=stamp,
        )
        index += 1
        return ex

    for turn in turns:
        if not turn.text.strip():
            continue
        if turn.role == USER:
            if reply:
                ex = flush()
                if ex:
                    yield ex
                user, reply = [], []
            user.append(turn)
        else:
            reply.append(turn)
    ex = flush()
    if ex:
        yield ex


def _speakers(turns: list[Turn]) -> str:
    return ", ".join(dict.fromkeys(t.speaker for t in turns))
