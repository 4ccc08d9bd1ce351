"""An agent's diary: entries filed as drawers in wing `wing_<agent>` (or a wing the agent
names), room `diary`, so search finds them too. Reading goes to the catalogue only (no Chroma,
no model). Diaries stay private: the palace graph leaves `diary` rooms out of tunnel
detection, and an agent name with no letters or digits is refused rather than shared. A part
the `Palace` facade owns and delegates to."""

from __future__ import annotations

import hashlib
import time
from datetime import UTC, datetime
from typing import Any

from mempalace_cli.common.errors import InvalidInputError
from mempalace_cli.miners.secrets import redact_for_drawer
from mempalace_cli.service.core import PalaceCore, Part
from mempalace_cli.service.drawers import check_content
from mempalace_cli.service.names import name_to_file, name_to_read
from mempalace_cli.service.navigation import read_catalog
from mempalace_cli.service.results import DiaryReadResult, DiaryWriteResult
from mempalace_cli.service.writer import DrawerWriter
from mempalace_cli.storage.catalog import DrawerRow

DIARY_ROOM = "diary"
DEFAULT_TOPIC = "general"
MAX_READ = 1000


def diary_wing(agent: str, wing: str | None = None) -> str:
    """The diary's wing: `wing` when given, else `wing_<agent>`."""
    if not isinstance(agent, str) or not agent.strip():
        raise InvalidInputError(
            "The agent name is empty.", hint="Name the agent whose diary this is, e.g. claude."
        )
    name = name_to_file(agent, "agent name")
    if wing is not None:
        return name_to_file(wing, "wing")
    return name if name.startswith("wing_") else f"wing_{name}"


def entry_row(
    agent: str, content: str, topic: str | None = None, wing: str | None = None
) -> tuple[DrawerRow, dict[str, Any]]:
    """A diary entry as the drawer row to file (checked, secrets redacted) and the result a
    write returns; nothing is written here (`Diary.diary_write`, and `checkpoint` in
    service/upkeep.py, which files it with other drawers in one write)."""
    wing = diary_wing(agent, wing)
    check_content(content)
    topic = (topic or "").strip() or DEFAULT_TOPIC
    # Secrets never enter the palace (the topic too: it is stored and returned).
    content, topic, secrets = redact_for_drawer(content, topic)
    assert topic is not None
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
        "date": time.strftime("%Y-%m-%d", time.localtime(stamp.timestamp())),  # user's day
        "date_source": "diary",  # what search --since/--before compare (filters.py)
        "added_by": agent.strip(),
        "ingest_mode": "diary",
        "content_hash": hashlib.sha256(content.encode("utf-8")).hexdigest(),
    }
    row = DrawerRow(drawer_id, wing, DIARY_ROOM, "", None, timestamp, content, meta)
    result = {
        "success": True,
        "drawer_id": drawer_id,
        "agent": agent.strip(),
        "wing": wing,
        "timestamp": timestamp,
        "topic": topic,
    } | secrets
    return row, result


class Diary(Part):
    """The diary verbs, over the palace's resources; entries are filed as drawers through the
    `DrawerWriter` it is given."""

    def __init__(self, core: PalaceCore, writer: DrawerWriter) -> None:
        super().__init__(core)
        self.writer = writer

    def diary_write(
        self, agent: str, content: str, topic: str | None = None, wing: str | None = None
    ) -> DiaryWriteResult:
        """Add an entry (to `wing` when given, else the agent's own wing). Every call files a
        new drawer, even with text written before."""
        row, result = entry_row(agent, content, topic, wing)
        self.create()
        self.sync()
        vec = self.embedder.embed([row.text])
        with self.lock.hold():
            self.writer.file([row], vec)
        return result

    def diary_read(self, agent: str, last: int = 10, wing: str | None = None) -> DiaryReadResult:
        """The agent's `last` entries, newest first, and how many there are in all. With
        `wing`, the agent's entries in that wing's diary."""
        diary_wing(agent)  # refuses names that can't be an agent
        if isinstance(last, bool) or not isinstance(last, int) or not 1 <= last <= MAX_READ:
            raise InvalidInputError(f"last must be 1 to {MAX_READ}, not {last!r}.")
        catalog = read_catalog(self.core)
        if wing is not None:
            known = {w for w, _r, _n in catalog.counts_by_wing_room()}
            wing = name_to_read(wing, known, "wing") or diary_wing(agent)
            only_agent: str | None = agent.strip()
        else:
            wing, only_agent = diary_wing(agent), None
        total = catalog.count(wing, DIARY_ROOM)
        entries = []
        for row in catalog.iter_drawers(wing, DIARY_ROOM, order="filed_at DESC, rowid DESC"):
            if only_agent is not None and row.metadata.get("agent") != only_agent:
                continue
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
        if only_agent is not None:  # a shared wing: count only this agent's entries
            total = sum(
                1
                for r in catalog.iter_drawers(wing, DIARY_ROOM)
                if r.metadata.get("agent") == only_agent
            )
        return {"agent": agent.strip(), "wing": wing, "entries": entries, "total": total}
