"""`mempalace log`, `mempalace task` and `mempalace artifact`: the coordination log."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    pass
