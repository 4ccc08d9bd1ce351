"""Looking after drawers once they are filed: fetch several, list a wing or room page by page,
edit one (re-embedded, re-indexed, duplicate-checked), and forget drawers by id, by source or by
place (with a dry run). A part the `Palace` facade owns and delegates to; the CLI's `show` and
`forget` and the MCP tools get_drawers, list_drawers, update_drawer, delete_drawers and
delete_by_source all call these verbs.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from mempalace_cli.common.errors import InvalidInputError, NotFoundError
from mempalace_cli.miners.secrets import redact_for_drawer
from mempalace_cli.search.dates import resolve_range
from mempalace_cli.service.core import PalaceCore, Part, now_iso
from mempalace_cli.service.drawers import Drawers, check_content, drawer_view
from mempalace_cli.service.names import empty_filter_hint, name_to_file, name_to_read
from mempalace_cli.service.results import (
    ForgetResult,
    GetDrawersResult,
    ListDrawersResult,
    UpdateDrawerResult,
)
from mempalace_cli.service.writer import DrawerWriter
from mempalace_cli.storage.catalog import DrawerRow
from mempalace_cli.storage.filters import DrawerFilter, drawer_date

MAX_IDS = 1000  # drawers fetched or forgotten by id in one call
MAX_PAGE = 100  # drawers listed per page
PREVIEW_CHARS = 200
ID_HINT = (
    "Drawer ids come from search results or the drawer list (`mempalace drawers`, or the "
    "list_drawers tool): drawer_id."
)


def _check_ids(ids: object, field: str = "drawer_ids") -> list[str]:
    if isinstance(ids, str) or not isinstance(ids, list | tuple):
        raise InvalidInputError(
            f"{field} must be a list of drawer ids.", hint='e.g. ["drawer_myapp_auth_0123"]'
        )
    if not ids:
        raise InvalidInputError(f"{field} is empty.", hint="Pass at least one drawer id.")
    if len(ids) > MAX_IDS:
        raise InvalidInputError(
            f"{field} holds {len(ids):,} ids; at most {MAX_IDS:,} per call.",
            hint="Split the list into several calls.",
        )
    bad = [i for i in ids if not isinstance(i, str) or not i.strip()]
    if bad:
        raise InvalidInputError(f"{field} holds {len(bad)} empty or non-text ids.", hint=ID_HINT)
    return list(dict.fromkeys(ids))


def _page(limit: object, offset: object) -> tuple[int, int]:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise InvalidInputError(f"limit must be 1 to {MAX_PAGE}, not {limit!r}.")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise InvalidInputError(f"offset must be 0 or more, not {offset!r}.")
    return limit, offset


class DrawerCuration(Part):
    """The drawer-keeping verbs, over the palace's resources (store, catalogue, lock,
    embedder); edits are filed through the `DrawerWriter`, and checked for duplicates by the
    `Drawers` part, that it is given."""

    def __init__(self, core: PalaceCore, writer: DrawerWriter, drawers: Drawers) -> None:
        super().__init__(core)
        self.writer = writer
        self.drawers = drawers

    # -- reads ------------------------------------------------------------------------------
    def get_drawers(self, ids: list[str]) -> GetDrawersResult:
        """The drawers with these ids, in the order asked; unknown ids listed in `missing`."""
        wanted = _check_ids(ids)
        p = self
        p.require()
        p.sync()
        rows = p.catalog.get(wanted)
        return {
            "drawers": [drawer_view(rows[i]) for i in wanted if i in rows],
            "missing": [i for i in wanted if i not in rows],
        }

    def list_drawers(
        self,
        wing: str | None = None,
        room: str | None = None,
        since: str | None = None,
        before: str | None = None,
        limit: int = 20,
        offset: int = 0,
        source: str | None = None,
    ) -> ListDrawersResult:
        """Drawers in a wing/room (or the whole palace), newest first, a page at a time, each
        with a preview of its text. Dates as in search: `since` inclusive, `before` exclusive;
        `source` as in search (a file, a path ending, or a folder)."""
        limit, offset = _page(limit, offset)
        since_n, before_n = resolve_range(since, before)  # relative dates too (dates.py)
        p = self
        p.require()
        p.sync()
        places = p.known_places()
        wing_r = name_to_read(wing, places, "wing")
        room_r = name_to_read(room, {r for v in places.values() for r in v}, "room")
        filt = DrawerFilter(wing_r, room_r, since_n, before_n, source_file=source or None)
        total = p.catalog.count(filt=filt)
        rows = p.catalog.iter_drawers(
            filt=filt, order="filed_at DESC, rowid DESC", limit=limit, offset=offset
        )
        drawers = [
            {
                "drawer_id": r.id,
                "wing": r.wing,
                "room": r.room,
                "source_file": r.source_file,
                "filed_at": r.filed_at,
                "date": drawer_date(r.metadata, r.filed_at),
                "preview": r.text[:PREVIEW_CHARS],
                "chars": len(r.text),
            }
            for r in rows
        ]
        result: dict[str, Any] = {
            "filters": {"wing": wing_r, "room": room_r, "since": since_n, "before": before_n},
            "drawers": drawers,
            "total": total,
            "limit": limit,
            "offset": offset,
            "has_more": offset + len(drawers) < total,
        }
        if total == 0 and (wing_r or room_r or filt.beyond_place):
            result["hint"] = empty_filter_hint(
                wing_r, room_r, places, places, filt.beyond_place, (wing, room)
            )
        return result

    # -- edits ------------------------------------------------------------------------------
    def update_drawer(
        self,
        drawer_id: str,
        content: str | None = None,
        wing: str | None = None,
        room: str | None = None,
    ) -> UpdateDrawerResult:
        """Change a drawer's text and/or move it to another wing or room; it keeps its id.
        New text is embedded again, re-indexed for keyword search and refused (success:
        false, reason: duplicate) when another drawer already says the same words."""
        if content is None and wing is None and room is None:
            raise InvalidInputError(
                "Nothing to change: pass content, wing or room.",
                hint="content replaces the text; wing and room move the drawer.",
            )
        secrets = {"secrets_redacted": 0}
        if content is not None:
            check_content(content)
            content, _, secrets = redact_for_drawer(content)  # secrets never enter the palace
        new_wing = name_to_file(wing, "wing") if wing is not None else None
        new_room = name_to_file(room, "room") if room is not None else None
        p = self
        p.require()
        p.sync()
        row = self._row(drawer_id)
        # New text is embedded and checked for duplicates before the lock (the model is slow);
        # the row itself is read again under the lock, below.
        vec: Any = None
        if content is not None and content != row.text:
            vec = p.embedder.embed([content])
            matches, _similar = self.drawers.near_duplicates(vec[0], content, exclude=row.id)
            if matches:
                return {
                    "success": False,
                    "reason": "duplicate",
                    "drawer_id": row.id,
                    "matches": matches,
                } | secrets
        with p.lock.hold():
            # Read and write under one lock: what another process moved or edited since the
            # read above is the row changed here, never overwritten with the older copy.
            current = self._row(drawer_id)
            text = content if content is not None else current.text
            text_changed = text != current.text
            if text_changed and vec is None:  # the text changed elsewhere meanwhile
                vec = p.embedder.embed([text])
            if not text_changed:
                vec = p.store.get([current.id], include=["embeddings"])["embeddings"]
            meta = dict(current.metadata)
            if text_changed:
                meta["content_hash"] = hashlib.sha256(text.encode("utf-8")).hexdigest()
            meta["updated_at"] = now_iso()
            updated = DrawerRow(
                current.id,
                new_wing or current.wing,
                new_room or current.room,
                current.source_file,
                current.chunk_index,
                current.filed_at,
                text,
                meta,
            )
            p.writer.file([updated], vec)
        return {
            "success": True,
            "drawer_id": current.id,
            "wing": updated.wing,
            "room": updated.room,
            "content_changed": text_changed,
            "moved": (updated.wing, updated.room) != (current.wing, current.room),
        } | secrets

    def forget(
        self,
        drawer_ids: list[str] | None = None,
        source: str | None = None,
        wing: str | None = None,
        room: str | None = None,
        dry_run: bool = False,
    ) -> ForgetResult:
        """Remove drawers chosen by id, by source (a file or a folder, as mined),
        or by wing (and room). With `dry_run`, only lists them. A mined file whose drawers are
        all removed leaves the mining manifest too, so mining it again files it again."""
        kinds = [drawer_ids is not None, source is not None, wing is not None or room is not None]
        if sum(kinds) != 1:
            raise InvalidInputError(
                "Say what to forget: drawer ids, a source, or a wing (and room), one of them.",
                hint="e.g. forget(drawer_ids=[...]) or forget(source='notes/a.md') or "
                "forget(wing='myapp', room='auth').",
            )
        p = self
        p.require()
        p.sync()
        missing: list[str] = []
        if drawer_ids is not None:
            wanted = _check_ids(drawer_ids)
            found = p.catalog.get(wanted)
            missing = [i for i in wanted if i not in found]
            rows = [found[i] for i in wanted if i in found]
            if not rows:
                raise NotFoundError(
                    f"No drawer with id {wanted[0]!r}"
                    + (f" (nor the {len(wanted) - 1} others)" if len(wanted) > 1 else "")
                    + "; nothing was removed.",
                    hint=ID_HINT,
                )
        elif source is not None:
            rows = self._rows_from_source(source)
        else:
            rows = self._rows_in_place(wing, room)
        result: dict[str, Any] = {
            "dry_run": bool(dry_run),
            "removed": 0,
            "matched": len(rows),
            "drawers": [
                {"id": r.id, "wing": r.wing, "room": r.room, "source_file": r.source_file}
                for r in rows
            ],
        }
        if missing:
            result["missing"] = missing
        if dry_run:
            return result
        ids = [r.id for r in rows]
        with p.lock.hold():
            gone = set(ids)
            sources = sorted({r.source_file for r in rows if r.source_file})
            emptied = [s for s in sources if set(p.catalog.drawer_ids_for_source(s)) <= gone]
            p.writer.remove(ids, forget_files=emptied)
        result["removed"] = len(ids)
        result["files_forgotten"] = emptied
        return result

    # -- helpers ----------------------------------------------------------------------------
    def _row(self, drawer_id: str) -> DrawerRow:
        if not isinstance(drawer_id, str) or not drawer_id.strip():
            raise InvalidInputError("The drawer id is empty.", hint=ID_HINT)
        row = self.catalog.get([drawer_id]).get(drawer_id)
        if row is None:
            raise NotFoundError(f"No drawer with id {drawer_id!r}.", hint=ID_HINT)
        return row

    def _rows_from_source(self, source: str) -> list[DrawerRow]:
        if not isinstance(source, str) or not source.strip():
            raise InvalidInputError("The source is empty.", hint="Pass a file or folder path.")
        catalog = self.catalog
        exact = DrawerFilter(source_file=source, source_endings=False)
        rows = list(catalog.iter_drawers(filt=exact))
        if not rows:  # a relative path or ~ given on the command line: try it resolved
            resolved = str(Path(source).expanduser().resolve())
            if resolved != source:
                exact = DrawerFilter(source_file=resolved, source_endings=False)
                rows = list(catalog.iter_drawers(filt=exact))
        if not rows:
            raise NotFoundError(
                f"No drawers come from {source!r}; nothing was removed.",
                hint="Use a source_file exactly as search results show it, or the folder that "
                "was mined.",
            )
        return rows

    def _rows_in_place(self, wing: str | None, room: str | None) -> list[DrawerRow]:
        places = self.known_places()
        for value, field in ((wing, "wing"), (room, "room")):
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise InvalidInputError(f"The {field} is empty.", hint=f"Name the {field}.")
        wing_r = name_to_read(wing, places, "wing")
        room_r = name_to_read(room, {r for v in places.values() for r in v}, "room")
        rows = list(self.catalog.iter_drawers(filt=DrawerFilter(wing_r, room_r)))
        if not rows:
            raise NotFoundError(
                "No drawers there; nothing was removed.",
                hint=empty_filter_hint(wing_r, room_r, places, places, asked=(wing, room)),
            )
        return rows
