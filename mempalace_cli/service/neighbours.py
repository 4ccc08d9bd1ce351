"""A drawer's neighbours in its source file: the drawers cut just before and after it, in file
order, so a person reading one drawer (`mempalace show`) sees where it sits and what surrounds
it. A part the `Palace` facade owns and delegates to."""

from __future__ import annotations

from typing import Any

from mempalace_cli.common.errors import InvalidInputError, NotFoundError
from mempalace_cli.service.core import Part
from mempalace_cli.service.results import Neighbour, NeighboursResult
from mempalace_cli.storage.catalog import DrawerRow

PREVIEW_CHARS = 120
MAX_AROUND = 20
ID_HINT = "Drawer ids come from search results (drawer_id)."


def _file_order(row: DrawerRow) -> tuple[Any, ...]:
    meta = row.metadata or {}
    index = row.chunk_index if row.chunk_index is not None else meta.get("chunk_index")
    line = meta.get("line_start")
    return (
        index is None,
        index if isinstance(index, int) else 0,
        line if isinstance(line, int) else 0,
        row.filed_at or "",
        row.id,
    )


def neighbour_view(row: DrawerRow) -> Neighbour:
    meta = row.metadata or {}
    first = next((line for line in row.text.splitlines() if line.strip()), "")
    return {
        "drawer_id": row.id,
        "chunk_index": row.chunk_index,
        "line_start": meta.get("line_start"),
        "line_end": meta.get("line_end"),
        "preview": first.strip()[:PREVIEW_CHARS],
    }


class DrawerNeighbours(Part):
    """A drawer's neighbours, read from the catalogue."""

    def drawer_neighbours(self, drawer_id: str, around: int = 2) -> NeighboursResult:
        """Up to `around` drawers before and after `drawer_id` in its source file, nearest
        first, with its position among the file's drawers (1-based) and their total."""
        if not isinstance(drawer_id, str) or not drawer_id.strip():
            raise InvalidInputError("The drawer id is empty.", hint=ID_HINT)
        if isinstance(around, bool) or not isinstance(around, int) or not 0 <= around <= MAX_AROUND:
            raise InvalidInputError(f"around must be 0 to {MAX_AROUND}, not {around!r}.")
        p = self
        p.require()
        p.sync()
        row = p.catalog.get([drawer_id]).get(drawer_id)
        if row is None:
            raise NotFoundError(f"No drawer with id {drawer_id!r}.", hint=ID_HINT)
        siblings = [row]
        if row.source_file:
            ids = p.catalog.drawer_ids_for_source(row.source_file)
            siblings = sorted(p.catalog.get(ids).values(), key=_file_order)
        at = next(i for i, r in enumerate(siblings) if r.id == row.id)
        return {
            "drawer_id": row.id,
            "source_file": row.source_file,
            "position": at + 1,
            "total": len(siblings),
            "before": [neighbour_view(r) for r in reversed(siblings[max(0, at - around) : at])],
            "after": [neighbour_view(r) for r in siblings[at + 1 : at + 1 + around]],
        }
