"""`mempalace hook`, `rules`, `split` and `audit`: what agent clients and their users run."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    pass
