"""What both miners share (project folders in service/mining.py, chat exports in
service/convos.py): the run's report, the per-file error rule, the progress callback and the
path helpers; its own module, so each miner imports it without importing the other."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mempalace_cli.catalog import DrawerRow
from mempalace_cli.errors import InvalidInputError, NotFoundError
from mempalace_cli.miners.paths import source_key, storable

# Progress callback: (event, data). Events: "scan" {path, files} per file looked at,
# "plan" {files, chunks}, "load" {} before the model loads, "embedded" {chunks} per slice,
# "file" {path, drawers} once a file's drawers are written.
ProgressFn = Callable[[str, dict[str, Any]], None]
EMBED_GROUP = 256  # chunks embedded and written per lock hold
DEFAULT_AGENT = "mempalace-cli"


# One file's problem is a reported skip, never the end of the run: a file that vanished or
# changed under us, a path the OS refuses, or a structure too deep for the parser.
PER_FILE_ERRORS = (OSError, ValueError, RecursionError, MemoryError)


def per_file_reason(exc: BaseException) -> str:
    """A skip reason for an error raised while mining one file."""
    if isinstance(exc, FileNotFoundError):
        return "vanished while it was being mined; it is mined again when it reappears"
    if isinstance(exc, OSError):
        return f"unreadable: {storable(exc.strerror or str(exc))}"
    if isinstance(exc, RecursionError):
        return "nested too deeply to read (more levels than the reader supports)"
    if isinstance(exc, MemoryError):
        return "too large to hold in memory; raise the limit or split the file"
    return f"could not be mined ({type(exc).__name__}: {storable(str(exc))[:200]})"


@dataclass
class PendingFile:
    path: Path  # on disk
    rel: str
    size: int
    mtime: float
    content_hash: str
    rows: list[DrawerRow]
    old_ids: list[str]
    reason: str = "new file"  # why it is (re)filed: the mining plan's words

    @property
    def source(self) -> str:
        return source_key(self.path)


@dataclass
class MineReport:
    directory: str
    wing: str
    mode: str
    dry_run: bool
    files_mined: list[str] = field(default_factory=list)
    files_unchanged: int = 0
    files_removed: list[str] = field(default_factory=list)
    files_skipped: list[dict[str, str]] = field(default_factory=list)
    drawers_added: int = 0
    drawers_removed: int = 0
    palace_created: bool = False
    limited: bool = False
    elapsed_seconds: float = 0.0
    # The mining plan, file by file: {"file", "action": add|change, "reason", "drawers"};
    # skips and removals are added by `plan()`.
    planned: list[dict[str, Any]] = field(default_factory=list)
    removed_drawers: dict[str, int] = field(default_factory=dict)

    def plan_file(self, rel: str, new: bool, reason: str, drawers: int) -> None:
        action = "add" if new else "change"
        self.planned.append({"file": rel, "action": action, "reason": reason, "drawers": drawers})

    def plan_removed(self, root: Path, drawers_by_source: dict[str, int]) -> None:
        """The dry run's removals: each stored source no longer in the folder, with the
        number of drawers it would lose."""
        self.files_removed = [rel_source(root, s) for s in drawers_by_source]
        self.removed_drawers = {rel_source(root, s): n for s, n in drawers_by_source.items()}

    def plan(self) -> list[dict[str, Any]]:
        """Every file this run adds, changes, skips (with the reason) or removes, by path."""
        entries = list(self.planned)
        entries += [{**s, "action": "skip", "drawers": 0} for s in self.files_skipped]
        entries += [
            {
                "file": f,
                "action": "remove",
                "reason": "no longer in the folder",
                "drawers": self.removed_drawers.get(f, 0),
            }
            for f in self.files_removed
        ]
        return sorted(entries, key=lambda e: (e["file"], e["action"]))

    def to_dict(self) -> dict[str, Any]:
        plan = {"plan": self.plan()} if self.dry_run else {}
        return {
            "directory": self.directory,
            "wing": self.wing,
            "mode": self.mode,
            "dry_run": self.dry_run,
            "palace_created": self.palace_created,
            "files": {
                "mined": len(self.files_mined),
                "unchanged": self.files_unchanged,
                "removed": len(self.files_removed),
                "skipped": len(self.files_skipped),
            },
            "drawers": {"added": self.drawers_added, "removed": self.drawers_removed},
            "mined_files": self.files_mined,
            "removed_files": self.files_removed,
            "skipped": self.files_skipped,
            "limited": self.limited,
            "elapsed_seconds": round(self.elapsed_seconds, 3),
            **plan,
        }


def resolve_dir(directory: str | Path) -> Path:
    root = Path(directory).expanduser()
    if not root.exists():
        raise NotFoundError(f"The folder {root} does not exist.", hint="Check the path.")
    if not root.is_dir():
        raise InvalidInputError(f"{root} is a file, not a folder.", hint="Pass a folder.")
    return root.resolve()


def rel_source(root: Path | str, src: str) -> str:
    """A stored source path relative to the mined folder, for reports."""
    try:
        return Path(src).relative_to(source_key(root)).as_posix()
    except ValueError:
        return src
