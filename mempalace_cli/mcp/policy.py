"""What an agent may make the palace do over MCP: small rules the tool table applies before any
work, each with a message that says what was refused and what to do instead.

- Mining roots: `mempalace_mine` reads only under the folders the owner allowed
  (`serve-mcp --mine-root DIR`, config.toml's `mcp_mine_roots`), none by default. The request
  must be an absolute path; it and the roots are compared after resolving symlinks and `..`,
  so a link inside an allowed folder that leads out of it is refused.
- Bulk deletes: never by a filesystem root, the home folder (or a folder holding it), the
  server's working folder (or a folder holding it); at most MAX_BULK_DELETE drawers per call;
  a dry run unless the call says `dry_run: false`.

Standard library and the error types only: no mcp, no store.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

from mempalace_cli.common.errors import InvalidInputError
from mempalace_cli.mcp.options import ServeOptions

MAX_BULK_DELETE = 1000  # drawers one MCP call may remove; more needs `mempalace forget`
SHOWN_SOURCES = 20  # sources listed in a bulk delete's result (the biggest first)
SHOWN_DRAWERS = 100  # drawers listed in a bulk delete's result
MINE_ROOT_FLAG = "--mine-root"
_DRIVE_ROOT = re.compile(r"[A-Za-z]:[\\/]*|[\\/]{1,2}")
_FORGET_HINT = (
    "run `mempalace forget --source PATH` in a terminal: it lists what would go and asks first"
)


class NotAllowedError(InvalidInputError):
    """A call this server's owner did not allow; nothing was read, filed or removed."""


# -- mining roots ------------------------------------------------------------------------------
def how_to_allow(options: ServeOptions) -> str:
    return (
        f"The server's owner can allow a folder by starting it with `mempalace serve-mcp "
        f"{MINE_ROOT_FLAG} /path/to/folder` (repeat for several), or by adding "
        f'mcp_mine_roots = ["/path/to/folder"] to {options.config_path} and restarting it.'
    )


def _realpath(path: str | Path) -> Path:
    try:
        return Path(os.path.realpath(path))
    except (ValueError, OSError) as exc:  # a NUL byte, a name the OS can't take
        raise InvalidInputError(
            f"{str(path)[:200]!r} is not a usable path ({exc}); nothing was done.",
            hint="Pass a plain absolute path.",
        ) from exc


def check_mine_source(source: str, options: ServeOptions) -> Path:
    """The folder to mine, symlinks resolved, when it lies inside an allowed mining root.
    Raises NotAllowedError otherwise: no roots allowed, a relative or ~ path, or a path that
    is (or leads, through a symlink or `..`) outside every root."""
    roots = options.mine_roots
    if not roots:
        raise NotAllowedError(
            "Mining over MCP is off on this server: its owner allowed no folders, so nothing "
            "was mined.",
            hint=how_to_allow(options),
        )
    allowed = ", ".join(str(r) for r in roots)
    if source.startswith("~") or not os.path.isabs(source):
        raise NotAllowedError(
            f"{source[:200]!r} is not an absolute path, so nothing was mined: mempalace_mine "
            "takes absolute paths only (~ and relative paths would depend on the server's own "
            "user and working folder).",
            hint=f"Pass the folder's full path, inside an allowed folder: {allowed}.",
        )
    real = _realpath(source)
    for root in roots:
        root_real = _realpath(root)
        if real == root_real or real.is_relative_to(root_real):
            return real
    raise NotAllowedError(
        f"{source[:200]!r} is outside the folders this server may mine (checked after "
        f"following symlinks and '..'), so nothing was mined. Allowed: {allowed}.",
        hint="Pass a folder inside one of them. To mine anywhere else, ask the owner: "
        + how_to_allow(options),
    )


# -- bulk deletes ------------------------------------------------------------------------------
def _home() -> Path | None:
    try:
        return Path.home()
    except RuntimeError:  # no HOME and no passwd entry
        return None


def _forms(path: Path) -> set[Path]:
    """A path as written (normalised: `..` folded) and with its symlinks resolved."""
    return {Path(os.path.normpath(path)), _realpath(path)}


def too_broad(source: str, cwd: Path | None = None, home: Path | None = None) -> str | None:
    """Why deleting every drawer from `source` is refused over MCP, or None when it may go
    ahead: a filesystem or drive root, the home folder or a folder holding it, the server's
    working folder (`.`) or a folder holding it. Relative paths and ~ are read as the
    service reads them (against the server's working folder, the server user's home)."""
    text = source.strip()
    if not text:
        return None  # the service says the source is empty
    if _DRIVE_ROOT.fullmatch(text):
        return "a filesystem root"
    here = cwd if cwd is not None else Path.cwd()
    home = home if home is not None else _home()
    if home is not None and (text == "~" or text.startswith("~/")):
        path = home / text[2:]
    else:
        path = Path(text).expanduser()
    if not path.is_absolute():
        path = here / path
    homes = _forms(home) if home is not None else set()
    heres = _forms(here)
    for form in _forms(path):
        if form.parent == form:
            return "a filesystem root"
        if form in homes:
            return "the home folder"
        if form in heres:
            return "the server's working folder"
        if any(h.is_relative_to(form) for h in heres):
            return "a folder that holds the server's working folder"
        if any(h.is_relative_to(form) for h in homes):
            return "a folder that holds the home folder"
    return None


def check_bulk_source(source: str, cwd: Path | None = None, home: Path | None = None) -> None:
    """Raise NotAllowedError when `source` is too broad to delete by over MCP (see too_broad)."""
    why = too_broad(source, cwd, home)
    if why:
        raise NotAllowedError(
            f"Refused: {source[:200]!r} is {why}, so deleting by it could remove every drawer "
            "mined under it; nothing was removed.",
            hint="Name the mined folder or file itself, as results show it in source_file "
            f"(at most {MAX_BULK_DELETE:,} drawers per call), or {_FORGET_HINT}.",
        )


def check_bulk_count(matched: int, what: str) -> None:
    """Raise NotAllowedError when one call would remove more than MAX_BULK_DELETE drawers."""
    if matched > MAX_BULK_DELETE:
        raise NotAllowedError(
            f"Refused: {what} would remove {matched:,} drawers; at most {MAX_BULK_DELETE:,} go "
            "per MCP call, so nothing was removed.",
            hint="Narrow it to a sub-folder or file (a dry run lists the sources), or "
            f"{_FORGET_HINT}.",
        )


def bulk_view(result: dict[str, Any], dry_run: bool) -> dict[str, Any]:
    """A forget result as an agent gets it: the count, the sources the drawers come from
    (biggest first, at most SHOWN_SOURCES), at most SHOWN_DRAWERS drawers, and a hint saying
    what happened and what a call with dry_run: false would do."""
    drawers = result.get("drawers", [])
    counts = Counter(d.get("source_file") or "(no source)" for d in drawers)
    view = dict(result)
    view["sources"] = [
        {"source_file": s, "drawers": n} for s, n in counts.most_common(SHOWN_SOURCES)
    ]
    view["sources_total"] = len(counts)
    view["drawers"] = drawers[:SHOWN_DRAWERS]
    view["drawers_not_shown"] = max(0, len(drawers) - SHOWN_DRAWERS)
    view["max_per_call"] = MAX_BULK_DELETE
    matched = int(result.get("matched", len(drawers)))
    if dry_run:
        if matched > MAX_BULK_DELETE:
            view["hint"] = (
                f"Dry run: nothing was removed. {matched:,} drawers match, more than the "
                f"{MAX_BULK_DELETE:,} one MCP call may remove, so dry_run: false would be "
                f"refused. Narrow the source, or {_FORGET_HINT}."
            )
        else:
            view["hint"] = (
                f"Dry run: nothing was removed. Call again with dry_run: false to remove these "
                f"{matched:,} drawers."
            )
    return view
