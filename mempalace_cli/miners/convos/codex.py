"""Codex CLI sessions: `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`.

Current layout: a `session_meta` line ({"type": "session_meta", "payload": {"id", ...}}), then
envelopes {"timestamp", "type": "response_item", "payload": {"type": "message", "role",
"content": [{"type": "input_text" | "output_text", "text"}]}}. The older layout has the same
items without the envelope, after a first line {"id", "timestamp", "instructions"}.
Codex adds its own context to the first user message (`<user_instructions>`,
`<environment_context>`); that is stripped. Tool calls become one-line markers; their output
and the model's reasoning are left out. `event_msg` lines repeat the messages and are only
read when a file has no `response_item` messages.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mempalace_cli.miners.convos.claude_code import MARKER_CHARS
from mempalace_cli.miners.convos.jsonstream import iter_jsonl
from mempalace_cli.miners.convos.model import ASSISTANT, USER, Problem, Turn, iso_time, pair_turns

if TYPE_CHECKING:
    from mempalace_cli.miners.convos.model import Exchange

FORMAT = "codex"
_ENVELOPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
_INJECTED = re.compile(
    r"<(user_instructions|environment_context|user_shell_command|turn_aborted)>.*?</\1>\s*",
    re.DOTALL,
)
_TEXT_TYPES = {"input_text", "output_text", "text"}


def looks_like(records: list[dict[str, Any]]) -> bool:
    for rec in records:
        if rec.get("type") in _ENVELOPES and isinstance(rec.get("payload"), dict):
            return True
        if "record_type" in rec:
            return True
        if rec.get("type") == "message" and isinstance(rec.get("content"), list):
            kinds = {b.get("type") for b in rec["content"] if isinstance(b, dict)}
            if kinds & {"input_text", "output_text"}:
                return True
    first = records[0] if records else {}
    return "id" in first and "instructions" in first and "timestamp" in first


def _call_marker(item: dict[str, Any]) -> str:
    name = str(item.get("name") or item.get("type") or "tool")
    gist = ""
    args = item.get("arguments")
    action = item.get("action")
    if isinstance(args, str):
        try:
            parsed = json.loads(args)
        except ValueError:
            parsed = args
        action = parsed if isinstance(parsed, dict) else action
        gist = args if isinstance(parsed, str) else ""
    if isinstance(action, dict):
        command = action.get("command")
        if isinstance(command, list):
            # ["bash", "-lc", "cmd"] -> "cmd": the shell wrapper is noise.
            words = [str(x) for x in command]
            gist = words[-1] if words[:2] in (["bash", "-lc"], ["sh", "-c"]) else " ".join(words)
        elif isinstance(command, str):
            gist = command
        elif not gist:
            gist = next((str(v) for v in action.values() if isinstance(v, str)), "")
    gist = " ".join(gist.split())
    if len(gist) > MARKER_CHARS:
        gist = gist[: MARKER_CHARS - 1] + "…"
    return f"[tool: {name}{' ' + gist if gist else ''}]"


def _item_turn(item: dict[str, Any], stamp: str | None) -> Turn | None:
    kind = item.get("type")
    if kind in ("function_call", "local_shell_call", "custom_tool_call"):
        return Turn(ASSISTANT, "assistant", _call_marker(item), stamp)
    if kind != "message" or item.get("role") not in ("user", "assistant"):
        return None  # reasoning, tool output, developer/system messages
    pieces = []
    for block in item.get("content") or []:
        if isinstance(block, dict) and block.get("type") in _TEXT_TYPES:
            text = block.get("text")
            if isinstance(text, str):
                if item["role"] == "user":
                    text = _INJECTED.sub("", text)
                if text.strip():
                    pieces.append(text.strip())
    if not pieces:
        return None
    role = USER if item["role"] == "user" else ASSISTANT
    return Turn(role, item["role"], "\n\n".join(pieces), stamp)


def _event_turn(payload: dict[str, Any], stamp: str | None) -> Turn | None:
    kind = payload.get("type")
    text = payload.get("message")
    if kind not in ("user_message", "agent_message") or not isinstance(text, str):
        return None
    if kind == "user_message":
        text = _INJECTED.sub("", text)
    if not text.strip():
        return None
    role = USER if kind == "user_message" else ASSISTANT
    return Turn(role, "user" if role == USER else "assistant", text.strip(), stamp)


def parse(path: Path) -> Iterator[Exchange | Problem]:
    session_id = ""
    items: list[Turn] = []
    events: list[Turn] = []
    for lineno, rec in iter_jsonl(path):
        if not isinstance(rec, dict):
            yield Problem(f"line {lineno}", "not a JSON object")
            continue
        kind = rec.get("type")
        if kind in _ENVELOPES:
            payload = rec.get("payload")
            if not isinstance(payload, dict):
                yield Problem(f"line {lineno} key 'payload'", "missing or not an object")
                continue
            stamp = iso_time(rec.get("timestamp") or payload.get("timestamp"))
            if kind == "session_meta":
                session_id = session_id or str(payload.get("id") or "")
            elif kind == "response_item":
                turn = _item_turn(payload, stamp)
                if turn:
                    items.append(turn)
            elif kind == "event_msg":
                turn = _event_turn(payload, stamp)
                if turn:
                    events.append(turn)
        elif lineno == 1 and "id" in rec and "type" not in rec:
            session_id = str(rec.get("id") or "")  # older layout's header line
        else:
            turn = _item_turn(rec, iso_time(rec.get("timestamp")))
            if turn:
                items.append(turn)
    turns = items if any(t.role == USER for t in items) else events or items
    if not session_id:
        session_id = path.stem
    yield from pair_turns(turns, FORMAT, session_id)
