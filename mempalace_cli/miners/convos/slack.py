"""Slack workspace export: a folder per channel holding one JSON array of messages per day
(`general/2024-03-05.json`), and `users.json` (plus `channels.json`, ...) at the export root.

Messages are {`user`, `text`, `ts`, `user_profile`?, `subtype`?}. Names come from `users.json`
(found next to the channel folder), else the message's own `user_profile`, else the user id.
Consecutive messages by one person form one turn, written "Name: words"; turns pair up in
order (the first opens an exchange, the next answers it), so who said what survives.
Join/leave notices and other channel events are left out; Slack's markup for mentions and
links is turned into plain text.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mempalace_cli.miners.convos.jsonstream import iter_json_array
from mempalace_cli.miners.convos.model import ASSISTANT, USER, Problem, Turn, iso_time, pair_turns

if TYPE_CHECKING:
    from mempalace_cli.miners.convos.model import Exchange

FORMAT = "slack"
# Files at the export root that describe the workspace rather than hold messages.
INDEX_FILES = frozenset(
    {
        "users.json",
        "channels.json",
        "groups.json",
        "dms.json",
        "mpims.json",
        "integration_logs.json",
        "canvases.json",
        "org_users.json",
        "huddle_transcripts.json",
    }
)
_KEEP_SUBTYPES = {None, "thread_broadcast", "bot_message", "me_message", "file_share"}
_MENTION = re.compile(r"<@([A-Z0-9]+)(?:\|([^>]*))?>")
_CHANNEL = re.compile(r"<#[A-Z0-9]+\|([^>]*)>")
_LINK = re.compile(r"<((?:https?|mailto):[^>|]+)(?:\|([^>]*))?>")
_SPECIAL = re.compile(r"<!(here|channel|everyone)(?:\|[^>]*)?>")


def looks_like(first: Any) -> bool:
    return (
        isinstance(first, dict)
        and "ts" in first
        and ("text" in first or first.get("type") == "message")
    )


def is_index_file(path: Path, first: Any) -> bool:
    return path.name in INDEX_FILES and (first is None or isinstance(first, dict))


@lru_cache(maxsize=16)
def _load_users(users_json: str, mtime: float) -> dict[str, str]:
    names: dict[str, str] = {}
    try:
        data = json.loads(Path(users_json).read_text(encoding="utf-8-sig"))
    except (OSError, ValueError):
        return names
    for user in data if isinstance(data, list) else []:
        if isinstance(user, dict) and user.get("id"):
            profile = user.get("profile") if isinstance(user.get("profile"), dict) else {}
            name = (
                profile.get("real_name")
                or user.get("real_name")
                or profile.get("display_name")
                or user.get("name")
            )
            if name:
                names[str(user["id"])] = str(name)
    return names


def user_names(day_file: Path) -> dict[str, str]:
    """The id -> name map of the export this day file belongs to (users.json one or two
    folders up)."""
    for folder in (day_file.parent.parent, day_file.parent, day_file.parent.parent.parent):
        candidate = folder / "users.json"
        try:
            mtime = candidate.stat().st_mtime
        except OSError:
            continue
        return _load_users(str(candidate), mtime)
    return {}


def plain_text(text: str, names: dict[str, str]) -> str:
    text = _MENTION.sub(lambda m: "@" + (names.get(m.group(1)) or m.group(2) or m.group(1)), text)
    text = _CHANNEL.sub(lambda m: "#" + m.group(1), text)
    text = _LINK.sub(lambda m: f"{m.group(2)} ({m.group(1)})" if m.group(2) else m.group(1), text)
    text = _SPECIAL.sub(lambda m: "@" + m.group(1), text)
    return html.unescape(text)


def _speaker(msg: dict[str, Any], names: dict[str, str]) -> str:
    uid = str(msg.get("user") or msg.get("bot_id") or "")
    if uid in names:
        return names[uid]
    profile = msg.get("user_profile")
    if isinstance(profile, dict):
        for key in ("real_name", "display_name", "name"):
            if profile.get(key):
                return str(profile[key])
    return str(msg.get("username") or uid or "unknown")


def parse(path: Path) -> Iterator[Exchange | Problem]:
    names = user_names(path)
    channel = path.parent.name
    merged: list[list[Any]] = []  # [speaker, [texts], first timestamp]
    for i, msg in enumerate(iter_json_array(path)):
        if not isinstance(msg, dict):
            yield Problem(f"message [{i}]", "not a JSON object")
            continue
        if msg.get("subtype") not in _KEEP_SUBTYPES:
            continue
        text = msg.get("text")
        if not isinstance(text, str):
            yield Problem(f"message [{i}] key 'text'", "missing or not a string")
            continue
        text = plain_text(text, names).strip()
        for item in msg.get("files") or []:
            if isinstance(item, dict) and item.get("name"):
                text += ("\n" if text else "") + f"[file: {item['name']}]"
        if not text:
            continue
        speaker = _speaker(msg, names)
        if merged and merged[-1][0] == speaker:
            merged[-1][1].append(text)
        else:
            merged.append([speaker, [text], iso_time(msg.get("ts"))])
    turns = [
        Turn(USER if n % 2 == 0 else ASSISTANT, speaker, f"{speaker}: " + "\n".join(texts), stamp)
        for n, (speaker, texts, stamp) in enumerate(merged)
    ]
    yield from pair_turns(turns, FORMAT, f"slack:#{channel}", f"#{channel}")
