"""Claude Code sessions: `~/.claude/projects/<project>/<session-id>.jsonl`.

One JSON object per line. `type` "user" / "assistant" lines carry `message.content`, a string
or a list of blocks (`text`, `tool_use`, `tool_result`, `thinking`, `image`). The people's
words are kept; a tool call becomes a one-line marker, tool results and the model's private
thinking are left out, and text the tool injects (system reminders, slash-command wrappers,
hook output) is stripped. A "user" line holding only tool results is the tool talking, so it
never starts a new exchange.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mempalace_cli.miners.convos.jsonstream import iter_jsonl
from mempalace_cli.miners.convos.model import ASSISTANT, USER, Problem, Turn, iso_time, pair_turns

if TYPE_CHECKING:
    from mempalace_cli.miners.convos.model import Exchange

FORMAT = "claude_code"

# Tags Claude Code wraps around text it adds to the conversation itself.
_INJECTED = re.compile(
    r"<(system-reminder|local-command-stdout|local-command-stderr|local-command-caveat|"
    r"user-prompt-submit-hook|bash-stdout|bash-stderr)>.*?</\1>\s*",
    re.DOTALL,
)
_COMMAND = re.compile(r"<command-(name|message|args)>(.*?)</command-\1>\s*", re.DOTALL)
_BASH_INPUT = re.compile(r"<bash-input>(.*?)</bash-input>", re.DOTALL)
_NOISE_LINES = ("[Request interrupted by user]", "[Request interrupted by user for tool use]")
MARKER_CHARS = 80


def looks_like(records: list[dict[str, Any]]) -> bool:
    for rec in records:
        kind = rec.get("type")
        if kind in ("user", "assistant") and "sessionId" in rec and "message" in rec:
            return True
        if kind == "summary" and "leafUuid" in rec:
            return True
    return False


def clean_user_text(text: str) -> str:
    """The words the person typed, without what the tool injected around them. A slash
    command is kept as the person typed it ("/review 12")."""
    parts = {m.group(1): m.group(2).strip() for m in _COMMAND.finditer(text)}
    text = _COMMAND.sub("", text)
    text = _INJECTED.sub("", text)
    text = _BASH_INPUT.sub(lambda m: "! " + m.group(1).strip(), text)
    if parts.get("name"):
        typed = " ".join(p for p in (parts["name"], parts.get("args", "")) if p)
        text = typed + ("\n\n" + text if text.strip() else "")
    lines = [ln for ln in text.split("\n") if ln.strip() not in _NOISE_LINES]
    return "\n".join(lines).strip()


def tool_marker(name: str, tool_input: Any) -> str:
    """A one-line stand-in for a tool call: its name and the gist of its input."""
    gist = ""
    if isinstance(tool_input, dict):
        for key in ("command", "file_path", "path", "pattern", "url", "query", "description"):
            if isinstance(tool_input.get(key), str) and tool_input[key].strip():
                gist = " ".join(tool_input[key].split())
                break
    if len(gist) > MARKER_CHARS:
        gist = gist[: MARKER_CHARS - 1] + "…"
    return f"[tool: {name}{' ' + gist if gist else ''}]"


def _content_text(content: Any, role: str) -> tuple[str, bool]:
    """(text, is_person) for a message's content. `is_person` is False for a user line that
    holds only tool results (the tool talking, not the person)."""
    if isinstance(content, str):
        return (clean_user_text(content) if role == USER else content.strip()), True
    if not isinstance(content, list):
        return "", False
    pieces: list[str] = []
    person = False
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            text = clean_user_text(block["text"]) if role == USER else block["text"].strip()
            if text:
                pieces.append(text)
                person = True
        elif kind == "tool_use":
            pieces.append(tool_marker(str(block.get("name") or "tool"), block.get("input")))
            person = True
        elif kind == "image":
            pieces.append("[image]")
            person = True
        # tool_result, thinking, redacted_thinking: not the people's words.
    return "\n\n".join(pieces), person


def parse(path: Path) -> Iterator[Exchange | Problem]:
    session_id = ""
    summary = ""
    turns: list[Turn] = []
    for lineno, rec in iter_jsonl(path):
        if not isinstance(rec, dict):
            continue
        kind = rec.get("type")
        if kind == "summary" and isinstance(rec.get("summary"), str):
            summary = rec["summary"].strip()
            continue
        if kind not in ("user", "assistant"):
            continue
        if rec.get("isMeta") or rec.get("isSidechain"):
            continue  # caveats the tool adds, and sub-agent conversations
        session_id = session_id or str(rec.get("sessionId") or "")
        message = rec.get("message")
        if not isinstance(message, dict):
            yield Problem(f"line {lineno}", "a user/assistant line without a 'message' object")
            continue
        role = USER if kind == "user" else ASSISTANT
        text, person = _content_text(message.get("content"), role)
        if not text:
            continue
        if role == USER and not person:
            continue
        turns.append(Turn(role, role, text, iso_time(rec.get("timestamp"))))
    if not session_id:
        session_id = path.stem
    yield from pair_turns(turns, FORMAT, session_id, summary or None)
