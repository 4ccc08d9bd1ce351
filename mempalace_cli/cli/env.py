"""What every command shares: the selected palace, output streams, JSON output, and the one
table that maps core errors to messages and exit statuses.

Output rules, kept here for every command:
- Values go into rich markup only through `markup()` (or `escape()` for one value): a path, a
  wing, a query or a file name holding `[/]` or `[bold]` prints as typed.
- A console that writes to a pipe or a file (`make_console`) has no colour and never wraps:
  `mempalace search ... | cat` prints whole lines.
- Every error, a usage error from Typer/Click or the core's MemPalaceError, is printed by
  `report_error`: "Error: ..." and "Hint: ..." on stderr (or one JSON document with --json), in
  CLI words (`words.cli_words`), with its status from the one exit-status table.
"""

from __future__ import annotations

import contextlib
import logging
import string
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from mempalace_cli.cli.words import cli_words
from mempalace_cli.common import errors
from mempalace_cli.common.config import resolve_settings
from mempalace_cli.common.lazy import lazy
from mempalace_cli.common.serialize import to_json

if TYPE_CHECKING:
    from rich.console import Console

    from mempalace_cli.service import Palace

rich_console = lazy("rich.console")
rich_markup = lazy("rich.markup")

# Every command that opens the palace reaches the service through Env.palace(); `--help`,
# `mcp-config` and `rules` never do, so they don't import it.
service = lazy("mempalace_cli.service")

# Exit statuses: one table for the CLI and the MCP server, kept in errors.py.
EXIT_OK = errors.EXIT_OK
EXIT_UNEXPECTED = errors.EXIT_UNEXPECTED
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # Ctrl-C, as shells report a SIGINT death (128 + 2)
EXIT_BROKEN_PIPE = 141  # the reader of stdout went away, as shells report SIGPIPE (128 + 13)
EXIT_STATUS = errors.EXIT_STATUS
exit_status = errors.exit_status


# -h works wherever --help does (inherited by every sub-command's context).
CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}


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
            self._out = make_console()
        return self._out

    @property
    def err(self) -> Console:
        if self._err is None:
            self._err = make_console(stderr=True, quiet=self._quiet)
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
            settings = resolve_settings(
                self.palace_option,
                self.chroma_url,
                chroma_token=self.chroma_token,
                chroma_ca_file=self.chroma_ca_file,
                chroma_database=self.chroma_database,
            )
            self._palace = service.open_palace(settings=settings)
        return self._palace


@contextlib.contextmanager
def serving(palace: Palace) -> Iterator[None]:
    """A server's run (`serve-mcp`, `ui`): Ctrl-C ends it with exit status 0, and the palace is
    closed however it ends."""
    try:
        yield
    except KeyboardInterrupt:
        raise typer.Exit(0) from None
    finally:
        palace.close()


MODEL_BUILD_NOTICE = "Preparing the embedding model (first run only, a few seconds)…"


def model_build_notice(env: Env) -> Callable[[str], None]:
    """The listener for `model_cache.on_build`: the first load of a model, which builds its
    cache, says so in one line on stderr when stderr is a terminal (not with --quiet)."""

    def notice(model: str) -> None:
        if not env.quiet and env.err.is_terminal:
            env.err.print(MODEL_BUILD_NOTICE, highlight=False)

    return notice


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
    """Route the core's notes to stderr (stdout stays one JSON document): the consistency
    module's repairs and one-time notices such as a keyword index upgrade."""
    for name in ("mempalace.consistency", "mempalace.notice"):
        logger = logging.getLogger(name)
        if not any(isinstance(h, _NoteHandler) for h in logger.handlers):
            logger.addHandler(_NoteHandler())
            logger.propagate = False


def print_json(data: Any) -> None:
    """One JSON document on stdout, nothing else."""
    sys.stdout.write(to_json(data, indent=2) + "\n")
    sys.stdout.flush()


# Wider than any line: output to a pipe or a file is never wrapped (whole lines for grep, cut...).
PIPE_WIDTH = 1_000_000


def make_console(stderr: bool = False, quiet: bool = False) -> Console:
    """A rich console for the CLI. Emoji codes (`:smile:` in a file name) stay text; on a
    terminal it wraps to the terminal's width, with colour; to a pipe or a file it has no colour
    and is as wide as any line, so nothing is wrapped or cut. rich is imported here, on first
    use (see Env)."""

    console = rich_console.Console(stderr=stderr, quiet=quiet, emoji=False, soft_wrap=False)
    # A closed pipe ends the command through the CLI's one exit edge (status 141, quietly),
    # not rich's own exit 1.
    console.on_broken_pipe = _raise_broken_pipe  # type: ignore[method-assign]
    if not console.is_terminal:
        console.width = PIPE_WIDTH
    return console


def _raise_broken_pipe() -> None:
    raise BrokenPipeError


def escape(text: object) -> str:
    """One value, shown as it is inside rich markup (`markup("{}", value)`)."""

    return rich_markup.escape(str(text))


class _EscapingFormatter(string.Formatter):
    def format_field(self, value: Any, format_spec: str) -> str:
        return escape(super().format_field(value, format_spec))


_FORMATTER = _EscapingFormatter()


def markup(template: str, /, *args: Any, **kwargs: Any) -> str:
    """`template`, rich markup written in the code, with its `{}` fields (str.format syntax,
    `{!r}` and format specs included) filled by values shown as they are: every value is
    escaped, so a path, a name or a query holding `[/]` or `[red]` prints literally. The one way
    the CLI puts values into text that rich reads as markup: console.print, Tree labels, Table
    titles and cells.

    Example: out.print(markup("[bold]{}[/] into wing [cyan]{}[/]", path, wing))"""
    return _FORMATTER.format(template, *args, **kwargs)


def _print_problem(label: str, message: str, hint: str | None) -> None:
    err = make_console(stderr=True)
    err.soft_wrap = True  # the terminal wraps an error; rich never cuts it
    err.print(markup("[bold red]{}[/] {}", label, message), highlight=False)
    if hint:
        err.print(markup("[dim]Hint:[/] {}", hint), highlight=False)


class UsageProblem(errors.InvalidInputError):
    """A usage error found by Typer/Click (an unknown command or option, a missing argument, a
    value out of range), reported like every other error."""

    kind = "usage"


def usage_problem(exc: Any) -> UsageProblem:
    """Click's exception as an error with a hint: the command's usage line and its --help."""
    ctx = getattr(exc, "ctx", None)
    path = ctx.command_path if ctx is not None else "mempalace"
    usage = ctx.get_usage().strip() if ctx is not None else ""
    usage = usage.removeprefix("Usage:").strip()
    more = f"options and an example: {path} --help"
    return UsageProblem(
        exc.format_message(), hint=f"Usage: {usage}  ({more})" if usage else more.capitalize()
    )


def report_error(exc: errors.MemPalaceError, as_json: bool) -> int:
    """The CLI's one error edge: the message and hint in CLI words (`cli_words`), on stderr as
    "Error: ... / Hint: ..." or, with --json, as {"error": {message, hint, kind}} on stdout;
    returns the exit status."""

    failure = errors.failure_of(exc)  # the one mapping, shared with the MCP server
    message, hint = cli_words(failure.message) or "", cli_words(failure.hint)
    if as_json:
        print_json({"error": {"message": message, "hint": hint, "kind": failure.kind}})
    else:
        label = "Not found:" if isinstance(exc, errors.NotFoundError) else "Error:"
        _print_problem(label, message, hint)
    return failure.status


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

    message, hint = cli_words(message) or "", cli_words(hint)
    if as_json:
        error = {"message": message, "hint": hint, "kind": errors.NotFoundError.kind}
        document = dict(document or {})
        if isinstance(document.get("hint"), str):
            document["hint"] = cli_words(document["hint"])
        print_json({**document, "error": error})
    else:
        _print_problem("Not found:", message, hint)
    raise typer.Exit(EXIT_STATUS[errors.NotFoundError])
