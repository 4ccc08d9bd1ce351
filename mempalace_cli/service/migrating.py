"""Moving the palace to or from a Chroma server (the work is in service/migration.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mempalace_cli.service.core import Part
from mempalace_cli.service.migration import DEFAULT_BATCH, Progress, migrate_palace
from mempalace_cli.service.results import MigrateResult


class Migration(Part):
    """`migrate`: reads only the palace's settings (it opens both ends itself)."""

    def migrate(
        self,
        to_url: str | None = None,
        from_url: str | None = None,
        batch: int = DEFAULT_BATCH,
        kg_file: str | Path | None = None,
        progress: Progress | None = None,
    ) -> MigrateResult:
        """Copy this palace's folder to the server at `to_url`, or the server palace at
        `from_url` into this palace's folder; resumable, verified, the source only read."""
        kwargs: dict[str, Any] = {"progress": progress} if progress else {}
        return migrate_palace(
            self.settings,
            to_url=to_url,
            from_url=from_url,
            batch=batch,
            kg_file=Path(kg_file).expanduser() if kg_file else None,
            **kwargs,
        )
