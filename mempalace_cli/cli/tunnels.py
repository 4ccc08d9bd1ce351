"""`mempalace tunnels` and `mempalace hallways`: the palace graph's explicit links."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    pass
