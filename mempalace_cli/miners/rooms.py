"""Rooms: detect them from a folder's layout (for `init`) and route each file to one."""

from __future__ import annotations

import os
import re
from collections import Counter, deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mempalace_cli.common.cjk import CJK_RUN, has_cjk
from mempalace_cli.common.naming import GENERAL, normalize_name  # noqa: F401  (re-exported)
from mempalace_cli.common.wordlists import STOPWORDS
from mempalace_cli.miners.files import is_skipped_dir

_WORD = re.compile(r"[a-z][a-z0-9]+")


@dataclass
class Room:
    name: str
    keywords: list[str] = field(default_factory=list)
    description: str = ""


def _name_words(name: str) -> list[str]:
    """Keywords in a file or folder name: Latin words of 3+ letters, and every CJK run of 2+
    characters ("会议纪要"), which has no spaces to split on."""
    latin = [w for w in _WORD.findall(name.lower()) if len(w) > 2 and w not in STOPWORDS]
    return latin + [r for r in CJK_RUN.findall(name) if len(r) >= 2]


def _is_term(term: str) -> bool:
    """Long enough to count as a keyword hit: 3+ Latin letters, or 2+ CJK characters (most
    Chinese words are two characters)."""
    return len(term) > 2 or (len(term) == 2 and has_cjk(term))


ROOM_SAMPLE = 2000  # names read per top-level folder to find its keywords


def _names_under(folder: Path, limit: int) -> Iterator[tuple[str, bool]]:
    """(name, is_file) of up to `limit` entries under `folder`, breadth first, with an explicit
    queue: any depth works (no recursion), tool folders and symlinked folders are not entered,
    and unreadable folders are passed over."""
    queue: deque[Path] = deque([folder])
    seen = 0
    while queue and seen < limit:
        here = queue.popleft()
        try:
            with os.scandir(here) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if seen >= limit:
                return
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if is_dir and is_skipped_dir(entry.name):
                continue
            seen += 1
            yield entry.name, not is_dir
            if is_dir:
                queue.append(Path(entry.path))


def detect_rooms(root: Path, max_rooms: int = 30) -> list[Room]:
    """One room per top-level folder, with keywords from its name, its subfolders and the
    words most common in its file names."""
    rooms: list[Room] = []
    try:
        entries = sorted(root.iterdir())
    except OSError:
        return []
    for entry in entries:
        if not entry.is_dir() or entry.is_symlink() or is_skipped_dir(entry.name):
            continue
        if entry.name.startswith("."):
            continue
        words: Counter[str] = Counter()
        for name, is_file in _names_under(entry, ROOM_SAMPLE):
            words.update(_name_words(Path(name).stem if is_file else name))
        base = _name_words(entry.name)
        keywords = list(dict.fromkeys(base + [w for w, n in words.most_common(8) if n > 1]))
        rooms.append(Room(normalize_name(entry.name), keywords[:10]))
        if len(rooms) >= max_rooms:
            break
    return rooms


def route_file(rel: str, text_head: str, rooms: Sequence[Room]) -> str:
    """Pick a file's room: a folder on its path named like a room, then its file name, then
    keyword hits in its first few kilobytes; otherwise `general`."""
    if not rooms:
        return GENERAL
    parts = Path(rel).parts
    by_name = {r.name: r for r in rooms}
    for part in parts[:-1]:
        if normalize_name(part) in by_name:
            return normalize_name(part)
    stem = normalize_name(Path(rel).stem)
    for room in rooms:
        if room.name == stem or (
            (len(room.name) > 3 or (len(room.name) > 1 and has_cjk(room.name)))
            and room.name in stem
        ):
            return room.name
    head = text_head.lower()
    best, best_hits = GENERAL, 0
    for room in rooms:
        terms = [room.name.replace("_", " "), *room.keywords]
        hits = sum(head.count(t.lower()) for t in terms if _is_term(t))
        if hits > best_hits:
            best, best_hits = room.name, hits
    return best if best_hits >= 2 else GENERAL
