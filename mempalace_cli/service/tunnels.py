"""Explicit tunnels between rooms (create, list, delete, follow, propose, prune) and hallways:
rooms linked through knowledge-graph entities they share.

A tunnel is a link a person or an agent made on purpose: between two rooms (of one wing or
two), or two drawers in them, with an optional label ("the auth decision led to this
incident"). It is stored in the palace (storage/graph_links.py: SQLite beside the catalogue,
or the team's Chroma server), has the same id whichever end comes first, and the palace graph
walks it (`traverse`, stats, exports).

A hallway is found, not made: an entity of the knowledge graph (a person, a project, a tool)
is *in* a room when a fact about it was read from a drawer of that room or from a file filed
there, or when a drawer of that room mentions it by name; two rooms holding the same entity
are joined by a hallway that lists what they share. Hiding one (`delete_hallway`) is kept in
the palace, so it stays hidden however the hallways are computed again. Diaries stay private:
no tunnel leads into a `diary` room and no hallway joins one. A part the `Palace` facade owns.
"""

from __future__ import annotations

from functools import cached_property
from itertools import combinations
from typing import TYPE_CHECKING, Any

from mempalace_cli.common.errors import InvalidInputError, NoPalaceError, NotFoundError
from mempalace_cli.memory.graph import PRIVATE_ROOMS
from mempalace_cli.miners.secrets import redact
from mempalace_cli.service.core import PalaceCore, Part
from mempalace_cli.service.names import closest, name_to_read
from mempalace_cli.service.navigation import read_catalog
from mempalace_cli.service.results import (
    CreateTunnelResult,
    DeleteHallwayResult,
    DeleteTunnelResult,
    FollowTunnelsResult,
    ListHallwaysResult,
    ListTunnelsResult,
    ProposeTunnelsResult,
    PruneTunnelsResult,
    RestoreHallwayResult,
)
from mempalace_cli.storage.catalog import Catalog
from mempalace_cli.storage.graph_links import (
    HiddenHallway,
    LinkStore,
    Place,
    Tunnel,
    hallway_id,
    now_stamp,
    rooms_mentioning,
    rooms_of_drawers,
    rooms_of_sources,
    tunnel_id,
)

if TYPE_CHECKING:
    from mempalace_cli.service.knowledge import Knowledge

MAX_LABEL_CHARS = 500
# An entity found in more rooms than this is everywhere (the project's own name, say): it
# would join every room to every other, so it makes no hallway (listed as common_entities).
MAX_ROOMS_PER_ENTITY = 30
MAX_HALLWAY_PAGE = 500
DEFAULT_PROPOSALS = 20
KG_HINT = (
    "Hallways come from the knowledge graph: record facts about the people, projects and "
    "tools your drawers talk about with mempalace_kg_add, ideally "
    "with source_drawer_id or source_file."
)


class Tunnels(Part):
    """The palace's tunnels and hidden hallways; the hallways come from its knowledge graph
    (the `Knowledge` part it is given)."""

    def __init__(self, core: PalaceCore, knowledge: Knowledge) -> None:
        super().__init__(core)
        self.knowledge = knowledge

    # -- storage ----------------------------------------------------------------------------
    @cached_property
    def links(self) -> LinkStore:
        """The palace's tunnels and hidden hallways: beside its catalogue, or on its Chroma
        server (chromadb is imported for a server palace only)."""
        return self.backend.open_links()

    def close(self) -> None:
        if "links" in self.__dict__:
            self.links.close()
            del self.__dict__["links"]

    # -- names ------------------------------------------------------------------------------
    def _places(self) -> tuple[Catalog, dict[str, dict[str, int]]]:
        catalog = read_catalog(self.core)
        taxonomy: dict[str, dict[str, int]] = {}
        for wing, room, n in catalog.counts_by_wing_room():
            taxonomy.setdefault(wing, {})[room] = n
        return catalog, taxonomy

    @staticmethod
    def _place(
        wing: str, room: str, taxonomy: dict[str, dict[str, int]], end: str
    ) -> tuple[str, str]:
        """The stored (wing, room) for an end given by name; NotFoundError naming close ones."""
        wing_n = _stored(wing, taxonomy, "wing", f"The {end} wing {wing!r} is not in the palace")
        room_n = _stored(room, taxonomy[wing_n], "room", f"Wing {wing_n!r} has no room {room!r}")
        if room_n in PRIVATE_ROOMS:
            raise InvalidInputError(
                f"Room {room_n!r} of wing {wing_n!r} is an agent's diary: diaries stay "
                "private, so no tunnel leads into one. Nothing was changed.",
                hint="Link the room the diary entry talks about instead.",
            )
        return wing_n, room_n

    @staticmethod
    def _drawer_end(
        catalog: Catalog, drawer_id: str | None, place: tuple[str, str], end: str
    ) -> str | None:
        if drawer_id is None or not drawer_id.strip():
            return None
        row = catalog.get([drawer_id]).get(drawer_id)
        if row is None:
            raise NotFoundError(
                f"No drawer with id {drawer_id!r} ({end}_drawer_id); nothing was changed.",
                hint="Drawer ids come from search results (drawer_id), or leave it out to link "
                "the rooms.",
            )
        if (row.wing, row.room) != place:
            raise InvalidInputError(
                f"Drawer {drawer_id!r} is filed in {row.wing}/{row.room}, not in the {end} "
                f"room {place[0]}/{place[1]}; nothing was changed.",
                hint=f"Pass {end}_wing {row.wing!r} and {end}_room {row.room!r}, or another "
                "drawer.",
            )
        return drawer_id

    # -- tunnels ----------------------------------------------------------------------------
    def create(
        self,
        source_wing: str,
        source_room: str,
        target_wing: str,
        target_room: str,
        label: str | None = None,
        source_drawer_id: str | None = None,
        target_drawer_id: str | None = None,
    ) -> CreateTunnelResult:
        """Link two rooms (or two drawers in them). The same two ends again, either way round,
        give the same tunnel: its label is updated (when one is given), created is false."""
        label = _clean_label(label)
        catalog, taxonomy = self._places()
        source = self._place(source_wing, source_room, taxonomy, "source")
        target = self._place(target_wing, target_room, taxonomy, "target")
        s_drawer = self._drawer_end(catalog, source_drawer_id, source, "source")
        t_drawer = self._drawer_end(catalog, target_drawer_id, target, "target")
        a, b = (*source, s_drawer), (*target, t_drawer)
        if a == b:
            raise InvalidInputError(
                f"Both ends are {source[0]}/{source[1]}"
                + (f" (drawer {s_drawer})" if s_drawer else "")
                + ": a tunnel joins two different places. Nothing was changed.",
                hint="Name another room (or another drawer of the room) as the target.",
            )
        tid = tunnel_id(a, b)
        with self.lock.hold():
            old = self.links.get_tunnel(tid)
            stamp = now_stamp()
            if old is None:
                tunnel = Tunnel(tid, *a, *b, label, stamp, stamp)
            else:
                tunnel = Tunnel(
                    *_fields(old)[:7],
                    label if label is not None else old.label,
                    old.created_at,
                    stamp,
                )
            self.links.put_tunnel(tunnel)
        return {"success": True, "created": old is None, "tunnel": tunnel.to_dict()}

    def list_tunnels(self, wing: str | None = None) -> ListTunnelsResult:
        """Every explicit tunnel (with `wing`: those with an end in it), oldest first, each
        with the ends that no longer exist (`missing_ends`: their room is empty now, or their
        drawer is gone)."""
        catalog, taxonomy = self._places()
        wing_n = name_to_read(wing, taxonomy, "wing")
        tunnels = self.links.tunnels()
        if wing_n is not None:
            tunnels = [t for t in tunnels if wing_n in (t.source_wing, t.target_wing)]
        missing = _missing_ends(catalog, taxonomy, tunnels)
        result: dict[str, Any] = {
            "wing": wing_n,
            "tunnels": [t.to_dict() | {"missing_ends": missing[t.id]} for t in tunnels],
            "count": len(tunnels),
        }
        if not tunnels:
            result["hint"] = (
                "No explicit tunnels"
                + (f" touch wing {wing_n!r}" if wing_n else " yet")
                + ". Link two rooms with mempalace_create_tunnel; `mempalace tunnels propose` "
                "suggests some from the knowledge graph."
            )
        return result

    def delete(self, tunnel_id_: str) -> DeleteTunnelResult:
        with self.lock.hold():
            tunnel = self.links.get_tunnel(tunnel_id_)
            if tunnel is None:
                raise NotFoundError(
                    f"No tunnel with id {tunnel_id_!r}; nothing was deleted.",
                    hint="Tunnel ids come from mempalace_list_tunnels.",
                )
            self.links.delete_tunnels([tunnel.id])
        return {"success": True, "deleted": tunnel.id, "tunnel": tunnel.to_dict()}

    def follow(self, wing: str, room: str) -> FollowTunnelsResult:
        """The tunnels at a room and where each leads: the other end's wing and room, its
        drawer count, and the linked drawer's opening words when the tunnel names a drawer."""
        catalog, taxonomy = self._places()
        wing_n = name_to_read(wing, taxonomy, "wing")
        assert wing_n is not None
        room_n = name_to_read(room, taxonomy.get(wing_n, {}), "room")
        assert room_n is not None
        connections: list[dict[str, Any]] = []
        for t in self.links.tunnels():
            if (t.source_wing, t.source_room) == (wing_n, room_n):
                direction, far, near_drawer = "outgoing", t.ends()[1], t.source_drawer_id
            elif (t.target_wing, t.target_room) == (wing_n, room_n):
                direction, far, near_drawer = "incoming", t.ends()[0], t.target_drawer_id
            else:
                continue
            connections.append(
                {
                    "tunnel_id": t.id,
                    "direction": direction,
                    "label": t.label,
                    "drawer_id": far[2],  # the drawer at the other end, if the tunnel names one
                    "from_drawer_id": near_drawer,
                    "connected_wing": far[0],
                    "connected_room": far[1],
                    "connected_drawers": taxonomy.get(far[0], {}).get(far[1], 0),
                }
            )
        previews = catalog.get([c["drawer_id"] for c in connections if c["drawer_id"]])
        for c in connections:
            row = previews.get(c["drawer_id"]) if c["drawer_id"] else None
            if row is not None:
                c["drawer_preview"] = row.text[:300]
        result: dict[str, Any] = {
            "wing": wing_n,
            "room": room_n,
            "connections": connections,
            "count": len(connections),
        }
        if room_n not in taxonomy.get(wing_n, {}):
            result["hint"] = f"The palace has no room {room!r} in wing {wing!r}. " + (
                f"Closest rooms: {', '.join(closest(room, taxonomy[wing_n]))}."
                if wing_n in taxonomy
                else f"Closest wings: {', '.join(closest(wing, taxonomy)) or 'none yet'}."
            )
        elif not connections:
            result["hint"] = (
                "No explicit tunnel starts or ends here. Rooms of the same name in other wings "
                "are linked too: see mempalace_find_tunnels and mempalace_traverse."
            )
        return result

    def prune(self, apply: bool = False) -> PruneTunnelsResult:
        """Tunnels with an end that no longer exists (its room has no drawers any more, or its
        drawer is gone). A dry run unless `apply`: then they are deleted."""
        catalog, taxonomy = self._places()
        tunnels = self.links.tunnels()
        missing = _missing_ends(catalog, taxonomy, tunnels)
        dangling = [t for t in tunnels if missing[t.id]]
        removed = 0
        if apply and dangling:
            with self.lock.hold():
                removed = self.links.delete_tunnels([t.id for t in dangling])
        return {
            "dry_run": not apply,
            "total": len(tunnels),
            "dangling": [t.to_dict() | {"missing_ends": missing[t.id]} for t in dangling],
            "matched": len(dangling),
            "removed": removed,
        }

    def propose(self, limit: int = DEFAULT_PROPOSALS, apply: bool = False) -> ProposeTunnelsResult:
        """Tunnels worth making: rooms of two different wings that share knowledge-graph
        entities (their hallway), not linked yet, most shared entities first. With `apply`,
        each is created, labelled with what the rooms share."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidInputError(f"The number of proposals must be 1 or more, not {limit!r}.")
        found = self._hallways()
        linked = {
            frozenset({(t.source_wing, t.source_room), (t.target_wing, t.target_room)})
            for t in self.links.tunnels()
        }
        hidden = self.links.hidden()
        candidates = [
            h
            for h in found["hallways"]
            if h["wing_a"] != h["wing_b"]
            and h["hallway_id"] not in hidden
            and frozenset({(h["wing_a"], h["room_a"]), (h["wing_b"], h["room_b"])}) not in linked
        ]
        proposals = [
            {
                "source_wing": h["wing_a"],
                "source_room": h["room_a"],
                "target_wing": h["wing_b"],
                "target_room": h["room_b"],
                "label": _shares_label(h["entities"]),
                "entities": h["entities"],
                "shared": h["shared"],
            }
            for h in candidates[:limit]
        ]
        created: list[dict[str, Any]] = []
        if apply and proposals:
            with self.lock.hold():  # one lock for the whole batch
                for p in proposals:
                    done = self.create(
                        p["source_wing"],
                        p["source_room"],
                        p["target_wing"],
                        p["target_room"],
                        label=p["label"],
                    )
                    created.append(done["tunnel"])
        result: dict[str, Any] = {
            "dry_run": not apply,
            "candidates": len(candidates),
            "proposals": proposals,
            "created": created,
        }
        if not proposals:
            result["hint"] = (
                "No two rooms of different wings share an entity that no tunnel links yet. "
                + KG_HINT
            )
        return result

    # -- hallways ---------------------------------------------------------------------------
    def _entity_places(self, catalog: Catalog) -> dict[str, set[Place]]:
        """Each knowledge-graph entity -> the rooms it is in (see the module docstring)."""
        try:
            facts = self.knowledge.kg_timeline()["facts"]
        except NoPalaceError:
            return {}
        names: dict[str, str] = {}  # folded -> the name as the graph shows it
        for f in facts:
            for name in (f["subject"], f["object"]):
                names.setdefault(name.casefold(), name)
        places: dict[str, set[Place]] = {name: set() for name in names.values()}
        drawer_rooms = rooms_of_drawers(
            catalog, sorted({f["source_drawer_id"] for f in facts if f.get("source_drawer_id")})
        )
        source_rooms = rooms_of_sources(
            catalog, sorted({f["source_file"] for f in facts if f.get("source_file")})
        )
        for f in facts:
            here: set[Place] = set()
            if f.get("source_drawer_id") in drawer_rooms:
                here.add(drawer_rooms[f["source_drawer_id"]])
            here |= source_rooms.get(f.get("source_file") or "", set())
            for name in (f["subject"], f["object"]):
                places[names[name.casefold()]] |= here
        for name, found in rooms_mentioning(catalog, list(places)).items():
            places[name] |= set(found)
        return {
            name: {p for p in ps if p[1] not in PRIVATE_ROOMS} for name, ps in places.items() if ps
        }

    def _hallways(self) -> dict[str, Any]:
        catalog, taxonomy = self._places()
        places = self._entity_places(catalog)
        shared: dict[tuple[Place, Place], set[str]] = {}
        common: list[str] = []
        for name, rooms in places.items():
            if len(rooms) > MAX_ROOMS_PER_ENTITY:
                common.append(name)
                continue
            for a, b in combinations(sorted(rooms), 2):
                shared.setdefault((a, b), set()).add(name)
        hallways = [
            {
                "hallway_id": hallway_id(a, b),
                "wing_a": a[0],
                "room_a": a[1],
                "wing_b": b[0],
                "room_b": b[1],
                "entities": sorted(names, key=str.casefold),
                "shared": len(names),
                "cross_wing": a[0] != b[0],
            }
            for (a, b), names in shared.items()
        ]
        hallways.sort(
            key=lambda h: (-h["shared"], not h["cross_wing"], h["wing_a"], h["room_a"], h["wing_b"])
        )
        return {
            "hallways": hallways,
            "taxonomy": taxonomy,
            "entities": len(places),
            "common_entities": sorted(common, key=str.casefold),
        }

    def hallways(
        self,
        wing: str | None = None,
        limit: int = 50,
        offset: int = 0,
        include_hidden: bool = False,
    ) -> ListHallwaysResult:
        """Hallways, most shared entities first (with `wing`: those with an end in it), a page
        at a time. Hidden ones are left out and counted (`include_hidden` lists them too,
        marked hidden)."""
        if (
            isinstance(limit, bool)
            or not isinstance(limit, int)
            or not 1 <= limit <= (MAX_HALLWAY_PAGE)
        ):
            raise InvalidInputError(f"limit must be 1 to {MAX_HALLWAY_PAGE}, not {limit!r}.")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise InvalidInputError(f"offset must be 0 or more, not {offset!r}.")
        found = self._hallways()
        wing_n = name_to_read(wing, found["taxonomy"], "wing")
        hidden = self.links.hidden()
        rows = [
            h | {"hidden": h["hallway_id"] in hidden}
            for h in found["hallways"]
            if wing_n is None or wing_n in (h["wing_a"], h["wing_b"])
        ]
        hidden_here = sum(1 for h in rows if h["hidden"])
        if not include_hidden:
            rows = [h for h in rows if not h["hidden"]]
        page = rows[offset : offset + limit]
        result: dict[str, Any] = {
            "wing": wing_n,
            "hallways": page,
            "total": len(rows),
            "hidden": hidden_here,
            "limit": limit,
            "offset": offset,
            "has_more": offset + len(page) < len(rows),
            "entities": found["entities"],
            "common_entities": found["common_entities"],
        }
        if not rows:
            if wing_n is not None and wing_n not in found["taxonomy"]:
                result["hint"] = (
                    f"No wing named {wing!r}. Closest wings: "
                    f"{', '.join(closest(wing_n, found['taxonomy'])) or 'none yet'}."
                )
            elif hidden_here:
                result["hint"] = (
                    f"All {hidden_here} hallway(s) here are hidden: include_hidden: true "
                    "(`mempalace hallways list --hidden`) lists them, `mempalace hallways "
                    "restore ID` brings one back."
                )
            else:
                result["hint"] = "No two rooms share a knowledge-graph entity yet. " + KG_HINT
        return result

    def delete_hallway(self, hid: str) -> DeleteHallwayResult:
        """Hide a hallway for good: it is left out of every later listing (and proposal),
        whatever facts or drawers are added; `restore_hallway` brings it back."""
        hidden = self.links.hidden()
        if hid in hidden:
            return {"success": True, "hallway_id": hid, "already_hidden": True}
        match = next((h for h in self._hallways()["hallways"] if h["hallway_id"] == hid), None)
        if match is None:
            raise NotFoundError(
                f"No hallway with id {hid!r}; nothing was hidden.",
                hint="Hallway ids come from mempalace_list_hallways; a hallway disappears by "
                "itself once its rooms share no entity.",
            )
        record = HiddenHallway(
            hid, match["wing_a"], match["room_a"], match["wing_b"], match["room_b"], now_stamp()
        )
        with self.lock.hold():
            self.links.hide(record)
        return {"success": True, "hallway_id": hid, "hidden": True, "hallway": match}

    def restore_hallway(self, hid: str) -> RestoreHallwayResult:
        with self.lock.hold():
            restored = self.links.unhide(hid)
        if not restored:
            raise NotFoundError(
                f"No hidden hallway with id {hid!r}; nothing was changed.",
                hint="`mempalace hallways list --hidden` shows the hidden ones.",
            )
        return {"success": True, "hallway_id": hid, "hidden": False}


def _stored(name: str, known: dict[str, Any], kind: str, missing: str) -> str:
    """The stored name of a wing or room given as typed; NotFoundError (`missing`) naming the
    closest ones."""
    stored = name_to_read(name, known, kind)
    assert stored is not None
    if stored not in known:
        close = "Closest wings" if kind == "wing" else "Its rooms include"
        raise NotFoundError(
            f"{missing}; nothing was changed.",
            hint=f"{close}: {', '.join(closest(name, known)) or 'none yet'} "
            f"(mempalace_list_{kind}s lists them all).",
        )
    return stored


def _fields(t: Tunnel) -> tuple[Any, ...]:
    return (
        t.id,
        t.source_wing,
        t.source_room,
        t.source_drawer_id,
        t.target_wing,
        t.target_room,
        t.target_drawer_id,
        t.label,
        t.created_at,
        t.updated_at,
    )


def _clean_label(label: str | None) -> str | None:
    if label is None:
        return None
    if not isinstance(label, str):
        raise InvalidInputError(f"The label must be text, not {label!r}.")
    label = " ".join(label.split())
    if len(label) > MAX_LABEL_CHARS:
        raise InvalidInputError(
            f"The label is {len(label):,} characters; at most {MAX_LABEL_CHARS} are kept.",
            hint="Say in a line why the two places belong together; file the rest as a drawer.",
        )
    if not label:
        return None
    return redact(label).text  # secrets never enter the palace, labels included


def _shares_label(entities: list[str]) -> str:
    shown = ", ".join(entities[:5]) + (f" +{len(entities) - 5}" if len(entities) > 5 else "")
    return f"shares {shown}"


def _missing_ends(
    catalog: Catalog, taxonomy: dict[str, dict[str, int]], tunnels: list[Tunnel]
) -> dict[str, list[str]]:
    """tunnel id -> which of its ends ("source", "target") no longer exist."""
    drawers = [d for t in tunnels for d in (t.source_drawer_id, t.target_drawer_id) if d]
    present = catalog.present(drawers) if drawers else set()
    out: dict[str, list[str]] = {}
    for t in tunnels:
        gone = []
        for name, (wing, room, drawer) in zip(("source", "target"), t.ends(), strict=True):
            if room not in taxonomy.get(wing, {}) or (drawer and drawer not in present):
                gone.append(name)
        out[t.id] = gone
    return out
