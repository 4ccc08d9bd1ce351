"""Re-mining a few changed paths at a time, for `mine --watch`.

The watcher hands over the paths that changed (created, modified, deleted, moved; files or
folders). Each batch goes through the same planning and write primitives as `mine`, but only
for those paths; a file whose content moved to a new path keeps its vectors (its drawers are
re-filed under the new path without embedding again), and so does every chunk of an edited
file whose text did not change.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mempalace_cli.common.config import PROJECT_FILE
from mempalace_cli.common.lazy import lazy
from mempalace_cli.common.naming import normalize_name
from mempalace_cli.miners.files import (
    Candidate,
    IgnoreRules,
    is_skipped_dir,
    is_temp_file,
    symlink_problem,
    walk,
)
from mempalace_cli.miners.paths import on_disk, source_key, storable
from mempalace_cli.miners.project import DEFAULT_EXCLUDE, ProjectConfig, load_project_config
from mempalace_cli.miners.rooms import detect_rooms
from mempalace_cli.miners.secrets import secrets_report
from mempalace_cli.service.core import PalaceCore, Part
from mempalace_cli.service.mine_common import (
    PER_FILE_ERRORS,
    MineReport,
    PendingFile,
    embed_groups,
    per_file_reason,
    rel_source,
    resolve_dir,
)
from mempalace_cli.service.mining import Mining
from mempalace_cli.service.results import WatchBatch
from mempalace_cli.service.writer import DrawerWriter
from mempalace_cli.storage.catalog import FileRecord

np = lazy("numpy")

# A change to one of these changes what every file means (rules, rooms): re-check the folder.
RULE_FILES = frozenset({PROJECT_FILE, ".gitignore"})


class PathRules:
    """Which paths under a mined folder matter: the same rules as `walk` (gitignore files,
    the project's excludes, tool folders, editor temp files, the palace itself), asked about
    one path at a time."""

    def __init__(self, root: Path, exclude: Sequence[str], skip: Iterable[Path] = ()) -> None:

        self.root = root
        self.rules = IgnoreRules(root, exclude)
        self.skip = [p.absolute() for p in skip]

    def relevant(self, path: Path, is_dir: bool = False) -> bool:
        """False for paths whose changes never need mining. A path that no longer exists is
        judged by its name alone (it may have been a mined file)."""

        try:
            rel = path.relative_to(self.root)
        except ValueError:
            return False
        if not rel.parts:
            return False
        if any(path == s or s in path.parents for s in self.skip):
            return False
        *folders, name = rel.parts
        if any(is_skipped_dir(part) for part in folders):
            return False
        if is_dir:
            if is_skipped_dir(name):
                return False
        elif is_temp_file(name):
            return False
        # gitignore rules: every ancestor folder (cached per folder), then the path itself.
        if self.rules.folder_ignored(path.parent):
            return False
        return not self.rules.ignored(path, is_dir=is_dir)


@dataclass
class _Planned:
    pending: PendingFile
    moved_from: FileRecord | None = None


@dataclass
class BatchReport:
    directory: str
    wing: str
    mode: str
    mined: list[str] = field(default_factory=list)
    moved: list[dict[str, str]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    skipped: list[dict[str, str]] = field(default_factory=list)
    drawers_added: int = 0
    drawers_removed: int = 0
    embeddings_reused: int = 0
    full_rescan: bool = False
    secrets: dict[str, Any] = field(default_factory=dict)  # as `mine` reports them

    def to_dict(self, started: float) -> WatchBatch:
        return {
            "directory": self.directory,
            "wing": self.wing,
            "mode": self.mode,
            "full_rescan": self.full_rescan,
            "files": {
                "mined": len(self.mined),
                "moved": len(self.moved),
                "removed": len(self.removed),
                "unchanged": self.unchanged,
                "skipped": len(self.skipped),
            },
            "drawers": {
                "added": self.drawers_added,
                "removed": self.drawers_removed,
                "embeddings_reused": self.embeddings_reused,
            },
            "mined_files": self.mined,
            "moved_files": self.moved,
            "removed_files": self.removed,
            "skipped": self.skipped,
            "secrets": self.secrets,
            "elapsed_ms": round((time.perf_counter() - started) * 1000),
        }


class Watch(Part):
    """Watch mode's mining of changed paths, over the palace's resources; files are planned
    and removed as the `Mining` part does it, and filed through the `DrawerWriter`."""

    def __init__(self, core: PalaceCore, writer: DrawerWriter, mining: Mining) -> None:
        super().__init__(core)
        self.writer = writer
        self.mining = mining

    def project_for(self, root: Path) -> ProjectConfig:
        """The folder's mempalace.toml, or the rooms `mine` would detect; cached until the
        file or the folder's top level changes (detecting rooms reads the whole tree)."""

        project_file = root / PROJECT_FILE
        key = (
            source_key(root),
            project_file.stat().st_mtime_ns if project_file.exists() else None,
            root.stat().st_mtime_ns,
        )
        cache: dict[str, tuple[Any, ProjectConfig]] = self.__dict__.setdefault("_project_cache", {})
        hit = cache.get(source_key(root))
        if hit is None or hit[0] != key:
            project = load_project_config(root) or ProjectConfig(
                wing=normalize_name(root.name),
                rooms=detect_rooms(root),
                exclude=list(DEFAULT_EXCLUDE),
            )
            cache[source_key(root)] = (key, project)
        return cache[source_key(root)][1]

    def path_rules(self, directory: str | Path) -> PathRules:
        root = resolve_dir(directory)
        return PathRules(root, self.project_for(root).exclude, [self.path])

    def mine_paths(
        self,
        directory: str | Path,
        paths: Iterable[str | Path],
        wing: str | None = None,
        agent: str | None = None,
        mode: str = "projects",
        keep_secrets: bool = False,
    ) -> WatchBatch:
        """Bring the palace in step with `paths` (files or folders under `directory` that
        changed: created, modified, deleted, or either end of a move).

        Only those paths are looked at. A file whose content already sits in the palace under
        another path that is gone now (a move or rename) is re-filed with its stored vectors;
        edited files re-use the vectors of their unchanged chunks. A change to mempalace.toml or
        a .gitignore re-checks the whole folder, as `mine` does, and so does convos mode.
        """
        started = time.perf_counter()
        root = Path(directory).resolve()
        paths = [Path(os.path.normpath(os.path.abspath(p))) for p in paths]
        if mode != "projects" or any(p.name in RULE_FILES for p in paths):
            return self._full_rescan(root, wing, agent, mode, started, keep_secrets)
        project = self.project_for(root)
        wing_name = normalize_name(wing) if wing else project.wing
        report = BatchReport(source_key(root), wing_name, mode)
        self.create()
        self.sync()
        known = self.catalog.files_under(source_key(root))
        rules = PathRules(root, project.exclude, [self.path])
        candidates, gone = self._expand(root, paths, rules, project, known, keep_secrets)

        scratch = MineReport(source_key(root), wing_name, mode, dry_run=False)
        scratch.keep_secrets = keep_secrets  # credential files skipped, secrets redacted
        planned: list[_Planned] = []
        for item in candidates:
            try:
                result = self.mining.plan_candidate(
                    root, item, project, wing_name, agent, known.get(item.source), scratch
                )
            except PER_FILE_ERRORS as exc:  # vanished or changed under us: skip, go on
                scratch.files_skipped.append({"file": item.rel, "reason": per_file_reason(exc)})
                continue
            if result is False:
                gone.add(item.source)
            elif isinstance(result, PendingFile):
                planned.append(_Planned(result))
        report.unchanged, report.skipped = scratch.files_unchanged, scratch.files_skipped

        filed = [p.pending.rel for p in planned]
        report.secrets = secrets_report(filed, scratch.secrets, report.skipped, keep_secrets)

        # Moves: a gone file whose content hash reappears under a new path.
        by_hash = {known[src].content_hash: known[src] for src in sorted(gone) if src in known}
        for plan in planned:
            rec = by_hash.pop(plan.pending.content_hash, None)
            if rec is not None:
                plan.moved_from = rec
                gone.discard(rec.source_file)

        for group in embed_groups(planned, lambda p: len(p.pending.rows)):
            self._file_group(group, root, wing_name, mode, report, keep_secrets)
        removed = sorted(src for src in gone if src in known)
        if removed:
            scratch_removed = MineReport(source_key(root), wing_name, mode, dry_run=False)
            self.mining.remove_files(root, removed, known, scratch_removed)
            report.removed = scratch_removed.files_removed
            report.drawers_removed += scratch_removed.drawers_removed
        return report.to_dict(started)

    # -- steps ------------------------------------------------------------------------------
    def _expand(
        self,
        root: Path,
        paths: Sequence[Path],
        rules: PathRules,
        project: ProjectConfig,
        known: dict[str, FileRecord],
        keep_secrets: bool = False,
    ) -> tuple[list[Candidate], set[str]]:
        """The changed paths as files to look at, and known files that are gone."""

        files: dict[str, Candidate] = {}
        gone: set[str] = set()
        folders: list[Path] = []
        for path in paths:
            key = source_key(path)
            if path.is_dir() and not path.is_symlink():
                if rules.relevant(path, is_dir=True):
                    folders.append(path)
            elif path.is_file():
                if rules.relevant(path):
                    candidate = self._candidate(root, path)
                    if candidate is not None:
                        files[key] = candidate
                continue
            elif key in known:
                gone.add(key)
                continue
            # A folder (or something that was one): mined files under it that are gone, go.
            prefix = key + os.sep
            gone.update(
                src for src in known if src.startswith(prefix) and not os.path.lexists(on_disk(src))
            )
        if folders:  # a folder appeared or moved in: the same walk as `mine`, kept to it
            prefixes = tuple(source_key(f) + os.sep for f in folders)
            for item in walk(root, project.exclude, [self.path], keep_secrets=keep_secrets):
                if isinstance(item, Candidate) and item.source.startswith(prefixes):
                    files[item.source] = item
        return list(files.values()), gone

    @staticmethod
    def _candidate(root: Path, path: Path) -> Candidate | None:

        if path.is_symlink() and symlink_problem(path, root) is not None:
            return None
        return Candidate(path, storable(path.relative_to(root).as_posix()))

    def _file_group(
        self,
        group: list[_Planned],
        root: Path,
        wing: str,
        mode: str,
        report: BatchReport,
        keep_secrets: bool = False,
    ) -> None:
        """Embed what is new, re-use stored vectors for chunks whose text is already in the
        palace under the file's old drawers (or a moved file's), and file the group in one
        write."""
        rows = [r for p in group for r in p.pending.rows]
        sources = [
            i
            for p in group
            for i in [
                *p.pending.old_ids,
                *self.catalog.drawer_ids_for_source(source_key(p.pending.path)),
                *(p.moved_from.drawer_ids if p.moved_from else []),
            ]
        ]
        stored = self.store.get(list(dict.fromkeys(sources)), ["embeddings", "documents"])
        by_text = {
            doc: emb
            for doc, emb in zip(stored["documents"], stored["embeddings"], strict=True)
            if doc is not None and emb is not None
        }
        missing = [r.text for r in rows if r.text not in by_text]
        fresh = dict(zip(missing, self.embedder.embed(missing), strict=True)) if missing else {}
        embeddings = np.asarray(
            [by_text[r.text] if r.text in by_text else fresh[r.text] for r in rows],
            dtype=np.float32,
        ).reshape(len(rows), -1)
        with self.lock.hold():
            replace: list[str] = []
            forget: list[str] = []
            for p in group:
                replace += p.pending.old_ids + self.catalog.drawer_ids_for_source(
                    source_key(p.pending.path)
                )
                if p.moved_from is not None:
                    src = p.moved_from.source_file
                    replace += p.moved_from.drawer_ids + self.catalog.drawer_ids_for_source(src)
                    forget.append(src)
            files = [
                FileRecord(
                    source_key(p.pending.path),
                    source_key(root),
                    wing,
                    p.pending.content_hash,
                    p.pending.size,
                    p.pending.mtime,
                    [r.id for r in p.pending.rows],
                    mode,
                )
                for p in group
            ]
            self.writer.file(
                rows, embeddings, replace, files, forget_files=forget, keep_secrets=keep_secrets
            )
        new_ids = {r.id for r in rows}
        report.drawers_removed += len({i for i in replace if i not in new_ids})
        report.drawers_added += len(rows)
        report.embeddings_reused += sum(1 for r in rows if r.text in by_text)
        for p in group:
            if p.moved_from is not None:
                report.moved.append(
                    {"from": rel_source(root, p.moved_from.source_file), "to": p.pending.rel}
                )
            else:
                report.mined.append(p.pending.rel)

    def _full_rescan(
        self,
        root: Path,
        wing: str | None,
        agent: str | None,
        mode: str,
        started: float,
        keep_secrets: bool = False,
    ) -> WatchBatch:
        full = self.mining.mine(root, wing=wing, agent=agent, mode=mode, keep_secrets=keep_secrets)
        report = BatchReport(source_key(root), full["wing"], mode, full_rescan=True)
        report.mined = full["mined_files"]
        report.removed = full["removed_files"]
        report.unchanged = full["files"]["unchanged"]
        report.skipped = full["skipped"]
        report.drawers_added = full["drawers"]["added"]
        report.drawers_removed = full["drawers"]["removed"]
        report.secrets = full["secrets"]
        return report.to_dict(started)
