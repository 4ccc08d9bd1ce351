"""Filing an agent session's transcript when a client hook fires (stop, session end, before
compaction), once however many times the hook runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mempalace_cli.service import Palace


class Sessions:
    def __init__(self, palace: Palace) -> None:
        self._palace = palace
