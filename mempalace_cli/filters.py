"""Which drawers a read looks at: wing, room, a date window and a source, as one value that the
catalogue turns into SQL. Shared by search, list_drawers and forget, so a filter means the same
on every path."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# A drawer's date: its source's own date when the source has one (a diary entry's or a chat's
# `date`), otherwise when it was filed. ISO strings compare correctly as text.
DRAWER_DATE_SQL = "COALESCE(json_extract({p}metadata, '$.date'), {p}filed_at)"


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
        if self.since:
            clauses.append(f"{date} >= ?")
            params.append(self.since)
        if self.before:
            clauses.append(f"{date} < ?")
            params.append(self.before)
        if self.source_file:
            source = self.source_file
            col = f"{prefix}source_file"
            ways = [f"{col} = ?", f"{col} LIKE ? ESCAPE '\\'"]
            params += [source, _like_escape(source.rstrip("/")) + "/%"]
            if self.source_endings:
                ways.append(f"{col} LIKE ? ESCAPE '\\'")
                params.append("%/" + _like_escape(source.lstrip("/")))
            clauses.append("(" + " OR ".join(ways) + ")")
        return (" AND ".join(clauses) or "1"), params
