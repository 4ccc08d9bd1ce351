"""The one service every adapter calls: the CLI, the MCP server and watch mode.

`Palace` is a facade over parts: each area (drawers, search, mining, conversations, watch,
curation, the knowledge graph, the diary, the palace graph, wake-up, re-embedding, migration,
tunnels, upkeep, coordination, sessions, the `mempalace ui` overview, duplicate groups,
organisation) is a class of its own module, made on first use and given what it needs: the
palace's shared resources (`PalaceCore`: settings, drawer store, catalogue, lock, embedder;
service/core.py) and, where it writes drawers or builds on another part, that part
(`DrawerWriter` for every drawer write). No part calls another's private methods. The facade
forwards the verbs a front end calls (`palace.search(...)`); a front end
may also call a part directly (`palace.tunnels.create(...)`). Verbs take and return plain data
(dicts, lists, strings, numbers), so every adapter renders the same results.

Start-up stays lazy: a part's module is imported the first time the part is used (`_Part`
below), so `mempalace kg` never imports the file and chat miners or chromadb, and each part's
module imports what it needs at its top (a heavy package through `common.lazy`). Adding a
part: a module here with a class taking the core (and the parts it builds on), one `_Part`
line, and a `_verb` line for each verb a front end calls.

May import: `search`, `miners`, `memory`, `storage`, `embedders` and `common`. Never a front
end (`cli`, `mcp`, `serving`).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from mempalace_cli.common.config import Settings, resolve_settings
from mempalace_cli.embedders.base import Embedder
from mempalace_cli.service.core import PalaceCore, Part, Via

if TYPE_CHECKING:
    from mempalace_cli.memory.kg_store import FactStore
    from mempalace_cli.service.convos import ConvoMining
    from mempalace_cli.service.coordination import Coordination
    from mempalace_cli.service.curation import DrawerCuration
    from mempalace_cli.service.diary import Diary
    from mempalace_cli.service.drawers import Drawers
    from mempalace_cli.service.duplicates import DuplicateGroups
    from mempalace_cli.service.knowledge import Knowledge
    from mempalace_cli.service.migrating import Migration
    from mempalace_cli.service.mining import Mining
    from mempalace_cli.service.navigation import PalaceNavigation
    from mempalace_cli.service.neighbours import DrawerNeighbours
    from mempalace_cli.service.organisation import Organisation
    from mempalace_cli.service.overview import Overview
    from mempalace_cli.service.reembed import Reembedding
    from mempalace_cli.service.results import ReconnectResult
    from mempalace_cli.service.searching import Search
    from mempalace_cli.service.sessions import Sessions
    from mempalace_cli.service.tunnels import Tunnels
    from mempalace_cli.service.upkeep import Upkeep
    from mempalace_cli.service.wakeup import WakeUp
    from mempalace_cli.service.watching import Watch
    from mempalace_cli.service.writer import DrawerWriter


class _Part(Via[Any]):
    """A part of the palace, made on first use and kept: its module (service/<module>.py) is
    imported only then, so `import mempalace_cli.service` loads none of them. It is given the
    palace's shared resources (`PalaceCore`) and the parts named in `needs`, in that order."""

    def __init__(self, module: str, cls: str, *needs: str) -> None:
        super().__init__(module)
        self.cls, self.needs = cls, needs

    def read(self, obj: Any) -> Any:
        make = getattr(import_module(f"mempalace_cli.service.{self.holder}"), self.cls)
        part = make(obj.core, *(getattr(obj, need) for need in self.needs))
        return obj.__dict__.setdefault(self.name, part)  # two threads at once: one part kept


def _built_on(base: str) -> list[str]:
    """`base` and every part of the palace given it, directly or through another part."""
    found = [base]
    for name, part in vars(Palace).items():  # declared after the parts they build on
        if isinstance(part, _Part) and set(part.needs) & set(found):
            found.append(name)
    return found


def _verb(part: str) -> Via[Any]:
    """A verb of the facade, done by `part` (see `Via`)."""
    return Via(part)


class Palace(Part):
    """One palace: every operation the tool offers, each done by one of its parts. As a
    `Part` it reads the palace's shared resources (`palace.catalog`, `palace.lock`,
    `palace.sync()`...) from its core, like every part."""

    def __init__(self, settings: Settings | None = None) -> None:
        # The parts embed through `self.embedder`, so a subclass that overrides it (the
        # benchmarks' stand-ins, the MCP write lane's own model instances) embeds everything.
        super().__init__(PalaceCore(settings, embedder_source=lambda: self.embedder))

    @property
    def embedder(self) -> Embedder:
        """What embeds this palace's vectors and queries: its own model."""
        return self.core.model_embedder()

    @property
    def sibling_writer(self) -> Palace | None:
        """The MCP server's write-lane palace, if any: while it writes from a catalogue in
        step, reads here need not wait for its lock (`PalaceCore.sibling_writer`)."""
        return self._sibling_writer

    @sibling_writer.setter
    def sibling_writer(self, other: Palace | None) -> None:
        self._sibling_writer = other
        self.core.sibling_writer = other.core if other is not None else None

    _sibling_writer: Palace | None = None

    def close(self) -> None:
        if "knowledge" in self.__dict__:
            self.knowledge.close()
        self.core.close()

    def reopen(self) -> ReconnectResult:
        """Drop every cached handle (drawer store, catalogue, knowledge graph, tunnels) and
        read the palace afresh, after another program changed or replaced its files: the
        knowledge graph and the parts built on it are made again on next use. Returns what
        the palace now holds (`Upkeep.health`)."""
        dropped = ["drawer store", "catalogue"]
        self.store.reset_handle()
        self.catalog.close()
        if "knowledge" in self.__dict__:
            self.knowledge.close()
            dropped.append("knowledge graph")
        if "tunnels" in self.__dict__:
            self.tunnels.close()
            dropped.append("tunnels")
        for name in _built_on("knowledge"):
            self.__dict__.pop(name, None)
        self.core.rebind()
        return self.upkeep.health(dropped, facts=self.kg_stats)

    # -- the parts: module, class, and the other parts each is given -------------------------
    # (`writer` files and removes drawers, for every part that writes)
    writer: Via[DrawerWriter] = _Part("writer", "DrawerWriter")
    drawers: Via[Drawers] = _Part("drawers", "Drawers", "writer")
    searching: Via[Search] = _Part("searching", "Search")
    curation: Via[DrawerCuration] = _Part("curation", "DrawerCuration", "writer", "drawers")
    neighbours: Via[DrawerNeighbours] = _Part("neighbours", "DrawerNeighbours")
    convos: Via[ConvoMining] = _Part("convos", "ConvoMining", "writer")
    mining: Via[Mining] = _Part("mining", "Mining", "writer", "convos")
    watching: Via[Watch] = _Part("watching", "Watch", "writer", "mining")
    knowledge: Via[Knowledge] = _Part("knowledge", "Knowledge")
    diary: Via[Diary] = _Part("diary", "Diary", "writer")
    navigation: Via[PalaceNavigation] = _Part("navigation", "PalaceNavigation")
    waking: Via[WakeUp] = _Part("wakeup", "WakeUp")
    reembedding: Via[Reembedding] = _Part("reembed", "Reembedding")
    migration: Via[Migration] = _Part("migrating", "Migration")
    tunnels: Via[Tunnels] = _Part("tunnels", "Tunnels", "knowledge")
    upkeep: Via[Upkeep] = _Part("upkeep", "Upkeep", "writer", "drawers")
    coordination: Via[Coordination] = _Part("coordination", "Coordination")
    sessions: Via[Sessions] = _Part("sessions", "Sessions", "writer")
    overview: Via[Overview] = _Part("overview", "Overview", "knowledge", "curation")
    duplicate_groups: Via[DuplicateGroups] = _Part("duplicates", "DuplicateGroups", "curation")
    organisation: Via[Organisation] = _Part("organisation", "Organisation", "knowledge")

    # -- the verbs a front end calls, each done by one part -------------------------------
    # the overview and single drawers (service/drawers.py)
    status = _verb("drawers")
    list_wings = _verb("drawers")
    list_rooms = _verb("drawers")
    get_taxonomy = _verb("drawers")
    get_drawer = _verb("drawers")
    check_duplicate = _verb("drawers")
    add_drawer = _verb("drawers")
    add_drawers = _verb("drawers")
    delete_drawer = _verb("drawers")
    # search (service/searching.py)
    search = _verb("searching")
    stay_warm = _verb("searching")
    # drawer keeping (service/curation.py, service/neighbours.py)
    get_drawers = _verb("curation")
    list_drawers = _verb("curation")
    update_drawer = _verb("curation")
    forget = _verb("curation")
    drawer_neighbours = _verb("neighbours")
    # mining and watching (service/mining.py, service/watching.py)
    init_project = _verb("mining")
    mine = _verb("mining")
    mine_paths = _verb("watching")
    # the temporal knowledge graph (service/knowledge.py)
    kg_add = _verb("knowledge")
    kg_supersede = _verb("knowledge")
    kg_invalidate = _verb("knowledge")
    kg_query = _verb("knowledge")
    kg_timeline = _verb("knowledge")
    kg_stats = _verb("knowledge")
    # an agent's diary (service/diary.py)
    diary_write = _verb("diary")
    diary_read = _verb("diary")
    # walking the palace graph (service/navigation.py)
    traverse = _verb("navigation")
    find_tunnels = _verb("navigation")
    graph_stats = _verb("navigation")
    export_graph = _verb("navigation")
    # what an agent reads first (service/wakeup.py)
    wake_up = _verb("waking")
    protocol = _verb("waking")
    aaak_spec = _verb("waking")
    aaak_encode = _verb("waking")
    identity = _verb("waking")
    set_identity = _verb("waking")
    # the embedding model and where the palace lives (service/reembed.py, migrating.py)
    reembed = _verb("reembedding")
    embedding_models = _verb("reembedding")
    migrate = _verb("migration")

    @property
    def kg(self) -> FactStore:
        """The palace's fact store (SQLite in its folder, or on its Chroma server)."""
        return self.knowledge.kg


def open_palace(
    palace: str | None = None, chroma_url: str | None = None, settings: Settings | None = None
) -> Palace:
    return Palace(settings or resolve_settings(palace, chroma_url))


__all__ = ["Palace", "open_palace"]
