"""The one service every adapter calls: the CLI, the MCP server and watch mode.

`Palace` combines the operations of each area (drawers, mining, ...) into one object that takes
and returns plain data (dicts, lists, strings, numbers), so every adapter renders the same
results. Areas live in their own modules and are mixed in here.
"""

from __future__ import annotations

from mempalace_cli.config import Settings, resolve_settings
from mempalace_cli.service.convos import ConvoMiningOps
from mempalace_cli.service.diary import DiaryOps
from mempalace_cli.service.drawers import DrawerOps
from mempalace_cli.service.knowledge import KnowledgeOps
from mempalace_cli.service.mining import MiningOps
from mempalace_cli.service.navigation import NavigationOps
from mempalace_cli.service.reembed import ReembedOps
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
    ReembedOps,
):
    """One palace: every operation the tool offers."""


def open_palace(
    palace: str | None = None, chroma_url: str | None = None, settings: Settings | None = None
) -> Palace:
    return Palace(settings or resolve_settings(palace, chroma_url))


__all__ = ["Palace", "open_palace"]
