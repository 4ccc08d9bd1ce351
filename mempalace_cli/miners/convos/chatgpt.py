"""ChatGPT data export: `conversations.json`, a list of conversations.

Each conversation has a `title`, a `mapping` (node id -> {`message`, `parent`, `children`})
that holds every branch of the chat, and `current_node`, the last message of the branch the
user last saw. We follow that branch from `current_node` up to the root, then read it in order,
leaving out system messages, hidden context and tool output. The list is streamed one
conversation at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mempalace_cli.miners.convos.jsonstream import each_conversation
from mempalace_cli.miners.convos.model import ASSISTANT, USER, Problem, Turn, iso_time, pair_turns

if TYPE_CHECKING:
    from mempalace_cli.miners.convos.model import Exchange

FORMAT = "chatgpt"
# Content types that are the model's private reasoning or the app's own context, not words
# said in the chat.
_SKIP_CONTENT = {
    "thoughts",
    "reasoning_recap",
    "user_editable_context",
    "model_editable_context",
    "system_error",
    "tether_browsing_display",
    "tether_quote",
    "execution_output",
}


def looks_like(first: Any) -> bool:
    return isinstance(first, dict) and "mapping" in first


def _active_branch(mapping: dict[str, Any], current: Any) -> list[dict[str, Any]]:
    """The nodes from the root to `current_node`. Without a usable `current_node`, the leaf
    written last stands in for it."""
    if current not in mapping:
        leaves = [
            (float((n.get("message") or {}).get("create_time") or 0), key)
            for key, n in mapping.items()
            if isinstance(n, dict) and not n.get("children")
        ]
        current = max(leaves)[1] if leaves else None
    branch: list[dict[str, Any]] = []
    seen: set[str] = set()
    node_id = current
    while node_id is not None and node_id in mapping and node_id not in seen:
        seen.add(node_id)
        node = mapping[node_id]
        if not isinstance(node, dict):
            break
        branch.append(node)
        node_id = node.get("parent")
    branch.reverse()
    return branch


def _message_turn(message: dict[str, Any]) -> Turn | None:
    author = message.get("author") or {}
    role = author.get("role") if isinstance(author, dict) else None
    meta = message.get("metadata") or {}
    if role not in ("user", "assistant"):
        return None  # system prompts and tool output
    if isinstance(meta, dict) and meta.get("is_visually_hidden_from_conversation"):
        return None
    content = message.get("content") or {}
    if not isinstance(content, dict) or content.get("content_type") in _SKIP_CONTENT:
        return None
    recipient = message.get("recipient")
    if role == "assistant" and recipient not in (None, "all"):
        return Turn(
            ASSISTANT, "assistant", f"[tool: {recipient}]", iso_time(message.get("create_time"))
        )
    pieces: list[str] = []
    for part in content.get("parts") or []:
        if isinstance(part, str):
            if part.strip():
                pieces.append(part.strip())
        elif isinstance(part, dict):
            kind = str(part.get("content_type") or "")
            if "image" in kind:
                pieces.append("[image]")
            elif kind == "audio_transcription" and isinstance(part.get("text"), str):
                pieces.append(part["text"].strip())
    if not pieces and isinstance(content.get("text"), str) and content["text"].strip():
        pieces.append(content["text"].strip())  # content_type "code"
    if not pieces:
        return None
    return Turn(
        USER if role == "user" else ASSISTANT,
        role,
        "\n\n".join(pieces),
        iso_time(message.get("create_time")),
    )


def parse_conversation(conv: dict[str, Any], where: str) -> Iterator[Exchange | Problem]:
    mapping = conv.get("mapping")
    if not isinstance(mapping, dict):
        yield Problem(f"{where} key 'mapping'", "missing or not an object")
        return
    turns: list[Turn] = []
    for node in _active_branch(mapping, conv.get("current_node")):
        message = node.get("message")
        if isinstance(message, dict):
            turn = _message_turn(message)
            if turn:
                turns.append(turn)
    conv_id = str(conv.get("conversation_id") or conv.get("id") or "")
    title = str(conv.get("title") or "").strip()
    yield from pair_turns(turns, FORMAT, conv_id, title)


def parse(path: Path) -> Iterator[Exchange | Problem]:
    return each_conversation(path, parse_conversation)
