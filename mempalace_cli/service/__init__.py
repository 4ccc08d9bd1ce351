"""The one service every adapter calls: the CLI, the MCP server and watch mode.

`Palace` combines the operations of each area (drawers, mining, ...) into one object that takes
and returns plain data (dicts, lists, strings, numbers), so every adapter renders the same
results. Older areas live in their own modules and are mixed in here; newer ones are parts the
palace owns and delegates to (`DrawerCuration`), so the facade's verbs stay visible here.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from mempalace_cli.config import Settings, resolve_settings
from mempalace_cli.service.convos import ConvoMiningOps
from mempalace_cli.service.curation import DrawerCuration
from mempalace_cli.service.diary import DiaryOps
from mempalace_cli.service.drawers import DrawerOps
from mempalace_cli.service.knowledge import KnowledgeOps
from mempalace_cli.service.migrating import MigrateOps
from mempalace_cli.service.mining import MiningOps
from mempalace_cli.service.navigation import NavigationOps
from mempalace_cli.service.wakeup import WakeUpOps
from mempalace_cli.service.watching import WatchOps


class Palace(
    WatchOps,
    MiningOps,
    ConvoMiningOps,
    DrawerOps,
    KnowledgeOps,
    DiaryOps,
    NavigationOps,
    WakeUpOps,
    MigrateOps,
):
    """One palace: every operation the tool offers."""

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
    ) -> dict[str, Any]:
        return self.curation.list_drawers(wing, room, since, before, limit, offset)

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


def open_palace(
    palace: str | None = None, chroma_url: str | None = None, settings: Settings | None = None
) -> Palace:
    return Palace(settings or resolve_settings(palace, chroma_url))


__all__ = ["Palace", "open_palace"]
