"""The coordination log agents hand work through: events (append, list, wait, ack), tasks,
artifacts and patches, durable in the palace and shared through a team palace's server."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mempalace_cli.service import Palace


class Coordination:
    def __init__(self, palace: Palace) -> None:
        self._palace = palace
