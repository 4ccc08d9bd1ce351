"""The palace graph: rooms as nodes, wings as the corridors between them.

Two rooms of one wing are neighbours; a room name filed in two or more wings is a tunnel that
joins those wings. The graph is built from (wing, room, drawer count) triples only, which the
catalogue answers with one GROUP BY, so no drawer text is ever fetched.

A private room (an agent's `diary`) belongs to its wing alone, however many wings have one:
it is never a tunnel, never counts as an edge, and is drawn as one node per wing, so two
agents' diaries never link their wings.

Explicit tunnels (made on purpose: `mempalace tunnels create`, service/tunnels.py) join two
rooms directly, whatever their wings: the walk crosses them as one hop, stats count them and
exports draw them as dashed links. One whose room is gone (or private) is left out.
"""

from __future__ import annotations

import difflib
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

EXPORT_FORMATS = ("mermaid", "dot")
# Every agent's diary is a room of this name in the agent's own wing: a shared name, not a
# shared topic, so it never makes a tunnel (diaries stay private).
PRIVATE_ROOMS = frozenset({"diary"})


@dataclass
class RoomNode:
    name: str
    wings: dict[str, int] = field(default_factory=dict)  # wing -> drawers of this room there

    @property
    def drawers(self) -> int:
        return sum(self.wings.values())

    @property
    def is_private(self) -> bool:
        return self.name in PRIVATE_ROOMS

    @property
    def is_tunnel(self) -> bool:
        return len(self.wings) > 1 and not self.is_private

    def summary(self, wing: str | None = None) -> dict[str, Any]:
        """The room's wings and drawers; with `wing`, only that wing's (a private room reached
        through its wing is that wing's alone)."""
        wings = self.wings if wing is None else {wing: self.wings[wing]}
        return {
            "room": self.name,
            "wings": sorted(wings),
            "drawers": sum(wings.values()),
            "drawers_by_wing": dict(sorted(wings.items())),
            "tunnel": self.is_tunnel,  # a private room in several wings is none
        }


class PalaceGraph:
    def __init__(
        self, counts: Iterable[tuple[str, str, int]], links: Iterable[dict[str, Any]] = ()
    ) -> None:
        """`counts`: (wing, room, drawers); `links`: explicit tunnels as stored (id,
        source_wing, source_room, target_wing, target_room, label...)."""
        self.rooms: dict[str, RoomNode] = {}
        self.wings: dict[str, dict[str, int]] = {}  # wing -> room -> drawers
        for wing, room, n in counts:
            if not room:
                continue
            self.rooms.setdefault(room, RoomNode(room)).wings[wing] = n
            self.wings.setdefault(wing, {})[room] = n
        # Explicit tunnels whose two rooms are in the graph (and public), by room.
        self.links: list[dict[str, Any]] = []
        self._links_at: dict[str, list[tuple[dict[str, Any], str, str]]] = {}
        for link in links:
            ends = [(link["source_wing"], link["source_room"])]
            ends.append((link["target_wing"], link["target_room"]))
            if any(r in PRIVATE_ROOMS or r not in self.wings.get(w, {}) for w, r in ends):
                continue
            self.links.append(link)
            (wa, ra), (wb, rb) = ends
            self._links_at.setdefault(ra, []).append((link, rb, wb))
            self._links_at.setdefault(rb, []).append((link, ra, wa))

    # -- lookups ------------------------------------------------------------------------------
    def suggestions(self, name: str, limit: int = 5) -> list[str]:
        """Room names close to `name`: near spellings first, then names containing it."""
        key = name.strip().lower()
        close = difflib.get_close_matches(key, list(self.rooms), n=limit, cutoff=0.5)
        containing = sorted(r for r in self.rooms if key and (key in r or r in key))
        return list(dict.fromkeys(close + containing))[:limit]

    def tunnels(self, wing_a: str | None = None, wing_b: str | None = None) -> list[RoomNode]:
        """Rooms in two or more wings (including both given wings), most drawers first."""
        found = [
            node
            for node in self.rooms.values()
            if node.is_tunnel
            and (wing_a is None or wing_a in node.wings)
            and (wing_b is None or wing_b in node.wings)
        ]
        return sorted(found, key=lambda n: (-n.drawers, n.name))

    def explicit(
        self, wing_a: str | None = None, wing_b: str | None = None
    ) -> list[dict[str, Any]]:
        """Explicit tunnels with an end in `wing_a` (and the other in `wing_b`), as stored."""

        def touches(link: dict[str, Any]) -> bool:
            wings = (link["source_wing"], link["target_wing"])
            if wing_a is not None and wing_a not in wings:
                return False
            if wing_b is None:
                return True
            rest = list(wings)
            if wing_a is not None:
                rest.remove(wing_a)
            return wing_b in rest

        return [link for link in self.links if touches(link)]

    def edge_count(self) -> int:
        """Tunnel links: one per pair of wings a shared room joins (private rooms join none)."""
        return sum(len(n.wings) * (len(n.wings) - 1) // 2 for n in self.tunnels())

    def _nodes(self) -> list[tuple[str, str | None]]:
        """The drawn room nodes, as (room, None) for a room shared by name and (room, wing)
        for each wing's own private room, sorted by room then wing."""
        nodes: list[tuple[str, str | None]] = []
        for room in sorted(self.rooms):
            node = self.rooms[room]
            if node.is_private:
                nodes += [(room, wing) for wing in sorted(node.wings)]
            else:
                nodes.append((room, None))
        return nodes

    # -- traversal ----------------------------------------------------------------------------
    def traverse(self, start: str, max_hops: int) -> list[dict[str, Any]]:
        """Breadth-first from `start`: each hop moves to the other rooms of a wing the current
        room is in, so a tunnel room carries the walk into every wing it belongs to, and
        along each explicit tunnel at the room (`via.explicit`: the tunnel's id)."""
        origin = self.rooms[start]
        results = [{**origin.summary(), "hop": 0, "via": None}]
        seen = {start}
        expanded_wings: set[str] = set()
        frontier = deque([start])
        for hop in range(1, max_hops + 1):
            next_frontier: deque[str] = deque()
            for room in frontier:
                if room in PRIVATE_ROOMS and room != start:
                    continue  # a diary is no corridor into other agents' wings
                for wing in sorted(self.rooms[room].wings):
                    if wing in expanded_wings:
                        continue  # every room of this wing is already seen
                    expanded_wings.add(wing)
                    for other in sorted(self.wings[wing]):
                        if other in seen:
                            continue
                        seen.add(other)
                        node = self.rooms[other]
                        via = {"from": room, "wing": wing, "tunnel": node.is_tunnel}
                        # A private room reached through a wing is that wing's own.
                        shown = node.summary(wing if node.is_private else None)
                        results.append({**shown, "hop": hop, "via": via})
                        next_frontier.append(other)
                for link, other, wing in self._links_at.get(room, []):
                    if other in seen:
                        continue
                    seen.add(other)
                    via = {
                        "from": room,
                        "wing": wing,
                        "tunnel": True,
                        "explicit": link["id"],
                        "label": link.get("label"),
                    }
                    results.append({**self.rooms[other].summary(), "hop": hop, "via": via})
                    next_frontier.append(other)
            frontier = next_frontier
            if not frontier:
                break
        return results

    # -- summary ------------------------------------------------------------------------------
    def stats(self, top: int = 10) -> dict[str, Any]:
        tunnels = self.tunnels()
        return {
            "rooms": len(self.rooms),
            "wings": len(self.wings),
            "drawers": sum(n.drawers for n in self.rooms.values()),
            "tunnels": len(tunnels),
            "edges": self.edge_count(),
            "explicit_tunnels": len(self.links),
            "rooms_per_wing": {w: len(rooms) for w, rooms in sorted(self.wings.items())},
            "top_tunnels": [n.summary() for n in tunnels[:top]],
        }

    # -- export -------------------------------------------------------------------------------
    def to_mermaid(self) -> str:
        """A Mermaid flowchart: wings as boxes, rooms as rounded nodes, tunnels highlighted."""
        wing_ids = {w: f"w{i}" for i, w in enumerate(sorted(self.wings))}
        room_ids = {key: f"r{i}" for i, key in enumerate(self._nodes())}
        lines = ["flowchart LR"]
        for wing, wid in wing_ids.items():
            lines.append(f'    {wid}["{_mermaid_text(wing)}"]:::wing')
        for (room, own), rid in room_ids.items():
            node = self.rooms[room]
            style = ":::tunnel" if node.is_tunnel else ""
            n = node.summary(own)["drawers"]
            lines.append(f'    {rid}("{_mermaid_text(room)} ({n})"){style}')
        for wing, rooms in sorted(self.wings.items()):
            for room, n in sorted(rooms.items()):
                rid = room_ids[(room, wing if self.rooms[room].is_private else None)]
                lines.append(f"    {wing_ids[wing]} -- {n} --> {rid}")
        for link in self.links:
            a, b = room_ids[(link["source_room"], None)], room_ids[(link["target_room"], None)]
            label = link.get("label")
            text = f'|"{_mermaid_text(label).replace("|", "/")}"|' if label else ""
            lines.append(f"    {a} -.-{text} {b}")
        lines.append("    classDef wing fill:#e8f0fe,stroke:#4a6fa5")
        lines.append("    classDef tunnel fill:#fff4d6,stroke:#c58b00,stroke-width:2px")
        return "\n".join(lines) + "\n"

    def to_dot(self) -> str:
        """A Graphviz DOT graph (`dot -Tsvg palace.dot -o palace.svg`)."""
        lines = ["graph palace {", "    rankdir=LR;", '    node [fontname="Helvetica"];']
        for wing in sorted(self.wings):
            lines.append(
                f"    {_dot_id('wing:' + wing)} [label={_dot_id(wing)}, shape=box, "
                'style=filled, fillcolor="#e8f0fe"];'
            )
        for room, own in self._nodes():
            node = self.rooms[room]
            fill = ', style=filled, fillcolor="#fff4d6"' if node.is_tunnel else ""
            n = node.summary(own)["drawers"]
            unit = "drawer" if n == 1 else "drawers"
            label = _dot_id(room)[:-1] + f'\\n{n} {unit}"'  # two-line label
            lines.append(f"    {_room_dot_id(room, own)} [label={label}, shape=ellipse{fill}];")
        for wing, rooms in sorted(self.wings.items()):
            for room, n in sorted(rooms.items()):
                room_id = _room_dot_id(room, wing if self.rooms[room].is_private else None)
                lines.append(f'    {_dot_id("wing:" + wing)} -- {room_id} [label="{n}"];')
        for link in self.links:
            a, b = _room_dot_id(link["source_room"], None), _room_dot_id(link["target_room"], None)
            label = f", label={_dot_id(link['label'])}" if link.get("label") else ""
            lines.append(f"    {a} -- {b} [style=dashed{label}];")
        lines.append("}")
        return "\n".join(lines) + "\n"

    def export(self, fmt: str) -> str:
        return self.to_mermaid() if fmt == "mermaid" else self.to_dot()


def _mermaid_text(text: str) -> str:
    return text.replace('"', "#quot;")


def _room_dot_id(room: str, own_wing: str | None) -> str:
    """A room node's DOT id: `room:NAME`, or `room:WING/NAME` for a wing's private room."""
    return _dot_id(f"room:{own_wing}/{room}" if own_wing is not None else f"room:{room}")


def _dot_id(text: str) -> str:
    """A quoted DOT identifier."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
