"""Walking the palace: traverse from a room, find the tunnels between wings, graph stats, and
exports to Mermaid or Graphviz DOT. Everything is computed from drawer metadata in the
catalogue, never from drawer text, plus the explicit tunnels stored in the palace
(service/tunnels.py). A part the `Palace` facade owns and delegates to."""

from __future__ import annotations

import difflib
from typing import Any

from mempalace_cli.common.errors import InvalidInputError, NotFoundError
from mempalace_cli.common.naming import normalize_name
from mempalace_cli.memory.graph import EXPORT_FORMATS, PalaceGraph
from mempalace_cli.service.core import PalaceCore, Part
from mempalace_cli.service.names import name_to_read
from mempalace_cli.service.results import FindTunnelsResult, GraphStatsResult, TraverseResult
from mempalace_cli.storage.catalog import Catalog

MAX_HOPS = 10


def read_catalog(core: PalaceCore) -> Catalog:
    """The catalogue, ready to read. A local palace's catalogue is kept in step by every write
    we make, so it is read as is (no Chroma import); a palace whose catalogue is missing (made by
    MemPalace) or whose drawers live on a Chroma server is mirrored first."""
    if core.backend.sync_before_reading(core.catalog):
        core.require()
        core.sync()
    return core.catalog


class PalaceNavigation(Part):
    """The graph verbs, over the palace's catalogue."""

    def palace_graph(self) -> PalaceGraph:
        counts = read_catalog(self.core).counts_by_wing_room()
        return PalaceGraph(counts, self._explicit_links())

    def _explicit_links(self) -> list[dict[str, Any]]:
        """The palace's explicit tunnels (storage/graph_links.py; service/tunnels.py makes
        them): none, and nothing created, while it has none."""
        links = self.core.backend.open_links()
        return [t.to_dict() for t in links.tunnels()]

    def traverse(self, start_room: str, max_hops: int = 2) -> TraverseResult:
        """Rooms reachable from `start_room` within `max_hops`, breadth-first. An unknown room
        gives `found: false` and close names in `suggestions`."""
        if not isinstance(max_hops, int) or not 1 <= max_hops <= MAX_HOPS:
            raise InvalidInputError(f"max_hops must be 1 to {MAX_HOPS}, not {max_hops!r}.")
        if not start_room or not start_room.strip():
            raise InvalidInputError(
                "Name the room to start from.", hint="List rooms with: mempalace traverse --stats"
            )
        graph = self.palace_graph()
        room = _pick(start_room, graph.rooms, "room")
        if room is None:
            suggestions = graph.suggestions(normalize_name(start_room))
            if suggestions:
                message = f"No room named {start_room!r}. Close names: {', '.join(suggestions)}."
            elif graph.rooms:
                message = (
                    f"No room named {start_room!r} and none close; rooms include: "
                    f"{', '.join(sorted(graph.rooms)[:8])}."
                )
                suggestions = sorted(graph.rooms, key=lambda r: -graph.rooms[r].drawers)[:5]
            else:
                message = "The palace has no rooms yet. Next: mempalace mine <dir>"
            return {
                "start": start_room,
                "found": False,
                "max_hops": max_hops,
                "results": [],
                "count": 0,
                "suggestions": suggestions,
                "message": message,
            }
        results = graph.traverse(room, max_hops)
        return {
            "start": room,
            "found": True,
            "max_hops": max_hops,
            "results": results,
            "count": len(results),
            "suggestions": [],
        }

    def find_tunnels(
        self, wing_a: str | None = None, wing_b: str | None = None
    ) -> FindTunnelsResult:
        """Rooms filed in two or more wings (both given wings, when given), most drawers first."""
        graph = self.palace_graph()
        wings = []
        for given in (wing_a, wing_b):
            if given is None:
                wings.append(None)
                continue
            wing = _pick(given, graph.wings, "wing")
            if wing is None:
                close = difflib.get_close_matches(given, list(graph.wings), n=5, cutoff=0.4)
                names = close or sorted(graph.wings)[:8]
                raise NotFoundError(
                    f"No wing named {given!r}.",
                    hint=(
                        f"Wings: {', '.join(names)}."
                        if names
                        else "The palace has no wings yet. Next: mempalace mine <dir>"
                    ),
                )
            wings.append(wing)
        tunnels = [n.summary() for n in graph.tunnels(wings[0], wings[1])]
        return {
            "wing_a": wings[0],
            "wing_b": wings[1],
            "tunnels": tunnels,
            "count": len(tunnels),
            # Made on purpose (mempalace_create_tunnel): between rooms of any names.
            "explicit": graph.explicit(wings[0], wings[1]),
        }

    def graph_stats(self) -> GraphStatsResult:
        return self.palace_graph().stats()

    def export_graph(self, fmt: str = "mermaid") -> str:
        """The whole palace graph as Mermaid or Graphviz DOT source text."""
        if fmt not in EXPORT_FORMATS:
            raise InvalidInputError(
                f"Unknown graph format {fmt!r}.", hint=f"Use one of: {', '.join(EXPORT_FORMATS)}."
            )
        return self.palace_graph().export(fmt)


def _pick(name: str, known: dict[str, Any], field: str) -> str | None:
    """The stored name for `name` under the one name rule (service/names.py): as given, or
    normalised the way rooms and wings are filed; None when the palace has no such name."""
    stored = name_to_read(name, known, field)
    return stored if stored in known else None
