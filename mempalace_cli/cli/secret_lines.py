"""What `mine` (and `mine --watch`) say about secrets: the values redacted, where, and the
credential files skipped (mempalace_cli/miners/secrets.py decides; this only prints)."""

from __future__ import annotations

from typing import Any

from mempalace_cli.cli.env import Env

KEEP_SECRETS_HELP = (
    "File credential files (.env, private keys, cloud and registry logins...) and secret "
    "values as they are. By default such files are skipped and secrets in text are replaced "
    "by [REDACTED:kind]. Applies to --watch too; the MCP tools have no such option."
)
SHOWN = 20


def say_redacted(env: Env, what: str) -> None:
    """The line after a write that redacted secrets: `what` ("2 secrets in the entry") were
    replaced by [REDACTED:kind]."""
    env.out.print(
        f"{what} replaced by [REDACTED:kind]: secrets never enter the palace.",
        highlight=False,
        markup=False,
    )


def _where(entry: dict[str, Any]) -> str:
    if "line" in entry:
        return f"{entry['file']}:{entry['line']}"
    return f"{entry['file']} (conversation {entry['conversation']!r}, exchange {entry['exchange']})"


def render_secrets(env: Env, report: dict[str, Any]) -> None:
    """After the mining table: what was redacted (file and line, never the value), how many
    credential files were skipped, or a warning that --keep-secrets kept them."""
    secrets = report.get("secrets")
    if not secrets:
        return
    out = env.out
    if secrets.get("kept"):
        env.err.print(
            "[bold]Note:[/] --keep-secrets: credential files and secret values were filed as "
            "found; run mine again without it to take them out.",
            highlight=False,
            soft_wrap=True,
        )
        return
    count, where = secrets["redacted"], secrets["where"]
    if count:
        verb = "Would redact" if report.get("dry_run") else "Redacted"
        out.print(
            f"{verb} {count} secret{'s' if count != 1 else ''} (each value replaced by "
            "[REDACTED:kind]; rotate any that were real):",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        for entry in where[:SHOWN]:
            out.print(f"  {_where(entry)}  {entry['kind']}", highlight=False, markup=False)
        if len(where) > SHOWN:
            out.print(
                f"  ... and {len(where) - SHOWN} more (see --json)", highlight=False, markup=False
            )
    if secrets["credential_files"]:
        out.print(
            f"Skipped {_credentials(secrets['credential_files'])} (listed with the reason under "
            "Skipped; --keep-secrets files them).",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )


def batch_note(report: dict[str, Any]) -> str:
    """The secrets part of a watch batch's line ("" when there is nothing to say)."""
    secrets = report.get("secrets") or {}
    parts = []
    if secrets.get("redacted"):
        n = secrets["redacted"]
        parts.append(f"{n} secret{'s' if n != 1 else ''} redacted")
    if secrets.get("credential_files"):
        parts.append(f"{_credentials(secrets['credential_files'])} skipped")
    return "; " + ", ".join(parts) if parts else ""


def _credentials(paths: list[str]) -> str:
    """How many, in words: 3 credential files and 1 credential folder (a folder ends in /)."""
    folders = sum(1 for p in paths if p.endswith("/"))
    files = len(paths) - folders
    parts = [
        f"{n} credential {what}{'s' if n != 1 else ''}"
        for n, what in ((files, "file"), (folders, "folder"))
        if n
    ]
    return " and ".join(parts)
