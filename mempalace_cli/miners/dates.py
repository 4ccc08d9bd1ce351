"""The date of what a mined file records, for its drawers' `date` metadata.

A note is dated by, in order:

1. **front matter**: `date:` (YAML `---` or TOML `+++` at the top of the file), else the latest
   of `updated`/`lastmod`/`modified`/`created`;
2. **a date line** in the first lines of the file: `Date: 2026-03-12`, `- **Date:** 2026-03-12`,
   `日期：2026年3月12日`, else the latest `Updated 2026-04-30` / `Last updated …` / `Created …`;
3. **a dated title**: the first `# ` heading names a date (`# 1.0 go / no-go — 2026-05-05`);
4. **a dated file name** (`2026-05-05-release-go-no-go.md`, `postmortem-2026-04-18.md`,
   `20260505.md`) or folder (`journal/2026/05/05/`);
5. the file's modification time, only when nothing above is found (a fresh clone dates such
   files on the day of the clone).

A section that opens with a dated heading (`## 2026-04-28 — Upload throughput`, a running log)
dates the drawers cut from it, over the file's own date.

A date is kept as `YYYY-MM-DD` (a day on the user's calendar), a time as a UTC instant
`YYYY-MM-DDTHH:MM:SS` (clock.py). `date_source` says which rule gave it.

Chat drawers carry their turn's own time (`chat`); when the export has none, the file's date by
rules 4 and 5.
"""

from __future__ import annotations

import re
import time as _time
from collections.abc import Sequence
from datetime import UTC, date, datetime

from mempalace_cli.common.errors import InvalidInputError

# How far into a file the date line and the title are looked for.
HEADER_LINES = 25
# A year outside this range in a file name is taken for some other number.
_YEARS = (1970, 2100)

SOURCES = {
    "chat": "the chat's own time",
    "front_matter": "the note's front matter",
    "date_line": "a date line in the note",
    "title": "the note's title",
    "section": "its section's dated heading",
    "file_name": "the file's name",
    "file_time": "the file's modification time",
    "diary": "the diary entry's day",
    "filed": "when it was filed by hand",
}

_MONTHS = {
    m: n
    for n, names in enumerate(
        (
            "january jan",
            "february feb",
            "march mar",
            "april apr",
            "may",
            "june jun",
            "july jul",
            "august aug",
            "september sep sept",
            "october oct",
            "november nov",
            "december dec",
        ),
        start=1,
    )
    for m in names.split()
}
_MONTH_WORD = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ZH_NUM = "〇一二三四五六七八九十"

# A date written in a value or a line: ISO (with an optional time), 2026/03/12, 2026.03.12,
# March 12, 2026, 12 March 2026, 2026年3月12日.
_ISO = (
    r"(?P<iso>\d{4}-\d{2}-\d{2}"
    r"(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:?\d{2})?)?)"
)
_SLASHED = r"(?P<sy>\d{4})[/.](?P<sm>\d{1,2})[/.](?P<sd>\d{1,2})"
_WORDS = (
    rf"(?P<wm>{_MONTH_WORD})\.?\s+(?P<wd>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<wy>\d{{4}})"
    rf"|(?P<wd2>\d{{1,2}})(?:st|nd|rd|th)?\s+(?P<wm2>{_MONTH_WORD})\.?,?\s+(?P<wy2>\d{{4}})"
)
_ZH = (
    rf"(?P<zy>\d{{4}})\s*年\s*(?P<zm>\d{{1,2}}|[{_ZH_NUM}]{{1,2}})\s*月"
    rf"\s*(?P<zd>\d{{1,2}}|[{_ZH_NUM}]{{1,3}})\s*[日号]?"
)
_A_DATE = re.compile(rf"(?<![\d\w])(?:{_ISO}|{_SLASHED}|{_WORDS}|{_ZH})(?!\d)", re.IGNORECASE)

_FRONT_KEYS_FIRST = ("date",)
_FRONT_KEYS_LATEST = (
    "updated",
    "lastmod",
    "last_modified",
    "modified",
    "last_updated",
    "published",
    "pubdate",
    "created",
)
_FRONT_LINE = re.compile(r"^\s*(?P<key>[A-Za-z_][\w-]*)\s*[:=]\s*(?P<value>.*?)\s*$")
# "Date: …", "- **Date:** …", "**Date**: …", "日期：…"; the key must close with a colon.
_DATE_LINE = re.compile(
    r"^\W{0,6}(?:date|dated|日期)\s*(?:\*\*|__)?\s*[:：]", re.IGNORECASE | re.UNICODE
)
# "Updated 2026-04-30", "Last updated: …", "Created on …", "更新于 …": at the start of a header
# line or after a separator ("Owner: Maya · Last updated 2026-05-06"), never inside a sentence
# ("It was created on 2026-01-18 with a 90-day expiry" is not the note's date).
_OTHER_LINE = re.compile(
    r"(?:^[\W_]{0,6}|[·•|;—–]\s*(?:\*\*|__)?)"
    r"(?:(?:last[\s-]+)?(?:updated|modified|revised|created)(?:\s+on)?|更新于?|创建于?|修改于?)"
    r"\s*(?:\*\*|__)?\s*[:：]?\s*(?:\*\*|__)?\s*",
    re.IGNORECASE,
)
_HEADING = re.compile(r"^\s{0,3}(?P<level>#{1,6})\s+(?P<text>.*)$")
_FILE_DATE = re.compile(r"(?<!\d)(?P<y>\d{4})(?P<sep>[-_.]?)(?P<m>\d{2})(?P=sep)(?P<d>\d{2})(?!\d)")
_FOLDER_DATE = re.compile(r"(?:^|/)(?P<y>\d{4})/(?P<m>\d{2})/(?P<d>\d{2})(?:/|$)")


# -- reading one date ---------------------------------------------------------------------------
def _zh_int(text: str) -> int | None:
    if text.isdigit():
        return int(text)
    digits = {c: i for i, c in enumerate("〇一二三四五六七八九")}
    if "十" in text:
        tens, _, ones = text.partition("十")
        high = digits.get(tens) if tens else 1
        low = digits.get(ones) if ones else 0
        return None if high is None or low is None else high * 10 + low
    return digits.get(text) if len(text) == 1 else None


def _day(year: int, month: int, day: int) -> str | None:
    try:
        return date(year, month, day).isoformat()
    except ValueError:
        return None


def _instant(text: str) -> str | None:
    """An ISO datetime as a naive UTC instant; one without an offset is local time."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace(" ", "T", 1))
    except ValueError:
        return None
    if moment.tzinfo is None:
        seconds = _time.mktime(moment.timetuple())
        moment = datetime.fromtimestamp(seconds, UTC)
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="seconds")


def _from_match(m: re.Match[str]) -> str | None:
    if m["iso"]:
        text = m["iso"]
        return (
            _day(int(text[:4]), int(text[5:7]), int(text[8:10]))
            if len(text) == 10
            else (_instant(text))
        )
    if m["sy"]:
        return _day(int(m["sy"]), int(m["sm"]), int(m["sd"]))
    if m["wy"]:
        return _day(int(m["wy"]), _MONTHS[m["wm"].lower()], int(m["wd"]))
    if m["wy2"]:
        return _day(int(m["wy2"]), _MONTHS[m["wm2"].lower()], int(m["wd2"]))
    month, day = _zh_int(m["zm"]), _zh_int(m["zd"])
    if month is None or day is None:
        return None
    return _day(int(m["zy"]), month, day)


def read_date(text: str, anywhere: bool = False) -> str | None:
    """The date `text` starts with (or holds anywhere, with `anywhere`), normalised; None when
    there is none or it names no real day."""
    text = text.strip().strip("\"'`*_ ")
    for m in _A_DATE.finditer(text):
        if not anywhere and m.start() != 0:
            return None
        found = _from_match(m)
        if found is not None:
            return found
    return None


def _day_of(value: str) -> str:
    return value[:10]


def _latest(values: Sequence[str]) -> str | None:
    return max(values, key=_day_of) if values else None


# -- the rules ----------------------------------------------------------------------------------
def front_matter_date(text: str) -> str | None:
    """`date` in YAML (---) or TOML (+++) front matter, else the latest of its other dates."""
    body = text.lstrip("\ufeff")
    fence = body[:3]
    if fence not in ("---", "+++") or body[3:4] not in ("\n", "\r"):
        return None
    end = body.find("\n" + fence, 3)
    if end < 0:
        return None
    first: str | None = None
    others: list[str] = []
    for line in body[4:end].splitlines():
        m = _FRONT_LINE.match(line)
        if m is None:
            continue
        key = m["key"].lower().replace("-", "_")
        if key in _FRONT_KEYS_FIRST or key in _FRONT_KEYS_LATEST:
            value = read_date(m["value"])
            if value is None:
                continue
            if key in _FRONT_KEYS_FIRST and first is None:
                first = value
            elif key in _FRONT_KEYS_LATEST:
                others.append(value)
    return first or _latest(others)


def _header(text: str) -> list[str]:
    lines = text.splitlines()[: HEADER_LINES + 40]
    if lines and lines[0].strip() in ("---", "+++"):  # after front matter
        closing = next((i for i, ln in enumerate(lines[1:], 1) if ln.strip() == lines[0]), 0)
        lines = lines[closing + 1 :]
    return lines[:HEADER_LINES]


def date_line_date(text: str) -> str | None:
    """A `Date:` line in the first lines, else the latest `Updated …`/`Created …` there."""
    header = _header(text)
    for line in header:
        m = _DATE_LINE.match(line)
        if m is not None:
            found = read_date(line[m.end() :].strip().lstrip("*_ :："))
            if found is not None:
                return found
    others = []
    for line in header:
        for m in _OTHER_LINE.finditer(line):
            found = read_date(line[m.end() :])
            if found is not None:
                others.append(found)
    return _latest(others)


def title_date(text: str) -> str | None:
    """A date named in the note's first `# ` heading."""
    for line in _header(text):
        m = _HEADING.match(line)
        if m is not None:
            return read_date(m["text"], anywhere=True) if m["level"] == "#" else None
    return None


def file_name_date(rel_path: str) -> str | None:
    """A date in the file's name (2026-05-05-x.md, x-2026_05_05.md, 20260505.md), else in its
    folders (2026/05/05/x.md, 2026-05-05/x.md)."""
    parts = rel_path.replace("\\", "/").split("/")
    for name in (parts[-1], *reversed(parts[:-1])):
        for m in _FILE_DATE.finditer(name):
            year = int(m["y"])
            if _YEARS[0] <= year < _YEARS[1]:
                found = _day(year, int(m["m"]), int(m["d"]))
                if found is not None:
                    return found
    m = _FOLDER_DATE.search(rel_path.replace("\\", "/"))
    if m is not None and _YEARS[0] <= int(m["y"]) < _YEARS[1]:
        return _day(int(m["y"]), int(m["m"]), int(m["d"]))
    return None


def file_time(mtime: float | None) -> str | None:
    """The file's modification time as a UTC instant; None for one no calendar holds."""
    if mtime is None:
        return None
    try:
        moment = datetime.fromtimestamp(mtime, UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return moment.replace(tzinfo=None).isoformat(timespec="seconds")


def note_date(rel_path: str, text: str, mtime: float | None) -> dict[str, str]:
    """{"date": …, "date_source": …} for a note (the rules in this module's doc), or {} when
    not even the file's time is usable."""
    for source, found in (
        ("front_matter", lambda: front_matter_date(text)),
        ("date_line", lambda: date_line_date(text)),
        ("title", lambda: title_date(text)),
        ("file_name", lambda: file_name_date(rel_path)),
        ("file_time", lambda: file_time(mtime)),
    ):
        value = found()
        if value is not None:
            return {"date": value, "date_source": source}
    return {}


def file_date(rel_path: str, mtime: float | None) -> dict[str, str]:
    """A chat export's own date when its turns have none: its name, else its time."""
    named = file_name_date(rel_path)
    if named is not None:
        return {"date": named, "date_source": "file_name"}
    stamp = file_time(mtime)
    return {"date": stamp, "date_source": "file_time"} if stamp else {}


def chat_date(timestamp: str | None) -> dict[str, str]:
    """A chat turn's own time (ISO 8601) as the drawer's date."""
    if not timestamp:
        return {}
    stamp = _instant(timestamp) if len(timestamp) > 10 else read_date(timestamp)
    return {"date": stamp, "date_source": "chat"} if stamp else {}


def section_dates(text: str) -> list[tuple[int, str]]:
    """(line number from 1, date) of every `##`-or-deeper heading that opens with a date: the
    entries of a running log."""
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        m = _HEADING.match(line)
        if m is not None and len(m["level"]) > 1:
            found = read_date(m["text"])
            if found is not None:
                out.append((number, found))
    return out


def chunk_date(
    file_date_meta: dict[str, str],
    sections: list[tuple[int, str]],
    line_start: int | None,
    line_end: int | None,
) -> dict[str, str]:
    """A drawer's date: its section's (the last dated heading at or above its first line, else
    the first inside it), else the file's. Front matter and date lines date the whole note
    still when a section has no date of its own."""
    if not sections or line_start is None:
        return file_date_meta
    above = [d for n, d in sections if n <= line_start]
    inside = [d for n, d in sections if line_start < n <= (line_end or line_start)]
    found = above[-1] if above else (inside[0] if inside else None)
    return {"date": found, "date_source": "section"} if found else file_date_meta


def filed_date(meta: dict[str, object], filed_at: str) -> dict[str, str]:
    """A drawer filed by hand records what is said as it is filed: dated by its filing, unless
    the caller gave it a `date` of its own."""
    if meta.get("date"):
        given = str(meta["date"])
        stamp = read_date(given) if len(given) == 10 else _instant(given)
        if stamp is None:
            raise InvalidInputError(
                f"The drawer's date {given!r} is not a date.",
                hint="Use YYYY-MM-DD (2026-03-12) or an ISO datetime (2026-03-12T09:30:00).",
            )
        return {"date": stamp, "date_source": str(meta.get("date_source") or "given")}
    stamp = _instant(filed_at)
    return {"date": stamp, "date_source": "filed"} if stamp else {}
