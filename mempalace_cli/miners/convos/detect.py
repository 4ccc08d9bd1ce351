"""Tell which chat export a file is from its content, not its name.

JSON Lines files are told apart by the keys of their first records (Claude Code vs Codex),
JSON arrays by the keys of their first element (Claude.ai, ChatGPT, a Slack day), and
anything else textual is a transcript if it has speaker lines. The answer is a format name,
`slack_index` for the workspace files of a Slack export, or the reason it is none of these.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mempalace_cli.miners.convos import chatgpt, claude_ai, claude_code, codex, plain_text, slack
from mempalace_cli.miners.convos.jsonstream import TOO_DEEP, iter_json_array
from mempalace_cli.miners.convos.model import ParseError
from mempalace_cli.miners.files import file_type_verdict, looks_textual

HEAD_BYTES = 64 * 1024
SLACK_INDEX = "slack_index"


@dataclass(frozen=True)
class Detection:
    format: str | None  # None: not a chat export
    reason: str = ""  # why not, when format is None


def _head(path: Path) -> bytes:
    with path.open("rb") as fh:
        return fh.read(HEAD_BYTES)


def _first_records(path: Path, limit: int = 30) -> list[dict[str, Any]] | None:
    """The JSON objects on the first lines, or None if the first line isn't one. Lines are
    read whole: a session's first line can be far longer than the sniffed head."""
    records: list[dict[str, Any]] = []
    with path.open("r", encoding="utf-8-sig", errors="replace") as fh:
        for n, line in enumerate(fh):
            if len(records) >= limit or n >= 10 * limit:
                break
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except RecursionError as exc:
                raise ParseError(f"line {n + 1}", TOO_DEEP) from exc
            except ValueError:
                if not records:
                    return None
                break
            if not isinstance(value, dict):
                return records or None
            records.append(value)
    return records or None


def _describe_keys(value: Any) -> str:
    if isinstance(value, dict):
        keys = ", ".join(sorted(map(str, value))[:6])
        return f"its first element has keys {keys}" if keys else "its first element is {}"
    return f"its first element is a {type(value).__name__}"


def detect(path: Path) -> Detection:
    verdict = file_type_verdict(path)
    if verdict:
        return Detection(None, verdict)
    try:
        raw = _head(path)
    except OSError as exc:
        return Detection(None, f"unreadable: {exc.strerror or exc}")
    if not raw.strip():
        return Detection(None, "empty file")
    if not looks_textual(raw):
        return Detection(None, "binary content (NUL bytes)")
    head = raw.decode("utf-8-sig", errors="replace")
    start = head.lstrip()[:1]
    if start == "{":
        try:
            records = _first_records(path)
        except ParseError as exc:
            return Detection(None, f"{exc.where}: {exc.problem}")
        if records is not None:
            if claude_code.looks_like(records):
                return Detection(claude_code.FORMAT)
            if codex.looks_like(records):
                return Detection(codex.FORMAT)
            return Detection(
                None,
                "not a chat export: JSON whose first record has keys "
                f"{', '.join(sorted(records[0])[:6])} (not a Claude Code or Codex session)",
            )
        return Detection(
            None, "not a chat export: a JSON object (exports are JSON arrays or JSON Lines)"
        )
    if start == "[":
        try:
            first = next(iter(iter_json_array(path)), None)
        except ParseError as exc:
            if path.name in slack.INDEX_FILES:
                return Detection(SLACK_INDEX)
            return Detection(None, f"{exc.where}: {exc.problem}")
        if slack.is_index_file(path, first):
            return Detection(SLACK_INDEX)
        if first is None:
            return Detection(None, "an empty JSON array: no conversations")
        for module in (claude_ai, chatgpt, slack):
            if module.looks_like(first):
                return Detection(module.FORMAT)
        return Detection(None, f"not a chat export: a JSON array, and {_describe_keys(first)}")
    if plain_text.looks_like(head):
        return Detection(plain_text.FORMAT)
    return Detection(
        None,
        "not a chat export: no 'User:'/'Assistant:' speaker lines or "
        "'>' user turns, and not a known JSON export",
    )
