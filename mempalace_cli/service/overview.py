"""What a person looks at to understand a palace (the `mempalace ui` pages): the map of wings,
rooms and tunnels from the catalogue's counts; an entity's facts as a history; the diaries;
and the health of the palace (drawers whose facts have ended, drawers whose source file is
gone, the catalogue's agreement with the store, the model, the disk use).

Every answer is plain data, cheap at 100,000 drawers: the map comes from one GROUP BY of the
catalogue (never a query per room), lists are pages, and nothing here imports chromadb or loads
the model. A part the `Palace` facade owns (`palace.overview`), given the knowledge graph and
drawer keeping parts it reads through; the near duplicates live in service/duplicates.py.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mempalace_cli.common.errors import InvalidInputError, NoPalaceError
from mempalace_cli.memory.graph import PRIVATE_ROOMS, PalaceGraph
from mempalace_cli.service.core import PalaceCore, Part
from mempalace_cli.service.curation import _page  # pages as list_drawers does
from mempalace_cli.service.diary import DIARY_ROOM
from mempalace_cli.service.models import dimension_of
from mempalace_cli.service.navigation import read_catalog
from mempalace_cli.service.results import (
    DiaryPage,
    DiskUse,
    EntitiesResult,
    EntityHistory,
    MissingSources,
    PalaceMap,
    PalaceModel,
    StaleDrawers,
    StoreAgreement,
)
from mempalace_cli.storage.catalog import CATALOG_FILE

if TYPE_CHECKING:
    from mempalace_cli.service.curation import DrawerCuration
    from mempalace_cli.service.knowledge import Knowledge

MAX_MAP_ROOMS = 400  # room nodes drawn; the biggest (tunnels first) when a palace has more
MAX_FACTS = 5_000  # facts read for a history or the health checks (the newest are kept)
PREVIEW_CHARS = 240


def _preview(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


class Overview(Part):
    """The read-only views of one palace: its shared resources (catalogue, binding,
    consistency), its facts (the `Knowledge` part) and its drawers (`DrawerCuration`)."""

    def __init__(self, core: PalaceCore, knowledge: Knowledge, curation: DrawerCuration) -> None:
        super().__init__(core)
        self.knowledge = knowledge
        self.curation = curation

    # -- the map ----------------------------------------------------------------------------
    def palace_map(
        self, max_rooms: int = MAX_MAP_ROOMS, links: list[dict[str, Any]] | None = None
    ) -> PalaceMap:
        """Wings and rooms with their drawer counts, tunnels (a room name filed in two or more
        wings joins them) and what stands alone: an isolated wing shares no room with another
        wing; an isolated room is the only room of its wing and no tunnel (nothing leads to
        it). A private room (an agent's diary) is drawn once per wing and never a tunnel.

        `links`: the explicit tunnels to draw too (as `palace.tunnels.list_tunnels()` gives
        them: one read for the whole map). Those whose two rooms still hold drawers come back
        in `links`, their rooms always drawn; a room one of them leads to does not stand
        alone, nor does a wing one of them joins to another wing."""
        self.require()
        graph = PalaceGraph(read_catalog(self.core).counts_by_wing_room(), links or ())
        linked = {
            (t[f"{end}_wing"], t[f"{end}_room"])
            for t in graph.links
            for end in ("source", "target")
        }
        tunnel_wings = {w for node in graph.tunnels() for w in node.wings}
        tunnel_wings |= {
            wing
            for t in graph.links
            if t["source_wing"] != t["target_wing"]
            for wing in (t["source_wing"], t["target_wing"])
        }
        wings = [
            {
                "wing": wing,
                "drawers": sum(rooms.values()),
                "rooms": len(rooms),
                "isolated": wing not in tunnel_wings,
            }
            for wing, rooms in sorted(graph.wings.items())
        ]
        nodes: list[dict[str, Any]] = []
        for room, node in graph.rooms.items():
            if node.is_private or not node.is_tunnel:
                for wing, n in node.wings.items():
                    led_to = (wing, room) in linked
                    alone = len(graph.wings[wing]) == 1 and not node.is_private and not led_to
                    nodes.append(
                        {
                            "room": room,
                            "wings": [wing],
                            "drawers": n,
                            "tunnel": False,
                            "linked": led_to,
                            "private": node.is_private,
                            "isolated": alone,
                        }
                    )
            else:
                nodes.append(
                    {
                        "room": room,
                        "wings": sorted(node.wings),
                        "drawers": node.drawers,
                        "drawers_by_wing": dict(sorted(node.wings.items())),
                        "tunnel": True,
                        "linked": any((wing, room) in linked for wing in node.wings),
                        "private": False,
                        "isolated": False,
                    }
                )
        nodes.sort(
            key=lambda r: (not (r["tunnel"] or r["linked"]), -r["drawers"], r["room"], r["wings"])
        )
        shown = nodes[:max_rooms]
        tunnels = [n.summary() for n in graph.tunnels()]
        return {
            "wings": wings,
            "rooms": shown,
            "rooms_total": len(nodes),
            "rooms_hidden": len(nodes) - len(shown),
            "tunnels": tunnels,
            "links": [
                {
                    "id": t["id"],
                    "label": t.get("label"),
                    **{
                        end: {
                            "wing": t[f"{end}_wing"],
                            "room": t[f"{end}_room"],
                            "drawer_id": t.get(f"{end}_drawer_id"),
                        }
                        for end in ("source", "target")
                    },
                    "missing_ends": list(t.get("missing_ends") or []),
                }
                for t in graph.links
            ],
            "links_dangling": len(links or ()) - len(graph.links),
            "drawers": sum(w["drawers"] for w in wings),
            "isolated_wings": [w["wing"] for w in wings if w["isolated"]],
            "isolated_rooms": [
                {"room": r["room"], "wing": r["wings"][0]} for r in nodes if r["isolated"]
            ],
        }

    # -- facts ------------------------------------------------------------------------------
    def _all_facts(self) -> list[dict[str, Any]]:
        """Every fact (at most MAX_FACTS, the latest), chronological; [] without a graph."""
        try:
            stats = self.knowledge.kg_stats()
            total = int(stats.get("triples") or 0)
            offset = max(0, total - MAX_FACTS)
            return list(self.knowledge.kg_timeline(None, MAX_FACTS, offset)["facts"])
        except NoPalaceError:
            return []

    def facts_citing(self, drawer_id: str) -> list[dict[str, Any]]:
        """The facts whose source is this drawer, current ones first."""
        facts = [f for f in self._all_facts() if f.get("source_drawer_id") == drawer_id]
        return sorted(facts, key=lambda f: not f.get("current"))

    def entities(self, contains: str | None = None, limit: int = 200) -> EntitiesResult:
        """Entity names of the knowledge graph (those containing `contains`, case-folded)."""
        try:
            known = int(self.knowledge.kg_stats().get("entities") or 0)
        except NoPalaceError:
            known = 0
        if not known:  # no facts yet: nothing to list (and no facts file to create)
            return {"entities": [], "total": 0}
        names = self.knowledge.kg.entity_names()
        if contains and contains.strip():
            key = contains.strip().casefold()
            names = [n for n in names if key in n.casefold()]
        return {"entities": sorted(names, key=str.casefold)[:limit], "total": len(names)}

    def entity_history(self, entity: str, as_of: str | None = None) -> EntityHistory:
        """An entity's facts in time order, current and ended, each saying what it replaced
        or what replaced it (a supersede ends one object on the day the next one starts),
        and, with `as_of`, whether it held on that date."""
        if not isinstance(entity, str) or not entity.strip():
            raise InvalidInputError(
                "Name the entity to look up.", hint="Pick one from the list, e.g. Harbor."
            )
        asked = self.knowledge.kg_query(entity, as_of)
        facts = list(self.knowledge.kg_timeline(entity, MAX_FACTS)["facts"])
        held = {f["triple_id"] for f in asked["facts"]} if as_of else set()
        by_key: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for fact in facts:
            by_key.setdefault((fact["subject"].casefold(), fact["predicate"]), []).append(fact)
        for fact in facts:
            fact["holds_as_of"] = fact["triple_id"] in held if as_of else None
            fact["replaced_by"] = None
            fact["replaces"] = None
        for group in by_key.values():
            for old in group:
                if not old["valid_to"]:
                    continue
                for new in group:
                    if new is not old and new["valid_from"] == old["valid_to"]:
                        old["replaced_by"] = new["object"]
                        new["replaces"] = old["object"]
        return {
            "entity": asked["entity"],
            "as_of": asked["as_of"],
            "facts": facts,
            "count": len(facts),
            "current": sum(1 for f in facts if f["current"]),
            "held_as_of": len(held) if as_of else None,
            "suggestions": asked.get("suggestions", []),
        }

    # -- diaries ----------------------------------------------------------------------------
    def diaries(self) -> list[dict[str, Any]]:
        """Every wing with a diary room and how many entries it holds, most first."""
        try:
            counts = read_catalog(self.core).counts_by_wing_room()
        except NoPalaceError:
            return []
        found = [{"wing": w, "entries": n} for w, r, n in counts if r == DIARY_ROOM]
        return sorted(found, key=lambda d: (-d["entries"], d["wing"]))

    def diary_entries(self, wing: str, offset: int = 0, limit: int = 20) -> DiaryPage:
        """A diary's entries, newest first, a page at a time, whole."""
        limit, offset = _page(limit, offset)
        listing = self.curation.list_drawers(wing=wing, room=DIARY_ROOM, limit=limit, offset=offset)
        ids = [d["drawer_id"] for d in listing["drawers"]]
        rows = {d["drawer_id"]: d for d in self.curation.get_drawers(ids)["drawers"]} if ids else {}
        entries = [
            {
                "drawer_id": i,
                "filed_at": rows[i]["filed_at"],
                "agent": rows[i]["metadata"].get("agent"),
                "topic": rows[i]["metadata"].get("topic"),
                "text": rows[i]["text"],
            }
            for i in ids
            if i in rows
        ]
        return {
            "wing": listing["filters"]["wing"],
            "entries": entries,
            "total": listing["total"],
            "offset": offset,
            "limit": limit,
            "has_more": listing["has_more"],
        }

    # -- health -----------------------------------------------------------------------------
    def stale_drawers(self, offset: int = 0, limit: int = 20) -> StaleDrawers:
        """Drawers that are the source of facts since ended (invalidated or superseded): what
        they say may be out of date. Each with the ended facts and what replaced them."""
        limit, offset = _page(limit, offset)
        facts = self._all_facts()
        current: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for f in facts:
            if f["current"]:
                current.setdefault((f["subject"].casefold(), f["predicate"]), []).append(f)
        ended: dict[str, list[dict[str, Any]]] = {}
        for f in reversed(facts):  # the latest first
            source = f.get("source_drawer_id")
            if source and not f["current"]:
                now = current.get((f["subject"].casefold(), f["predicate"]), [])
                ended.setdefault(source, []).append(
                    {**f, "now": [n["object"] for n in now if n["object"] != f["object"]]}
                )
        present = self.catalog.present(list(ended)) if ended else set()
        ids = [i for i in ended if i in present]
        page = ids[offset : offset + limit]
        drawers = (
            {d["drawer_id"]: d for d in self.curation.get_drawers(page)["drawers"]} if page else {}
        )
        return {
            "drawers": [
                {
                    "drawer_id": i,
                    "wing": drawers[i]["wing"],
                    "room": drawers[i]["room"],
                    "preview": _preview(drawers[i]["text"]),
                    "ended_facts": ended[i],
                }
                for i in page
                if i in drawers
            ],
            "total": len(ids),
            "offset": offset,
            "limit": limit,
        }

    def missing_sources(self, offset: int = 0, limit: int = 20) -> MissingSources:
        """Source files (absolute paths, as mining records them) that no longer exist on this
        machine, with how many drawers came from each."""
        limit, offset = _page(limit, offset)
        try:
            catalog = read_catalog(self.core)
        except NoPalaceError:
            return {"sources": [], "total": 0, "checked": 0, "offset": offset, "limit": limit}
        rows = catalog.conn.execute(
            "SELECT source_file, COUNT(*) FROM drawers WHERE source_file != '' "
            "GROUP BY source_file ORDER BY source_file"
        ).fetchall()
        checked = [(s, n) for s, n in rows if os.path.isabs(s)]
        gone = [{"source_file": s, "drawers": n} for s, n in checked if not os.path.exists(s)]
        return {
            "sources": gone[offset : offset + limit],
            "total": len(gone),
            "drawers": sum(g["drawers"] for g in gone),
            "checked": len(checked),
            "offset": offset,
            "limit": limit,
        }

    def store_agreement(self) -> StoreAgreement:
        """Whether the catalogue (keyword index, counts, vectors) is known to mirror the drawer
        store, from its marks alone (a full comparison is `mempalace status --verify`)."""
        core = self.core
        core.require()
        report = core.consistency.report()
        return {
            "store": core.backend.kind,
            # None where only asking the store can tell (a server: `mempalace status` asks).
            "in_step": core.catalog_trusted() if core.consistency.proves_from_marks else None,
            "write_interrupted": core.needs_repair(),
            "mirrors": report.get("mirrors"),
            "last_repair": report.get("last_repair"),
            "catalogue_drawers": core.catalog.count(),
        }

    def model(self) -> PalaceModel:
        """The palace's embedding model, its vector size and where that is recorded."""
        b = self.core.current_binding()
        return {
            "model": b.model,
            "dimension": dimension_of(b.model) or None,
            "collection": b.collection,
            "recorded": b.origin,
        }

    def disk_use(self) -> DiskUse:
        """Bytes on disk by part: the drawer store (Chroma), the catalogue, the vector index,
        the knowledge graph, the MCP activity log, the rest."""
        parts = {
            "drawer_store": 0,
            "catalogue": 0,
            "vector_index": 0,
            "knowledge_graph": 0,
            "activity_log": 0,
            "other": 0,
        }
        seen: set[Path] = set()
        for root in dict.fromkeys([Path(self.path), Path(self.index_dir)]):
            if not root.is_dir():
                continue
            for folder, _dirs, files in os.walk(root):
                for name in files:
                    path = Path(folder) / name
                    if path in seen:
                        continue
                    seen.add(path)
                    try:
                        size = path.lstat().st_size
                    except OSError:
                        continue
                    parts[_part_of(path.relative_to(root), name)] += size
        return {"bytes": parts, "total": sum(parts.values())}


def _part_of(relative: Path, name: str) -> str:
    top = relative.parts[0] if relative.parts else name
    if name.startswith(CATALOG_FILE):
        return "catalogue"
    if top == "vector_index":
        return "vector_index"
    if name.startswith("knowledge_graph.sqlite3"):
        return "knowledge_graph"
    if name.startswith("mcp_activity.sqlite3"):
        return "activity_log"
    if name.startswith("chroma.sqlite3") or len(relative.parts) > 1:
        return "drawer_store"  # Chroma's database and its segment folders
    return "other"


__all__ = ["MAX_MAP_ROOMS", "Overview", "PRIVATE_ROOMS"]
