"""Read-only reports over the catalogue for palace upkeep: every mined file's record (what
`sync` checks against the disk) and the drawers filed since a moment (what
`memories_filed_away` summarises). Writes go through the palace's write primitives, never
here."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mempalace_cli.storage.catalog import Catalog, FileRecord


def mined_files(catalog: Catalog) -> list[FileRecord]:
    """Every file the mining manifest records, by source."""
    if not catalog.exists:
        return []
    rows = catalog.conn.execute(
        "SELECT source_file, source_root, wing, content_hash, size, mtime, drawer_ids, "
        "ingest_mode FROM files ORDER BY source_file"
    )
    # The columns in FileRecord's order; drawer_ids is a JSON list.
    return [FileRecord(*r[:6], json.loads(r[6] or "[]"), r[7]) for r in rows]


def drawer_ids_of_sources(catalog: Catalog, sources: list[str]) -> dict[str, list[str]]:
    """source file -> the ids of the drawers filed from it (whatever the manifest says)."""
    found: dict[str, list[str]] = {}
    for start in range(0, len(sources), 500):
        part = sources[start : start + 500]
        marks = ",".join("?" * len(part))
        for src, drawer_id in catalog.conn.execute(
            f"SELECT source_file, id FROM drawers WHERE source_file IN ({marks})", part
        ):
            found.setdefault(src, []).append(drawer_id)
    return found


@dataclass(frozen=True)
class FiledSince:
    total: int
    by_place: list[tuple[str, str, int]]  # (wing, room, drawers), most first
    by_filer: list[tuple[str, int]]  # (added_by or ingest mode, drawers), most first
    latest: list[dict[str, Any]]  # the newest few: id, wing, room, filed_at, preview
    newest: str | None  # the newest filed_at among them
    ids_at_newest: list[str]  # the drawers filed at that exact second


def filed_since(catalog: Catalog, since: str, skip: set[str], latest: int = 5) -> FiledSince:
    """The drawers filed at or after `since` (an ISO time as the catalogue stores filed_at),
    leaving out the ids in `skip` (those reported at that very second before)."""
    conn = catalog.conn
    marks = ",".join("?" * len(skip))
    where = "filed_at >= ?" + (f" AND id NOT IN ({marks})" if skip else "")
    params: list[Any] = [since, *sorted(skip)]
    total = conn.execute(f"SELECT COUNT(*) FROM drawers WHERE {where}", params).fetchone()[0]
    by_place = [
        (w, r, n)
        for w, r, n in conn.execute(
            f"SELECT wing, room, COUNT(*) AS n FROM drawers WHERE {where} "
            "GROUP BY wing, room ORDER BY n DESC, wing, room",
            params,
        )
    ]
    by_filer = [
        (str(who or "unknown"), n)
        for who, n in conn.execute(
            "SELECT COALESCE(json_extract(metadata, '$.added_by'), "
            "json_extract(metadata, '$.ingest_mode')) AS who, COUNT(*) AS n "
            f"FROM drawers WHERE {where} GROUP BY who ORDER BY n DESC, who",
            params,
        )
    ]
    rows = conn.execute(
        f"SELECT id, wing, room, filed_at, substr(text, 1, 160) FROM drawers WHERE {where} "
        "ORDER BY filed_at DESC, rowid DESC LIMIT ?",
        [*params, latest],
    ).fetchall()
    newest = rows[0][3] if rows else None
    at_newest = (
        [
            r[0]
            for r in conn.execute(
                f"SELECT id FROM drawers WHERE {where} AND filed_at = ?", [*params, newest]
            )
        ]
        if newest
        else []
    )
    return FiledSince(
        total=total,
        by_place=by_place,
        by_filer=by_filer,
        latest=[
            {"drawer_id": i, "wing": w, "room": r, "filed_at": f, "preview": t}
            for i, w, r, f, t in rows
        ],
        newest=newest,
        ids_at_newest=at_newest,
    )
