"""The one service every adapter calls: the CLI, the MCP server and watch mode.

`Palace` combines the operations of each area (drawers, mining, ...) into one object that takes
and returns plain data (dicts, lists, strings, numbers), so every adapter renders the same
results. Older areas live in their own modules and are mixed in here; newer ones are parts the
palace owns and delegates to (`DrawerCuration`), so the facade's verbs stay visible here.

May import: `search`, `miners`, `memory`, `storage`, `embedders` and `common`. Never a front
end (`cli`, `mcp`, `serving`).
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from mempalace_cli.common.config import Settings, resolve_settings
from mempalace_cli.memory.graph import PalaceGraph
from mempalace_cli.memory.kg_store import FactStore
from mempalace_cli.memory.layers import DEFAULT_BUDGET
from mempalace_cli.service.convos import ConvoMiningOps
from mempalace_cli.service.coordination import Coordination
from mempalace_cli.service.curation import DrawerCuration
from mempalace_cli.service.diary import Diary
from mempalace_cli.service.drawers import DrawerOps
from mempalace_cli.service.knowledge import Knowledge
from mempalace_cli.service.migrating import MigrateOps
from mempalace_cli.service.mining import MiningOps
from mempalace_cli.service.navigation import PalaceNavigation
from mempalace_cli.service.neighbours import DrawerNeighbours
from mempalace_cli.service.reembed import ReembedOps
from mempalace_cli.service.sessions import Sessions
from mempalace_cli.service.tunnels import Tunnels
from mempalace_cli.service.upkeep import Upkeep
from mempalace_cli.service.wakeup import WakeUp
from mempalace_cli.service.watching import WatchOps


class Palace(
    WatchOps,
    MiningOps,
    ConvoMiningOps,
    DrawerOps,
    ReembedOps,
    MigrateOps,
):
    """One palace: every operation the tool offers."""

    # -- parts a front end calls directly (`palace.tunnels.create(...)`) ---------------------
    @cached_property
    def tunnels(self) -> Tunnels:
        return Tunnels(self)

    @cached_property
    def upkeep(self) -> Upkeep:
        return Upkeep(self)

    @cached_property
    def coordination(self) -> Coordination:
        return Coordination(self)

    @cached_property
    def sessions(self) -> Sessions:
        return Sessions(self)

    @cached_property
    def curation(self) -> DrawerCuration:
        return DrawerCuration(self)

    # -- drawer keeping (service/curation.py) -----------------------------------------------
    def get_drawers(self, ids: list[str]) -> dict[str, Any]:
        return self.curation.get_drawers(ids)

    def list_drawers(
        self,
        wing: str | None = None,
        room: str | None = None,
        since: str | None = None,
        before: str | None = None,
        limit: int = 20,
        offset: int = 0,
        source: str | None = None,
    ) -> dict[str, Any]:
        return self.curation.list_drawers(wing, room, since, before, limit, offset, source)

    def update_drawer(
        self,
        drawer_id: str,
        content: str | None = None,
        wing: str | None = None,
        room: str | None = None,
    ) -> dict[str, Any]:
        return self.curation.update_drawer(drawer_id, content, wing, room)

    def forget(
        self,
        drawer_ids: list[str] | None = None,
        source: str | None = None,
        wing: str | None = None,
        room: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        return self.curation.forget(drawer_ids, source, wing, room, dry_run)

    # -- a drawer's place in its file (service/neighbours.py) -------------------------------
    @cached_property
    def neighbours(self) -> DrawerNeighbours:
        return DrawerNeighbours(self)

    def drawer_neighbours(self, drawer_id: str, around: int = 2) -> dict[str, Any]:
        return self.neighbours.drawer_neighbours(drawer_id, around)

    # -- the temporal knowledge graph (service/knowledge.py) -------------------------------
    @cached_property
    def knowledge(self) -> Knowledge:
        return Knowledge(self)

    @property
    def kg(self) -> FactStore:
        """The palace's fact store (SQLite in its folder, or on its Chroma server)."""
        return self.knowledge.kg

    def close(self) -> None:
        if "knowledge" in self.__dict__:
            self.knowledge.close()
        super().close()

    def kg_add(
        self,
        subject: str,
        predicate: str,
        obj: str,
        valid_from: str | None = None,
        valid_to: str | None = None,
        confidence: float = 1.0,
        source_drawer_id: str | None = None,
        source_file: str | None = None,
        subject_type: str | None = None,
        object_type: str | None = None,
        source_closet: str | None = None,
    ) -> dict[str, Any]:
        return self.knowledge.kg_add(
            subject,
            predicate,
            obj,
            valid_from,
            valid_to,
            confidence,
            source_drawer_id,
            source_file,
            subject_type,
            object_type,
            source_closet,
        )

    def kg_supersede(
        self, subject: str, predicate: str, old_object: str, new_object: str, at: str | None = None
    ) -> dict[str, Any]:
        return self.knowledge.kg_supersede(subject, predicate, old_object, new_object, at)

    def kg_invalidate(
        self, subject: str, predicate: str, obj: str, ended: str | None = None
    ) -> dict[str, Any]:
        return self.knowledge.kg_invalidate(subject, predicate, obj, ended)

    def kg_query(
        self, entity: str, as_of: str | None = None, direction: str = "both"
    ) -> dict[str, Any]:
        return self.knowledge.kg_query(entity, as_of, direction)

    def kg_timeline(
        self, entity: str | None = None, limit: int | None = None, offset: int = 0
    ) -> dict[str, Any]:
        return self.knowledge.kg_timeline(entity, limit, offset)

    def kg_stats(self) -> dict[str, Any]:
        return self.knowledge.kg_stats()

    # -- an agent's diary (service/diary.py) ------------------------------------------------
    @cached_property
    def diary(self) -> Diary:
        return Diary(self)

    def diary_write(
        self, agent: str, content: str, topic: str | None = None, wing: str | None = None
    ) -> dict[str, Any]:
        return self.diary.diary_write(agent, content, topic, wing)

    def diary_read(self, agent: str, last: int = 10, wing: str | None = None) -> dict[str, Any]:
        return self.diary.diary_read(agent, last, wing)

    # -- walking the palace graph (service/navigation.py) -----------------------------------
    @cached_property
    def navigation(self) -> PalaceNavigation:
        return PalaceNavigation(self)

    def palace_graph(self) -> PalaceGraph:
        return self.navigation.palace_graph()

    def traverse(self, start_room: str, max_hops: int = 2) -> dict[str, Any]:
        return self.navigation.traverse(start_room, max_hops)

    def find_tunnels(self, wing_a: str | None = None, wing_b: str | None = None) -> dict[str, Any]:
        return self.navigation.find_tunnels(wing_a, wing_b)

    def graph_stats(self) -> dict[str, Any]:
        return self.navigation.graph_stats()

    def export_graph(self, fmt: str = "mermaid") -> str:
        return self.navigation.export_graph(fmt)

    # -- what an agent reads first (service/wakeup.py) --------------------------------------
    @cached_property
    def waking(self) -> WakeUp:
        return WakeUp(self)

    def wake_up(self, wing: str | None = None, budget: int = DEFAULT_BUDGET) -> dict[str, Any]:
        return self.waking.wake_up(wing, budget)

    def protocol(self) -> str:
        return self.waking.protocol()

    def aaak_spec(self) -> str:
        return self.waking.aaak_spec()

    def aaak_encode(self, text: str, **meta: Any) -> str:
        return self.waking.aaak_encode(text, **meta)

    def identity(self) -> dict[str, Any]:
        return self.waking.identity()

    def set_identity(self, text: str) -> dict[str, Any]:
        return self.waking.set_identity(text)


def open_palace(
    palace: str | None = None, chroma_url: str | None = None, settings: Settings | None = None
) -> Palace:
    return Palace(settings or resolve_settings(palace, chroma_url))


__all__ = ["Palace", "open_palace"]
