"""What every command shares: the selected palace, output streams, JSON output, and the one
table that maps core errors to messages and exit statuses."""

from __future__ import annotations

import contextlib
import json
import logging
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console

from mempalace_cli import errors

if TYPE_CHECKING:
    from mempalace_cli.service import Palace

# Exit statuses, one table for the whole CLI.
EXIT_OK = 0
EXIT_UNEXPECTED = 1
EXIT_USAGE = 2
EXIT_STATUS: dict[type[errors.MemPalaceError], int] = {
    errors.InvalidInputError: 2,
    errors.NoPalaceError: 3,
    errors.NotFoundError: 4,
    errors.PalaceLockedError: 5,
    errors.PalaceCorruptError: 6,
    errors.IncompatiblePalaceError: 6,
    errors.ConfigError: 7,
    errors.ModelUnavailableError: 8,
    # The operating system refused: named for what it is, never as a damaged palace.
    errors.DiskFullError: 9,
    errors.PermissionDeniedError: 10,
    errors.NotADirectoryPathError: 11,
    errors.StorageError: 12,
    # A Chroma server (a team palace): down or slow, refusing our token; migrate's check.
    errors.ServerError: 13,
    errors.ServerAuthError: 14,
    errors.MigrationMismatchError: 15,
}


def exit_status(exc: errors.MemPalaceError) -> int:
    for cls in type(exc).__mro__:
        if cls in EXIT_STATUS:
            return EXIT_STATUS[cls]
    return EXIT_UNEXPECTED


@dataclass
class Env:
    palace_option: str | None = None
    chroma_url: str | None = None
    chroma_token: str | None = None
    chroma_ca_file: str | None = None
    chroma_database: str | None = None
    out: Console = field(default_factory=lambda: Console(soft_wrap=False))
    err: Console = field(default_factory=lambda: Console(stderr=True))
    _palace: Palace | None = None

    @property
    def interactive(self) -> bool:
        return sys.stdin.isatty() and sys.stdout.isatty()

    def palace(self) -> Palace:
        if self._palace is None:
            from mempalace_cli.config import resolve_settings
            from mempalace_cli.service import open_palace

            settings = resolve_settings(
                self.palace_option,
                self.chroma_url,
                chroma_token=self.chroma_token,
                chroma_ca_file=self.chroma_ca_file,
                chroma_database=self.chroma_database,
            )
            self._palace = open_palace(settings=settings)
        return self._palace


def get_env(ctx: typer.Context) -> Env:
    root = ctx.find_root()
    if not isinstance(root.obj, Env):
        root.obj = Env()
    return root.obj


class _NoteHandler(logging.Handler):
    """Prints the core's warnings (a repaired palace index) on stderr as a note."""

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):
            sys.stderr.write(f"Note: {record.getMessage()}\n")
            sys.stderr.flush()


def show_core_notes() -> None:
    """Route the consistency module's warnings to stderr (stdout stays one JSON document)."""
    logger = logging.getLogger("mempalace.consistency")
    if not any(isinstance(h, _NoteHandler) for h in logger.handlers):
        logger.addHandler(_NoteHandler())
        logger.propagate = False


def print_json(data: Any) -> None:
    """One JSON document on stdout, nothing else."""
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")
    sys.stdout.flush()


def report_error(exc: errors.MemPalaceError, as_json: bool) -> int:
    code = exit_status(exc)
    if as_json:
        print_json({"error": {"message": exc.message, "hint": exc.hint, "kind": exc.kind}})
    else:
        err = Console(stderr=True, soft_wrap=True)
        err.print(f"[bold red]Error:[/] {exc.message}", highlight=False)
        if exc.hint:
            err.print(f"[dim]Hint:[/] {exc.hint}", highlight=False)
    return code
