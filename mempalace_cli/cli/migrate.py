"""`mempalace migrate`: move a palace to a Chroma server, or from one into a folder."""

from __future__ import annotations

import shlex
from typing import Any

import typer

from mempalace_cli.cli.env import get_env, markup, print_json
from mempalace_cli.cli.options import json_option, option


def migrate(
    ctx: typer.Context,
    to_url: str = option("--to", "URL", "Copy this palace's folder to the server at URL."),
    from_url: str = option(
        "--from", "URL", "Copy the palace on the server at URL into the folder."
    ),
    batch: int = option("--batch", "N", "Drawers per request.", default=500, min=1, max=5000),
    kg_file: str = option(
        "--kg",
        "FILE",
        "The knowledge graph to copy with --to (default: the palace's own; for a "
        "MemPalace 3.x palace: ~/.mempalace/knowledge_graph.sqlite3).",
    ),
    json_output: bool = json_option("Print one JSON document."),
) -> None:
    """Copy drawers (with their vectors, no re-embedding), facts, diaries and identity between
    the palace folder and a Chroma server; run it again to resume; verified at the end.

    Example: mempalace migrate --to http://team-host:8000 --palace ~/.mempalace/palace

    And back into a folder: mempalace migrate --from http://team-host:8000 --palace ./copy
    """
    env = get_env(ctx)

    def progress(stage: str, done: int, total: int) -> None:
        if not json_output and env.interactive:
            env.err.print(markup("\r{}: {}/{}", stage, done, total), end="", highlight=False)

    result = env.palace().migrate(
        to_url=to_url, from_url=from_url, batch=batch, kg_file=kg_file, progress=progress
    )
    if json_output:
        print_json(result)
        return
    if env.interactive:
        env.err.print()
    _render(env, result)


def _render(env: Any, result: dict[str, Any]) -> None:
    d, f = result["drawers"], result["facts"]
    drawers = result["verified"]["drawers"]["target"]
    env.out.print(
        markup(
            "Migrated {} -> {}: {} ({} copied, {} already there), {} ({} new){}.",
            result["from"],
            result["to"],
            _n(d["total"], "drawer"),
            d["copied"],
            d["already_there"],
            _n(f["total"], "fact"),
            f["copied"],
            ", identity" if result["identity"] else "",
        ),
        highlight=False,
    )
    env.out.print(
        markup(
            "Verified: {} drawers, ids {}, content {} match the source; the source was only read.",
            drawers["count"],
            drawers["id_digest"][:12],
            drawers["content_digest"][:12],
        ),
        highlight=False,
    )
    if str(result["to"]).startswith(("http://", "https://")):  # copied to a server
        env.out.print(
            "Next: point this machine at the server (chroma_url in config.toml, or "
            "MEMPALACE_CHROMA_URL) and run: mempalace status",
            highlight=False,
        )
    else:  # copied from a server into a folder
        env.out.print(
            markup(
                "Next: use the folder (mempalace --palace {} status, or palace_path in "
                "config.toml, and drop chroma_url there if this machine should read it).",
                shlex.quote(str(result["to"])),
            ),
            highlight=False,
        )


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def register(app: typer.Typer) -> None:
    app.command()(migrate)
