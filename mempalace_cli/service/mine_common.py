"""What both miners share (project folders in service/mining.py, chat exports in
service/convos.py): the run's report, the per-file error rule, the progress callback and the
path helpers; its own module, so each miner imports it without importing the other."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from mempalace_cli.common.errors import InvalidInputError, NotFoundError
from mempalace_cli.miners.files import Candidate, Skipped
from mempalace_cli.miners.paths import on_disk, source_key, storable
from mempalace_cli.miners.secrets import secrets_report
from mempalace_cli.service.results import MineRun
from mempalace_cli.storage.catalog import DrawerRow, FileRecord

# Progress callback: (event, data). Events: "scan" {path, files} per file looked at,
# "plan" {files, chunks}, "load" {} before the model loads, "embedded" {chunks} per slice,
# "write" {files, drawers} just before a group is written, "file" {path, drawers} once a
# file's drawers are written. The callback may raise (KeyboardInterrupt, to stop a run at a
# step's edge): anything but "file" is raised before the group it announces is written.
ProgressFn = Callable[[str, dict[str, Any]], None]
# Asked before a run moves drawers out of another wing or mode, with {"directory", "wing",
# "mode", "displaced"} (the run's target and `MineReport.displaced`): True goes on; False stops
# the run with `MoveDeclined` before anything is written.
ConfirmMovesFn = Callable[[dict[str, Any]], bool]
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


class MoveDeclined(Exception):  # noqa: N818 - a choice, not an error
    """The person declined moving drawers out of another wing or mode: nothing was written."""

    def __init__(self, move: dict[str, Any]) -> None:
        super().__init__("declined")
        self.move = move


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
    # Drawer counts that add up: added - removed is the change in the palace's drawer count;
    # replaced drawers keep their id with new text; unchanged ones this run left alone.
    drawers_added: int = 0
    drawers_replaced: int = 0
    drawers_removed: int = 0
    drawers_unchanged: int = 0
    # Drawers of this folder that sit in another wing or were mined in the other mode, which
    # this run moves: [{"wing", "mode", "files", "drawers"}] (see `displaced_by`).
    displaced: list[dict[str, Any]] = field(default_factory=list)
    hint: str | None = None  # what to do next, when the run noticed something (chat exports)
    palace_created: bool = False
    limited: bool = False
    elapsed_seconds: float = 0.0
    # The mining plan, file by file: {"file", "action": add|change, "reason", "drawers"};
    # skips and removals are added by `plan()`.
    planned: list[dict[str, Any]] = field(default_factory=list)
    removed_drawers: dict[str, int] = field(default_factory=dict)
    # Secrets (miners/secrets.py): --keep-secrets; files filed under other rules, so read
    # again; the values redacted, by file (reported for the files this run files).
    keep_secrets: bool = False
    rescreen: bool = False
    secrets: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

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

    def to_dict(self) -> MineRun:
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
            "drawers": {
                "added": self.drawers_added,
                "replaced": self.drawers_replaced,
                "removed": self.drawers_removed,
                "unchanged": self.drawers_unchanged,
            },
            "displaced": self.displaced,
            "mined_files": self.files_mined,
            "removed_files": self.files_removed,
            "skipped": self.files_skipped,
            "limited": self.limited,
            "secrets": secrets_report(
                self.files_mined, self.secrets, self.files_skipped, self.keep_secrets
            ),
            "elapsed_seconds": round(self.elapsed_seconds, 3),
            **({"hint": self.hint} if self.hint else {}),
            **plan,
        }


Item = TypeVar("Item")


def embed_groups(items: Sequence[Item], size: Callable[[Item], int]) -> Iterator[list[Item]]:
    """`items` in order, in groups that each reach EMBED_GROUP chunks (`size`: an item's),
    but the last: what one embedding pass and one lock hold take."""
    group: list[Item] = []
    chunks = 0
    for i, item in enumerate(items):
        group.append(item)
        chunks += size(item)
        if chunks >= EMBED_GROUP or i == len(items) - 1:
            yield group
            group, chunks = [], 0


def walked(
    items: Iterable[Candidate | Skipped], report: MineReport, limit: int | None, seen: set[str]
) -> Iterator[Candidate]:
    """The files of a walk to look at, each skip noted in `report`; it stops once the run has
    seen `limit` files (`seen`, which the caller fills)."""
    for item in items:
        if isinstance(item, Skipped):
            report.files_skipped.append({"file": item.rel, "reason": item.reason})
            continue
        if limit is not None and len(seen) >= limit:
            return
        yield item


def resolve_dir(directory: str | Path) -> Path:
    root = Path(directory).expanduser()
    if not root.exists():
        raise NotFoundError(f"The folder {root} does not exist.", hint="Check the path.")
    if not root.is_dir():
        raise InvalidInputError(f"{root} is a file, not a folder.", hint="Pass a folder.")
    return root.resolve()


def resolve_target(path: str | Path) -> tuple[Path, Path | None]:
    """What `mine PATH` mines: (the folder, None) for a folder; (its folder, the file) for one
    file. The file keeps its own name (a symlink is not followed to another name); its folder
    is resolved, as a mined folder is."""
    given = Path(path).expanduser()
    if not given.exists():
        raise NotFoundError(f"The folder or file {given} does not exist.", hint="Check the path.")
    if given.is_dir():
        return given.resolve(), None
    folder = given.parent.resolve()
    if not given.is_file():
        raise InvalidInputError(
            f"{given} is not a regular file (a pipe, socket or device): nothing to mine.",
            hint="Pass a folder, or a text file.",
        )
    return folder, folder / given.name


def displaced_by(records: dict[str, FileRecord], wing: str, mode: str) -> list[dict[str, Any]]:
    """The stored files (of `records`, by source) that sit in another wing or were mined in
    another mode than (`wing`, `mode`) and still exist: re-mining them moves their drawers.
    Grouped by (wing, mode): [{"wing", "mode", "files", "drawers"}]."""
    groups: dict[tuple[str, str], list[int]] = {}
    for src, rec in records.items():
        if (rec.wing, rec.ingest_mode) == (wing, mode) or not os.path.lexists(on_disk(src)):
            continue
        counts = groups.setdefault((rec.wing, rec.ingest_mode), [0, 0])
        counts[0] += 1
        counts[1] += len(rec.drawer_ids)
    return [
        {"wing": w, "mode": m, "files": files, "drawers": drawers}
        for (w, m), (files, drawers) in sorted(groups.items())
    ]


def describe_displaced(displaced: list[dict[str, Any]], wing: str, mode: str) -> str:
    """What moves, from where to where: "42 drawers (12 files) from wing notes to wing other";
    a change of mode says "(mined as projects)" on both sides. Groups joined with "; "."""
    parts = []
    for group in displaced:
        n, files = group["drawers"], group["files"]
        what = f"{n} drawer{'s' if n != 1 else ''} ({files} file{'s' if files != 1 else ''})"
        before, after = f"wing {group['wing']}", f"wing {wing}"
        if group["mode"] != mode:
            before += f" (mined as {group['mode']})"
            after += f" (mined as {mode})"
        parts.append(f"{what} from {before} to {after}")
    return "; ".join(parts)


def rel_source(root: Path | str, src: str) -> str:
    """A stored source path relative to the mined folder, for reports."""
    try:
        return Path(src).relative_to(source_key(root)).as_posix()
    except ValueError:
        return src
