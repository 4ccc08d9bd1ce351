"""Explicit tunnels between rooms (create, list, delete, follow) and hallways: rooms linked
through knowledge-graph entities they share."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mempalace_cli.service import Palace


class Tunnels:
    def __init__(self, palace: Palace) -> None:
        self._palace = palace
