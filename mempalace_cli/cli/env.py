"""What every command shares: the selected palace, output streams, JSON output, and the one
table that maps core errors to messages and exit statuses."""

from __future__ import annotations

import contextlib
import json
import logging
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from mempalace_cli import errors

if TYPE_CHECKING:
    from rich.console import Console

    from mempalace_cli.service import Palace

# Exit statuses, one table for the whole CLI.
EXIT_OK = 0
EXIT_UNEXPECTED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # Ctrl-C, as shells report a SIGINT death (128 + 2)
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


# -h works wherever --help does (inherited by every sub-command's context).
CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}
JSON_HELP = "Print one JSON document on stdout instead of text (also accepted before the command)."


@dataclass
class Env:
    palace_option: str | None = None
    chroma_url: str | None = None
    chroma_token: str | None = None
    chroma_ca_file: str | None = None
    chroma_database: str | None = None
    json: bool = False  # --json given before the sub-command
    _palace: Palace | None = None
    # rich costs ~70 ms to import: made on first use, so `--json` output never pays for it.
    _out: Console | None = field(default=None, repr=False)
    _err: Console | None = field(default=None, repr=False)
    _quiet: bool = False

    @property
    def out(self) -> Console:
        if self._out is None:
            from rich.console import Console

            self._out = Console(soft_wrap=False)
        return self._out

    @property
    def err(self) -> Console:
        if self._err is None:
            from rich.console import Console

            self._err = Console(stderr=True, quiet=self._quiet)
        return self._err

    def set_quiet(self, quiet: bool) -> None:
        """--quiet: no progress, no notes on stderr; results and errors still print."""
        self._quiet = quiet
        if self._err is not None:
            self._err.quiet = quiet

    @property
    def quiet(self) -> bool:
        return self._quiet

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


def _json_or_global(ctx: typer.Context, value: bool) -> bool:
    return bool(value) or get_env(ctx).json


def json_option(help: str = JSON_HELP) -> Any:
    """Every command's --json; true as well when --json came before the sub-command."""
    return typer.Option(False, "--json", help=help, callback=_json_or_global)


class _NoteHandler(logging.Handler):
    """Prints the core's warnings (a repaired palace index) on stderr as a note."""

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):
            sys.stderr.write(f"Note: {record.getMessage()}\n")
            sys.stderr.flush()


def show_core_notes() -> None:
    """Route the core's notes to stderr (stdout stays one JSON document): the consistency
    module's repairs and one-time notices such as a keyword index upgrade."""
    for name in ("mempalace.consistency", "mempalace.notice"):
        logger = logging.getLogger(name)
        if not any(isinstance(h, _NoteHandler) for h in logger.handlers):
            logger.addHandler(_NoteHandler())
            logger.propagate = False


def print_json(data: Any) -> None:
    """One JSON document on stdout, nothing else."""
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")
    sys.stdout.flush()


def escape(text: str) -> str:
    """rich's markup escape, imported when first needed (see Env)."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def _print_problem(label: str, message: str, hint: str | None) -> None:
    from rich.console import Console

    err = Console(stderr=True, soft_wrap=True)
    err.print(f"[bold red]{label}[/] {escape(message)}", highlight=False)
    if hint:
        err.print(f"[dim]Hint:[/] {escape(hint)}", highlight=False)


def report_error(exc: errors.MemPalaceError, as_json: bool) -> int:
    code = exit_status(exc)
    if as_json:
        print_json({"error": {"message": exc.message, "hint": exc.hint, "kind": exc.kind}})
    else:
        label = "Not found:" if isinstance(exc, errors.NotFoundError) else "Error:"
        _print_problem(label, exc.message, exc.hint)
    return code


def did_you_mean(suggestions: list[str] | None) -> str | None:
    return f"Did you mean: {', '.join(suggestions)}?" if suggestions else None


def report_not_found(
    as_json: bool,
    message: str,
    hint: str | None = None,
    document: dict[str, Any] | None = None,
) -> NoReturn:
    """The one not-found rule, for a name or filter that matches nothing (a mistyped wing, an
    unknown entity or room, dates that exclude everything): "Not found: ..." and a hint naming
    the closest names on stderr, exit status 4 (NotFoundError's). With --json, the command's
    own result document (empty results, suggestions) plus the same `error` object that every
    failing command prints."""
    if as_json:
        error = {"message": message, "hint": hint, "kind": errors.NotFoundError.kind}
        print_json({**(document or {}), "error": error})
    else:
        _print_problem("Not found:", message, hint)
    raise typer.Exit(EXIT_STATUS[errors.NotFoundError])
