"""Claude.ai data export: `conversations.json`, a list of conversations.

Each conversation: `uuid`, `name`, `created_at`, and `chat_messages`, a list of
{`sender`: "human" | "assistant", `text`, `content`: [{`type`, `text`, ...}], `created_at`,
`attachments`, `files`}. The list is streamed one conversation at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mempalace_cli.miners.convos.claude_code import tool_marker
from mempalace_cli.miners.convos.jsonstream import each_conversation
from mempalace_cli.miners.convos.model import ASSISTANT, USER, Problem, Turn, iso_time, pair_turns

if TYPE_CHECKING:
    from mempalace_cli.miners.convos.model import Exchange

FORMAT = "claude_ai"


def looks_like(first: Any) -> bool:
    return isinstance(first, dict) and "chat_messages" in first


def _message_text(msg: dict[str, Any]) -> str:
    pieces: list[str] = []
    content = msg.get("content")
    if isinstance(content, list) and content:
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str) and block["text"].strip():
                pieces.append(block["text"].strip())
            elif kind == "tool_use":
                pieces.append(tool_marker(str(block.get("name") or "tool"), block.get("input")))
    if not pieces and isinstance(msg.get("text"), str):
        pieces.append(msg["text"].strip())
    for item in (msg.get("attachments") or []) + (msg.get("files") or []):
        if isinstance(item, dict):
            name = item.get("file_name") or item.get("file_uuid") or "file"
            pieces.append(f"[attachment: {name}]")
    return "\n\n".join(p for p in pieces if p)


def parse_conversation(conv: dict[str, Any], where: str) -> Iterator[Exchange | Problem]:
    messages = conv.get("chat_messages")
    if not isinstance(messages, list):
        yield Problem(f"{where} key 'chat_messages'", "missing or not a list")
        return
    conv_id = str(conv.get("uuid") or "")
    turns: list[Turn] = []
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            continue
        sender = msg.get("sender")
        if sender not in ("human", "assistant"):
            if sender is not None:
                yield Problem(f"{where} chat_messages[{i}] key 'sender'", f"unknown {sender!r}")
            continue
        role = USER if sender == "human" else ASSISTANT
        text = _message_text(msg)
        turns.append(Turn(role, sender, text, iso_time(msg.get("created_at"))))
    title = str(conv.get("name") or "").strip() or None
    yield from pair_turns(turns, FORMAT, conv_id, title)


def parse(path: Path) -> Iterator[Exchange | Problem]:
    return each_conversation(path, parse_conversation)
