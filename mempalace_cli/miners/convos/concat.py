"""Find the sessions inside a file that holds several: transcripts concatenated by hand
(`cat ~/.claude/projects/x/*.jsonl > all.jsonl`) or terminal dumps of many Claude Code runs.

Three layouts are recognised, each by content:
- Claude Code JSON Lines: lines grouped by `sessionId`. A line whose session id is new but
  whose `parentUuid` continues the current session (a resumed session's first line) stays in
  that session; lines without a session id (the `summary` lines Claude Code writes at the top
  of a file) go with the session that follows them.
- Codex JSON Lines: a `session_meta` line (or the older layout's `{"id", "instructions"}`
  header) starts a session; every line after it belongs to it.
- Claude Code terminal text: a `Claude Code v1.2.3` banner starts a session, unless the lines
  right after it say earlier messages were restored (a resumed view, not a new session).

`find_sessions` only reads. `write_sessions` writes one new file per session, byte for byte
the lines of that session, and never touches the input.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CLAUDE_JSONL = "claude_code"
CODEX_JSONL = "codex"
CLAUDE_TEXT = "claude_code_text"
LAYOUTS = (CLAUDE_JSONL, CODEX_JSONL, CLAUDE_TEXT)

_BANNER = re.compile(r"Claude Code v\d+\.\d+")
_RESTORED = ("previous messages", "ctrl+e to show", "ctrl+o to expand")
_BANNER_LOOKAHEAD = 6
_ISO_DATE = re.compile(r"\b(20\d\d-[01]\d-[0-3]\d)")
_MONTHS = {
    m: i
    for i, m in enumerate(
        "january february march april may june july august september october november "
        "december".split(),
        start=1,
    )
}
_LONG_DATE = re.compile(r"\b([A-Z][a-z]+) (\d{1,2}), (20\d\d)\b")
_SLUG = re.compile(r"[^\w]+", re.UNICODE)
TITLE_CHARS = 80
HEAD_LINES = 60  # lines of a text session searched for its date and first prompt


@dataclass
class Session:
    """One session of a concatenated file: where its lines are and what it is about."""

    index: int  # 1-based, in order of first appearance
    session_id: str = ""
    title: str = ""
    date: str = ""  # YYYY-MM-DD of its first timestamp, when it has one
    lines: int = 0
    runs: list[tuple[int, int]] = field(default_factory=list)  # [start, end) line numbers

    def add(self, lineno: int) -> None:
        self.lines += 1
        if self.runs and self.runs[-1][1] == lineno:
            self.runs[-1] = (self.runs[-1][0], lineno + 1)
        else:
            self.runs.append((lineno, lineno + 1))


@dataclass
class Found:
    """What `find_sessions` saw in one file: its layout (None: none of the three) and its
    sessions, or why it can't be split."""

    path: Path
    layout: str | None
    sessions: list[Session]
    reason: str = ""


def _lines(path: Path) -> Iterator[bytes]:
    with path.open("rb") as fh:
        yield from fh


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8", errors="replace"))
    except ValueError:
        return None


def _date(value: Any) -> str:
    if isinstance(value, str):
        m = _ISO_DATE.search(value)
        if m:
            return m.group(1)
    return ""


def _title(text: Any) -> str:
    if not isinstance(text, str):
        return ""
    for line in text.splitlines():
        line = " ".join(line.split())
        if line and not line.startswith("<"):
            return line[:TITLE_CHARS]
    return ""


def _claude_text(message: Any) -> str:
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                return str(block.get("text") or "")
    return ""


def _codex_text(payload: Any) -> str:
    if not isinstance(payload, dict) or payload.get("role") != "user":
        return ""
    for block in payload.get("content") or []:
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            text = re.sub(r"<(\w+)>.*?</\1>", "", block["text"], flags=re.DOTALL)
            if text.strip():
                return text
    return ""


def _layout(path: Path) -> str | None:
    """The layout of `path` from its first non-empty lines."""
    seen = 0
    for raw in _lines(path):
        if not raw.strip():
            continue
        seen += 1
        rec = _json(raw)
        if isinstance(rec, dict):
            if "sessionId" in rec or (rec.get("type") == "summary" and "leafUuid" in rec):
                return CLAUDE_JSONL
            if rec.get("type") in ("session_meta", "response_item", "event_msg", "turn_context"):
                return CODEX_JSONL
            if "instructions" in rec and "id" in rec and "type" not in rec:
                return CODEX_JSONL
        elif _BANNER.search(raw.decode("utf-8", errors="replace")):
            return CLAUDE_TEXT
        if seen >= 40:
            break
    # A terminal dump may open with a long preamble: look for a banner further in.
    for n, raw in enumerate(_lines(path)):
        if _BANNER.search(raw.decode("utf-8", errors="replace")):
            return CLAUDE_TEXT
        if n > 5000:
            break
    return None


def _claude_sessions(path: Path) -> list[Session]:
    sessions: list[Session] = []
    group_of: dict[str, Session] = {}
    uuids: dict[int, set[str]] = {}
    current: Session | None = None
    pending: list[int] = []
    pending_title = ""

    def start(session_id: str) -> Session:
        s = Session(len(sessions) + 1, session_id=session_id)
        sessions.append(s)
        uuids[s.index] = set()
        return s

    for lineno, raw in enumerate(_lines(path)):
        rec = _json(raw)
        sid = rec.get("sessionId") if isinstance(rec, dict) else None
        if not isinstance(sid, str) or not sid:
            if isinstance(rec, dict) and rec.get("type") == "summary":
                pending.append(lineno)
                pending_title = pending_title or str(rec.get("summary") or "")
            elif current is None:
                pending.append(lineno)
            else:
                current.add(lineno)
            continue
        parent = rec.get("parentUuid")
        if sid in group_of:
            target = group_of[sid]
        elif current is not None and isinstance(parent, str) and parent in uuids[current.index]:
            target = current  # a resumed session carries on the same conversation
        else:
            target = start(sid)
        group_of[sid] = target
        current = target
        for n in pending:
            target.add(n)
        if pending_title and not target.title:
            target.title = _title(pending_title)
        pending, pending_title = [], ""
        target.add(lineno)
        if isinstance(rec.get("uuid"), str):
            uuids[target.index].add(rec["uuid"])
        if not target.date:
            target.date = _date(rec.get("timestamp"))
        if not target.title and rec.get("type") == "user" and not rec.get("isMeta"):
            target.title = _title(_claude_text(rec.get("message")))
    if pending:
        if current is None:
            current = start("")
        for n in pending:
            current.add(n)
    for s in sessions:
        s.runs.sort()
    return sessions


def _codex_sessions(path: Path) -> list[Session]:
    sessions: list[Session] = []
    current: Session | None = None
    pending: list[int] = []
    for lineno, raw in enumerate(_lines(path)):
        rec = _json(raw)
        begins, sid = False, ""
        if isinstance(rec, dict):
            if rec.get("type") == "session_meta" and isinstance(rec.get("payload"), dict):
                sid = str(rec["payload"].get("id") or "")
                begins = current is None or not sid or sid != current.session_id
            elif "instructions" in rec and "id" in rec and "type" not in rec:
                sid, begins = str(rec.get("id") or ""), True
        if begins:
            current = Session(len(sessions) + 1, session_id=sid)
            sessions.append(current)
            for n in pending:
                current.add(n)
            pending = []
        if current is None:
            pending.append(lineno)
            continue
        current.add(lineno)
        if isinstance(rec, dict):
            stamp = rec.get("timestamp")
            payload = rec.get("payload")
            if not current.date:
                current.date = _date(stamp) or _date(
                    payload.get("timestamp") if isinstance(payload, dict) else None
                )
            if not current.title:
                item = payload if rec.get("type") == "response_item" else rec
                if isinstance(item, dict) and item.get("type") == "message":
                    current.title = _title(_codex_text(item))
    if pending:
        current = current or Session(len(sessions) + 1)
        if current not in sessions:
            sessions.append(current)
        for n in pending:
            current.add(n)
        current.runs.sort()
    return sessions


def _banner_starts(path: Path) -> list[int]:
    """Line numbers of the banners that start a session (not those of a restored view)."""
    starts: list[int] = []

    def settle(lineno: int, text_after: str) -> None:
        if not any(marker in text_after.lower() for marker in _RESTORED):
            starts.append(lineno)

    candidates: list[tuple[int, list[str]]] = []
    for lineno, raw in enumerate(_lines(path)):
        text = raw.decode("utf-8", errors="replace")
        if _BANNER.search(text):
            # What follows the next banner belongs to it, not to the one before.
            for n, after in candidates:
                settle(n, "".join(after))
            candidates = [(lineno, [text])]
            continue
        for cand in candidates:
            cand[1].append(text)
        while candidates and len(candidates[0][1]) >= _BANNER_LOOKAHEAD:
            n, after = candidates.pop(0)
            settle(n, "".join(after))
    for n, after in candidates:
        settle(n, "".join(after))
    return starts


def _text_sessions(path: Path) -> list[Session]:
    starts = _banner_starts(path)
    sessions: list[Session] = []
    current: Session | None = None
    head: list[str] = []
    pending: list[int] = []
    next_start = iter(starts + [-1])
    upcoming = next(next_start)

    def describe(session: Session, lines: list[str]) -> None:
        text = "".join(lines)
        m = _ISO_DATE.search(text)
        if m:
            session.date = m.group(1)
        else:
            long = _LONG_DATE.search(text)
            if long and long.group(1).lower() in _MONTHS:
                month = _MONTHS[long.group(1).lower()]
                session.date = f"{long.group(3)}-{month:02d}-{int(long.group(2)):02d}"
        for line in lines:
            stripped = line.strip()
            if stripped.startswith(">") and stripped.strip("> ").strip():
                session.title = _title(stripped.lstrip("> "))
                break

    for lineno, raw in enumerate(_lines(path)):
        if lineno == upcoming:
            if current is not None:
                describe(current, head)
            current = Session(len(sessions) + 1)
            sessions.append(current)
            for n in pending:
                current.add(n)
            pending, head = [], []
            upcoming = next(next_start)
        if current is None:
            pending.append(lineno)
            continue
        current.add(lineno)
        if len(head) < HEAD_LINES:
            head.append(raw.decode("utf-8", errors="replace"))
    if current is not None:
        describe(current, head)
    elif pending:
        only = Session(1)
        for n in pending:
            only.add(n)
        sessions.append(only)
    return sessions


def find_sessions(path: Path) -> Found:
    """The sessions of `path` (read only). A file in none of the three layouts, or unreadable,
    has no sessions and a reason."""
    try:
        layout = _layout(path)
        if layout is None:
            return Found(
                path,
                None,
                [],
                "not a Claude Code or Codex session file, nor a Claude Code terminal dump",
            )
        reader = {
            CLAUDE_JSONL: _claude_sessions,
            CODEX_JSONL: _codex_sessions,
            CLAUDE_TEXT: _text_sessions,
        }[layout]
        return Found(path, layout, reader(path))
    except OSError as exc:
        return Found(path, None, [], f"unreadable: {exc.strerror or exc}")


def slug(text: str, limit: int = 40) -> str:
    words = _SLUG.sub("-", text.strip().lower()).strip("-")
    return words[:limit].rstrip("-")


def output_name(found: Found, session: Session) -> str:
    """`<stem>.<NN>-<date>-<id or title>.<suffix>`: in order, dated, and named by the session."""
    width = max(2, len(str(len(found.sessions))))
    parts = [f"{session.index:0{width}d}"]
    if session.date:
        parts.append(session.date)
    tag = slug(session.session_id[:8]) if session.session_id else slug(session.title)
    if tag:
        parts.append(tag)
    suffix = found.path.suffix or (".jsonl" if found.layout != CLAUDE_TEXT else ".txt")
    return f"{found.path.stem}.{'-'.join(parts)}{suffix}"


def write_sessions(found: Found, names: dict[int, Path]) -> None:
    """Write each session of `found` whose index is in `names` to that path, byte for byte.
    A target that exists is never overwritten (FileExistsError, before anything is written)."""
    for target in names.values():
        if target.exists():
            raise FileExistsError(target)
    runs = sorted(
        (start, end, names[s.index])
        for s in found.sessions
        if s.index in names
        for start, end in s.runs
    )
    handles: dict[Path, Any] = {}
    try:
        for target in names.values():
            handles[target] = target.open("xb")
        pending = iter(runs)
        run = next(pending, None)
        for lineno, raw in enumerate(_lines(found.path)):
            while run is not None and lineno >= run[1]:
                run = next(pending, None)
            if run is None:
                break
            if run[0] <= lineno:
                handles[run[2]].write(raw)
    finally:
        for fh in handles.values():
            fh.close()
