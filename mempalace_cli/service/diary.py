"""An agent's diary: entries filed as drawers in wing `wing_<agent>`, room `diary`, so search
finds them too. Reading goes to the catalogue only (no Chroma, no model)."""

from __future__ import annotations

import hashlib
import time
from datetime import UTC, datetime
from typing import Any

from mempalace_cli.catalog import DrawerRow
from mempalace_cli.errors import InvalidInputError
from mempalace_cli.miners.rooms import normalize_name
from mempalace_cli.service.core import PalaceCore
from mempalace_cli.service.drawers import _check_content
from mempalace_cli.service.navigation import read_catalog

DIARY_ROOM = "diary"
DEFAULT_TOPIC = "general"
MAX_READ = 1000


def diary_wing(agent: str) -> str:
    if not isinstance(agent, str) or not agent.strip():
        raise InvalidInputError(
            "The agent name is empty.", hint="Name the agent whose diary this is, e.g. claude."
        )
    name = normalize_name(agent)
    return name if name.startswith("wing_") else f"wing_{name}"


class DiaryOps(PalaceCore):
    def diary_write(self, agent: str, content: str, topic: str | None = None) -> dict[str, Any]:
        """Add an entry. Every call files a new drawer, even with text written before."""
        wing = diary_wing(agent)
        _check_content(content)
        topic = (topic or "").strip() or DEFAULT_TOPIC
        stamp = datetime.now(UTC)
        timestamp = stamp.isoformat(timespec="seconds")
        # The clock in nanoseconds keeps identical entries written at different times apart.
        digest = hashlib.sha256(f"{wing}\x00{time.time_ns()}\x00{content}".encode()).hexdigest()
        drawer_id = f"drawer_{wing}_{DIARY_ROOM}_{digest[:16]}"
        meta: dict[str, Any] = {
            "agent": agent.strip(),
            "topic": topic,
            "type": "diary_entry",
            "hall": "hall_diary",
            "date": stamp.date().isoformat(),
            "added_by": agent.strip(),
            "ingest_mode": "diary",
            "content_hash": hashlib.sha256(content.encode("utf-8")).hexdigest(),
        }
        row = DrawerRow(drawer_id, wing, DIARY_ROOM, "", None, timestamp, content, meta)
        self.create()
        self.sync()
        vec = self.embedder.embed([content])
        with self.lock.hold():
            self._file_drawers([row], vec)
        return {
            "success": True,
            "drawer_id": drawer_id,
            "agent": agent.strip(),
            "wing": wing,
            "timestamp": timestamp,
            "topic": topic,
        }

    def diary_read(self, agent: str, last: int = 10) -> dict[str, Any]:
        """The agent's `last` entries, newest first, and how many there are in all."""
        wing = diary_wing(agent)
        if not isinstance(last, int) or not 1 <= last <= MAX_READ:
            raise InvalidInputError(f"last must be 1 to {MAX_READ}, not {last!r}.")
        catalog = read_catalog(self)
        total = catalog.count(wing, DIARY_ROOM)
        entries = []
        for row in catalog.iter_drawers(wing, DIARY_ROOM, order="filed_at DESC, rowid DESC"):
            entries.append(
                {
                    "timestamp": row.filed_at,
                    "topic": row.metadata.get("topic"),
                    "content": row.text,
                    "drawer_id": row.id,
                }
            )
            if len(entries) >= last:
                break
        return {"agent": agent.strip(), "wing": wing, "entries": entries, "total": total}
