"""The palace's overview (status, wings, rooms) and single drawers: add (one or many), get,
delete, and the duplicate check. Search lives in service/searching.py."""

from __future__ import annotations

import hashlib
from typing import Any

from mempalace_cli.common.errors import InvalidInputError, NotFoundError
from mempalace_cli.common.textsafe import clean_text
from mempalace_cli.miners.dates import filed_date
from mempalace_cli.miners.secrets import redact_for_drawer
from mempalace_cli.search.sameness import says_the_same
from mempalace_cli.service.core import PalaceCore, Part, now_iso
from mempalace_cli.service.names import empty_filter_hint, name_to_file, name_to_read
from mempalace_cli.service.results import (
    AddDrawersResult,
    AddResult,
    CheckDuplicateResult,
    DeleteDrawerResult,
    Drawer,
    GetTaxonomyResult,
    ListRoomsResult,
    ListWingsResult,
    PalaceStatus,
    StatusVerified,
)
from mempalace_cli.service.searching import similarity
from mempalace_cli.service.writer import DrawerWriter
from mempalace_cli.storage.catalog import DrawerRow
from mempalace_cli.storage.drawer_ids import candidate_ids, filed_under
from mempalace_cli.storage.drawer_ids import drawer_id as hand_filed_id

MAX_DRAWER_CHARS = 100_000
DUPLICATE_THRESHOLD = 0.9


def drawer_view(row: DrawerRow) -> Drawer:
    """One whole drawer, as get_drawer returns it."""
    return {
        "drawer_id": row.id,
        "text": row.text,
        "wing": row.wing,
        "room": row.room,
        "source_file": row.source_file,
        "filed_at": row.filed_at,
        "metadata": row.metadata,
    }


class Drawers(Part):
    """The overview and the single-drawer verbs, over the palace's resources; drawers are
    filed and removed through the `DrawerWriter` it is given."""

    def __init__(self, core: PalaceCore, writer: DrawerWriter) -> None:
        super().__init__(core)
        self.writer = writer

    # -- overview ---------------------------------------------------------------------------
    def status(self, verify: bool = False) -> PalaceStatus:
        """Counts per wing and room, from the catalogue once it is in step with Chroma. With
        `verify`, every drawer in Chroma is first compared with the catalogue by content (the
        full check behind `status --verify`) and any difference repaired from Chroma."""
        self.require()
        verified: StatusVerified | None = None
        if verify:
            self.refresh()
            checked, repair = self.consistency.verify()
            if repair is not None:
                self.store.mark_fresh(self.catalog.generation())
            self.core.keep_vector_index()  # the explicit step: derived files up to date too
            verified = {
                "drawers_checked": checked,
                "all_matched": repair is None,
                "repair": repair.to_dict() if repair is not None else None,
            }
        self.sync()
        wings: dict[str, int] = {}
        rooms: dict[str, int] = {}
        taxonomy: dict[str, dict[str, int]] = {}
        for wing, room, n in self.catalog.counts_by_wing_room():
            wings[wing] = wings.get(wing, 0) + n
            rooms[room] = rooms.get(room, 0) + n
            taxonomy.setdefault(wing, {})[room] = n
        return {
            "palace_path": str(self.path),
            "store": self.store.location,
            "total_drawers": sum(wings.values()),
            # Queries are embedded with it; all-MiniLM-L6-v2 is English-only.
            "embedding_model": self.current_binding().model,
            "wings": wings,
            "rooms": rooms,
            "taxonomy": taxonomy,
            # Chroma is the truth; what the index mirrors, and its last repair from Chroma.
            "consistency": self.consistency.report(),
        } | ({"verified": verified} if verified is not None else {})

    def list_wings(self) -> ListWingsResult:
        return {"wings": self.status()["wings"]}

    def list_rooms(self, wing: str | None = None) -> ListRoomsResult:
        status = self.status()
        taxonomy = status["taxonomy"]
        asked = wing
        wing = name_to_read(wing, taxonomy, "wing")
        if wing is None:
            return {"wing": None, "rooms": status["rooms"]}
        result: dict[str, Any] = {"wing": wing, "rooms": taxonomy.get(wing, {})}
        if not result["rooms"]:
            result["hint"] = empty_filter_hint(wing, None, taxonomy, taxonomy, asked=(asked, None))
        return result

    def get_taxonomy(self) -> GetTaxonomyResult:
        return {"taxonomy": self.status()["taxonomy"]}

    # -- single drawers ---------------------------------------------------------------------
    def get_drawer(self, drawer_id: str) -> Drawer:
        self.require()
        self.sync()
        row = self.catalog.get([drawer_id]).get(drawer_id)
        if row is None:
            raise NotFoundError(
                f"No drawer with id {drawer_id!r}.",
                hint="Drawer ids come from search results (drawer_id).",
            )
        return drawer_view(row)

    def check_duplicate(
        self, content: str, threshold: float = DUPLICATE_THRESHOLD
    ) -> CheckDuplicateResult:
        check_content(content)
        if not 0.0 < threshold <= 1.0:
            raise InvalidInputError(f"threshold must be in (0, 1], not {threshold}.")
        if not self.exists():
            return {"is_duplicate": False, "matches": [], "similar": []}
        self.sync()
        vec = self.embedder.embed([content])[0]
        matches, similar = self.near_duplicates(vec, content, threshold)
        return {"is_duplicate": bool(matches), "matches": matches, "similar": similar}

    def near_duplicates(
        self,
        vec: Any,
        content: str,
        threshold: float = DUPLICATE_THRESHOLD,
        exclude: str | None = None,
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The drawers nearest to `vec` (but `exclude`), split in two: duplicates say the same
        words as `content` (a write is refused), similar ones are at least `threshold` close
        with other words (perhaps an older version of the same fact: the write goes ahead).
        See sameness.py: similarity alone can't tell the two apart."""
        duplicates: list[dict[str, Any]] = []
        similar: list[dict[str, Any]] = []
        for i, d, doc, m in self.store.query(vec, 6, None):
            if i == exclude:
                continue
            entry = {
                "drawer_id": i,
                "similarity": similarity(d),
                "wing": m.get("wing"),
                "room": m.get("room"),
                "text": doc[:300],
            }
            if says_the_same(content, doc or ""):
                duplicates.append(entry)
            elif 1.0 - d >= threshold:
                similar.append(entry)
        return duplicates[:5], similar[:5]

    def add_drawer(
        self,
        wing: str,
        room: str,
        content: str,
        source_file: str | None = None,
        added_by: str = "mcp",
        metadata: dict[str, Any] | None = None,
        check_duplicates: bool = True,
    ) -> AddResult:
        """File one drawer by hand. Identical content in the same place is idempotent; content
        that says the same words as a close drawer anywhere is refused as a duplicate (see
        sameness.py); a close drawer with other words is returned as `similar`."""
        check_content(content)
        wing_n, room_n = name_to_file(wing, "wing"), name_to_file(room, "room")
        # Secrets never enter the palace (miners/secrets.py): redacted, and counted.
        content, source_file, secrets = redact_for_drawer(clean_text(content), source_file)
        digest = hashlib.sha256(content.encode("utf-8")).hexdigest()
        drawer_id = hand_filed_id(wing_n, room_n, digest)
        self.create()
        self.sync()
        stored = self.catalog.get(candidate_ids(wing_n, room_n, digest))
        already = filed_under(stored, wing_n, room_n, digest, content)
        if already:
            return {"success": True, "drawer_id": already, "already_stored": True} | secrets
        vec = self.embedder.embed([content])
        similar: list[dict[str, Any]] = []
        if check_duplicates:
            matches, similar = self.near_duplicates(vec[0], content)
            if matches:
                return {"success": False, "reason": "duplicate", "matches": matches} | secrets
        meta: dict[str, Any] = dict(metadata or {})
        meta.update(
            added_by=added_by, content_hash=digest, ingest_mode=meta.get("ingest_mode", "manual")
        )
        filed = now_iso()
        meta.update(filed_date(meta, filed))  # what search --since/--before compare
        row = DrawerRow(drawer_id, wing_n, room_n, source_file or "", None, filed, content, meta)
        with self.lock.hold():
            self.writer.file([row], vec)
        done = {"success": True, "drawer_id": drawer_id, "wing": wing_n, "room": room_n}
        return done | ({"similar": similar} if similar else {}) | secrets

    def add_drawers(self, drawers: list[dict[str, Any]], added_by: str = "mcp") -> AddDrawersResult:
        """File many drawers at once: one embedding pass, one lock hold, no duplicate check.

        Each item is {wing, room, content, source_file?, chunk_index?, metadata?}. Ids are
        derived exactly as `add_drawer` derives them, so identical content in the same place is
        stored once."""
        rows: dict[str, DrawerRow] = {}
        ids: list[str] = []
        digests: dict[str, tuple[str, str, str]] = {}
        stamp = now_iso()
        redacted = 0  # secrets replaced by [REDACTED:kind]
        for n, item in enumerate(drawers):
            wing, room = item.get("wing"), item.get("room")
            try:
                text = check_content(item.get("content"))
            except InvalidInputError as exc:
                raise InvalidInputError(f"Drawer {n}: {exc.message}", hint=exc.hint) from exc
            try:
                wing_n, room_n = name_to_file(wing, "wing"), name_to_file(room, "room")
            except InvalidInputError as exc:
                raise InvalidInputError(f"Drawer {n}: {exc.message}", hint=exc.hint) from exc
            content, source, secrets = redact_for_drawer(clean_text(text), item.get("source_file"))
            redacted += secrets["secrets_redacted"]
            digest = hashlib.sha256(content.encode("utf-8")).hexdigest()
            drawer_id = hand_filed_id(wing_n, room_n, digest)
            ids.append(drawer_id)
            digests[drawer_id] = (wing_n, room_n, digest)
            meta: dict[str, Any] = dict(item.get("metadata") or {})
            meta.update(
                added_by=added_by,
                content_hash=digest,
                ingest_mode=meta.get("ingest_mode", "manual"),
            )
            try:
                meta.update(filed_date(meta, stamp))  # its own `date`, else its filing
            except InvalidInputError as exc:
                raise InvalidInputError(f"Drawer {n}: {exc.message}", hint=exc.hint) from exc
            rows.setdefault(
                drawer_id,
                DrawerRow(
                    drawer_id,
                    wing_n,
                    room_n,
                    source or "",
                    item.get("chunk_index"),  # its place in source_file (a chat turn's)
                    stamp,
                    content,
                    meta,
                ),
            )
        self.create()
        self.sync()
        stored = self.catalog.get([c for i in rows for c in candidate_ids(*digests[i])])
        filed = {i: filed_under(stored, *digests[i], rows[i].text) for i in rows}
        ids = [filed.get(i) or i for i in ids]  # content filed under a legacy id keeps it
        new_rows = [r for i, r in rows.items() if not filed[i]]
        if new_rows:
            vecs = self.embedder.embed([r.text for r in new_rows])
            with self.lock.hold():
                self.writer.file(new_rows, vecs)
        return {
            "success": True,
            "drawer_ids": ids,
            "added": len(new_rows),
            "already_stored": len(rows) - len(new_rows),
            "secrets_redacted": redacted,
        }

    def delete_drawer(self, drawer_id: str) -> DeleteDrawerResult:
        self.require()
        self.sync()
        if drawer_id not in self.catalog.get([drawer_id]):
            raise NotFoundError(
                f"No drawer with id {drawer_id!r}; nothing was deleted.",
                hint="Drawer ids come from search results (drawer_id).",
            )
        with self.lock.hold():
            self.writer.remove([drawer_id])
        return {"success": True, "drawer_id": drawer_id}


def check_content(content: object) -> str:
    """`content` as a drawer's text, or InvalidInputError for an empty or oversized one."""
    if not isinstance(content, str) or not content.strip():
        raise InvalidInputError("The content is empty.", hint="Pass the text to store.")
    if len(content) > MAX_DRAWER_CHARS:
        raise InvalidInputError(
            f"The content is {len(content):,} characters; one drawer holds at most "
            f"{MAX_DRAWER_CHARS:,}.",
            hint="Split it into several drawers, or save it as a file and mine the folder.",
        )
    return content
