"""Which drawers a read looks at: wing, room, a date window and a source, as one value that the
catalogue turns into SQL. Shared by search, list_drawers and forget, so a filter means the same
on every path."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from mempalace_cli.common.clock import day_start

# A drawer's date is the date of what it records, read from fields the drawer has: `date` (this
# tool writes it on every drawer: a chat turn's time, a note's front matter, `Date:` line or
# dated file name, else the file's time; a diary entry's day; a hand-filed drawer's filing),
# else `timestamp` (MemPalace's chat drawers and ours from before `date` was written), else, for
# a drawer filed by hand (ingest_mode "manual", whose words date from their filing), its
# filing time. Anything else has no date: a date filter leaves it out and says how many
# (`dateless_counts_sql`). ISO strings compare correctly as text.
DRAWER_DATE_SQL = (
    "COALESCE(json_extract({p}metadata, '$.date'), json_extract({p}metadata, '$.timestamp'), "
    "CASE WHEN json_extract({p}metadata, '$.ingest_mode') = 'manual' THEN {p}filed_at END)"
)
# A date-only bound is a day on the user's calendar (clock.py): a drawer's date-only date is
# compared with it as a date, a drawer's instant (UTC) with the start of that local day.
_DAY_BOUND_SQL = "(CASE WHEN length({d}) = 10 THEN {d} {op} ? ELSE {d} {op} ? END)"


def _bound(date: str, op: str, value: str) -> tuple[str, list[Any]]:
    if len(value) != 10:
        return f"{date} {op} ?", [value]
    return _DAY_BOUND_SQL.format(d=date, op=op), [value, day_start(value)]


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


@dataclass(frozen=True)
class DrawerFilter:
    wing: str | None = None
    room: str | None = None
    since: str | None = None  # inclusive: dated on or after
    before: str | None = None  # exclusive: dated strictly before
    source_file: str | None = None  # the exact source, a path ending, or a folder
    # Whether a path ending ("auth.md") matches too. Reads say yes; forgetting says no, so a
    # short name can never remove every same-named file in the palace.
    source_endings: bool = True

    @property
    def beyond_place(self) -> bool:
        """True when it narrows more than wing and room."""
        return bool(self.since or self.before or self.source_file)

    @property
    def by_date(self) -> bool:
        return bool(self.since or self.before)

    def sql(self, prefix: str = "") -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        if self.wing is not None:
            clauses.append(f"{prefix}wing = ?")
            params.append(self.wing)
        if self.room is not None:
            clauses.append(f"{prefix}room = ?")
            params.append(self.room)
        date = DRAWER_DATE_SQL.format(p=prefix)
        for value, op in ((self.since, ">="), (self.before, "<")):
            if value:
                clause, values = _bound(date, op, value)
                clauses.append(clause)
                params += values
        if self.source_file:
            source = self.source_file
            col = f"{prefix}source_file"
            ways = [f"{col} = ?", f"{col} LIKE ? ESCAPE '\\'"]
            params += [source, _like_escape(source.rstrip("/")) + "/%"]
            if self.source_endings:  # a path ending, or a folder as results show it
                tail = _like_escape(source.strip("/"))
                ways += [f"{col} LIKE ? ESCAPE '\\'", f"{col} LIKE ? ESCAPE '\\'"]
                params += ["%/" + tail, "%/" + tail + "/%"]
            clauses.append("(" + " OR ".join(ways) + ")")
        return (" AND ".join(clauses) or "1"), params


# The drawers a date filter cannot place, as two conditions that the catalogue also keeps a
# partial index on (catalog.py `drawers_undated`, `drawers_file_dated`): counting them reads
# only those few drawers, not every drawer in scope. A row whose metadata text holds
# `"date": "` surely has a date (a JSON key followed by a string; no string value can be
# followed by a colon) and one holding `"date_source": "` surely has its source, so most rows
# are ruled out without parsing their JSON.
UNDATED_SQL = 'instr(metadata, \'"date": "\') = 0 AND ' + DRAWER_DATE_SQL.format(p="") + " IS NULL"
FILE_DATED_SQL = (
    'instr(metadata, \'"date_source": "\') = 0 AND '
    + DRAWER_DATE_SQL.format(p="")
    + " IS NOT NULL AND json_extract(metadata, '$.date_source') IS NULL "
    "AND json_extract(metadata, '$.ingest_mode') = 'projects'"
)


def dateless_counts_sql(filt: DrawerFilter) -> tuple[str, list[Any]]:
    """SQL counting, within `filt`'s place and source (its date window aside), the drawers a
    date filter leaves out for having no date, and those dated by an older version (a mined
    note's file time, before `date_source` was recorded: the next mine dates them from their
    content). Returns one row: (undated, dated_by_file_time_before). Each count reads its
    partial index (UNDATED_SQL, FILE_DATED_SQL), so it costs what it finds."""
    scope, params = replace(filt, since=None, before=None).sql()
    sql = (
        f"SELECT (SELECT count(*) FROM drawers WHERE {scope} AND {UNDATED_SQL}), "
        f"(SELECT count(*) FROM drawers WHERE {scope} AND {FILE_DATED_SQL})"
    )
    return sql, [*params, *params]


def dateless_hint(undated: int, older: int) -> str | None:
    """What a date-filtered read says about the drawers it could not date (see
    `dateless_counts_sql`), or None when every drawer in scope has a date of its own."""
    parts = []
    if undated:
        many = undated != 1
        parts.append(
            f"{undated} drawer{'s' if many else ''} with no date of {'their' if many else 'its'} "
            f"own (filed by MemPalace, or a chat with no times) {'were' if many else 'was'} left "
            "out by the date filter"
        )
    if older:
        parts.append(
            f"{older} drawer{'s' if older != 1 else ''} mined by an older version "
            f"{'are' if older != 1 else 'is'} dated by the file's time at first mining"
        )
    if not parts:
        return None
    return (
        "; ".join(parts)
        + ". Mine their folder again (`mempalace mine DIR`) to date them by what they record."
    )


def drawer_date(metadata: dict[str, Any], filed_at: str | None = None) -> str | None:
    """A drawer's date as DRAWER_DATE_SQL reads it (what a read shows beside the drawer)."""
    for key in ("date", "timestamp"):
        if metadata.get(key):
            return str(metadata[key])
    return (filed_at or None) if metadata.get("ingest_mode") == "manual" else None
