"""Keeping a palace in step with its sources: checkpoint (several drawers and a diary entry in
one all-or-nothing write) and sync (drawers whose source file is gone, moved or ignored)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mempalace_cli.service import Palace


class Upkeep:
    def __init__(self, palace: Palace) -> None:
        self._palace = palace
