"""Conversation mining: chat exports from six tools become verbatim exchanges.

`detect(path)` names a file's format from its content; `read_exchanges(path, fmt)` streams
its `Exchange` records (and `Problem`s for parts it had to leave out); `plan_drawers` turns
exchanges into drawer texts with content-derived keys and topic rooms. Nothing here writes:
the service (`mempalace_cli.service.convos`) files the drawers.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mempalace_cli.miners.convos import chatgpt, claude_ai, claude_code, codex, plain_text, slack
from mempalace_cli.miners.convos.detect import SLACK_INDEX, Detection, detect
from mempalace_cli.miners.convos.model import Exchange, ParseError, Problem, Turn
from mempalace_cli.miners.convos.split import split_exchange
from mempalace_cli.miners.convos.topics import classify
from mempalace_cli.miners.dates import chat_date

PARSERS = {
    claude_code.FORMAT: claude_code.parse,
    claude_ai.FORMAT: claude_ai.parse,
    chatgpt.FORMAT: chatgpt.parse,
    codex.FORMAT: codex.parse,
    slack.FORMAT: slack.parse,
    plain_text.FORMAT: plain_text.parse,
}
FORMATS = tuple(PARSERS)


def read_exchanges(path: Path, fmt: str) -> Iterator[Exchange | Problem]:
    """Stream the exchanges of one export file. Raises ParseError (with the line or key) when
    the file as a whole can't be read."""
    return PARSERS[fmt](path)


@dataclass(frozen=True)
class ConvoDrawer:
    key: str  # hex digest of the exchange's words: the same words give the same key
    room: str
    text: str
    exchange: Exchange
    part: int  # 0-based part of the exchange
    parts: int

    def metadata(self) -> dict[str, Any]:
        """Drawer metadata for this part (Chroma takes only scalars, so no lists)."""
        ex = self.exchange
        speakers = ", ".join(s for s in dict.fromkeys((ex.user_speaker, ex.reply_speaker)) if s)
        meta: dict[str, Any] = {
            "ingest_mode": "convos",
            "extract_mode": "exchange",
            "source_format": ex.format,
            "conversation_id": ex.conversation_id,
            "conversation_title": ex.title,
            "exchange_index": ex.index,
            "speakers": speakers,
            "user_speaker": ex.user_speaker,
            "reply_speaker": ex.reply_speaker,
        }
        if ex.timestamp:
            meta["timestamp"] = ex.timestamp
            # The date of what it records (miners/dates.py): the turn's own time.
            meta.update(chat_date(ex.timestamp))
        if self.parts > 1:
            meta.update(part=self.part + 1, parts=self.parts)
        return meta


def exchange_key(ex: Exchange, occurrence: int, part: int) -> str:
    """Content identity: the exchange's words, which repeat of those words it is within its
    conversation, and the part. Not the file, the title or the conversation id, so a
    resumed session or a later export that repeats a conversation maps onto the same drawers."""
    h = hashlib.sha256()
    for piece in ("convos/1", ex.user, ex.reply, str(occurrence), str(part)):
        h.update(piece.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()


def plan_drawers(exchanges: Iterable[Exchange]) -> Iterator[ConvoDrawer]:
    seen: dict[tuple[str, bytes], int] = {}
    for ex in exchanges:
        words = hashlib.blake2b(
            f"{ex.user}\x00{ex.reply}".encode(errors="replace"), digest_size=16
        ).digest()
        occurrence = seen.get((ex.conversation_id, words), 0)
        seen[(ex.conversation_id, words)] = occurrence + 1
        room = classify(f"{ex.user}\n{ex.reply}")
        texts = split_exchange(ex.user, ex.reply)
        for part, text in enumerate(texts):
            yield ConvoDrawer(exchange_key(ex, occurrence, part), room, text, ex, part, len(texts))


__all__ = [
    "FORMATS",
    "SLACK_INDEX",
    "ConvoDrawer",
    "Detection",
    "Exchange",
    "ParseError",
    "Problem",
    "Turn",
    "detect",
    "plan_drawers",
    "read_exchanges",
]
