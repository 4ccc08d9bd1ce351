"""`init` and `mine`: file a folder's text into the palace, incrementally and idempotently."""

from __future__ import annotations

import hashlib
import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mempalace_cli.catalog import DrawerRow, FileRecord
from mempalace_cli.config import PROJECT_FILE, write_toml
from mempalace_cli.drawer_ids import drawer_id
from mempalace_cli.errors import InvalidInputError
from mempalace_cli.miners.paths import source_key, storable
from mempalace_cli.naming import normalize_name
from mempalace_cli.service.convos import ConvoMiningOps
from mempalace_cli.service.core import now_iso
from mempalace_cli.service.mine_common import (
    DEFAULT_AGENT,
    EMBED_GROUP,
    PER_FILE_ERRORS,
    MineReport,
    PendingFile,
    ProgressFn,
    per_file_reason,
    rel_source,
    resolve_dir,
)

# The miners are imported where files are mined, not here: `import mempalace_cli.service`
# (every command, search included) then loads none of them.
if TYPE_CHECKING:
    from mempalace_cli.miners.files import Candidate
    from mempalace_cli.miners.project import ProjectConfig


EMBED_SLICE = 32  # chunks per embedding call: progress moves at least this often
MINE_MODES = ("projects", "convos")


def check_mine_args(mode: str, limit: int | None) -> None:
    """Refuse an unknown mode or a limit below one before anything is read."""
    if mode not in MINE_MODES:
        raise InvalidInputError(
            f"Unknown mining mode {mode!r}.", hint=f"Use one of: {', '.join(MINE_MODES)}."
        )
    if limit is not None and limit < 1:
        raise InvalidInputError(f"--limit must be at least 1, not {limit}.")


def rooms_fingerprint(project: ProjectConfig) -> str:
    """What the routing of files to rooms depends on, hashed."""
    rooms = [(r.name, sorted(r.keywords)) for r in project.rooms]
    return hashlib.sha256(json.dumps(rooms).encode()).hexdigest()[:16]


def drawer_id_for(wing: str, room: str, source_file: str, chunk_index: int) -> str:
    return drawer_id(wing, room, f"{source_file}\x00{chunk_index}")


class MiningOps(ConvoMiningOps):
    """Project folders; `mine` hands chat exports to `ConvoMiningOps.mine_convos`."""

    def init_project(
        self, directory: str | Path, wing: str | None = None, overwrite: bool = False
    ) -> dict[str, Any]:
        """Detect rooms from the folder layout, write DIR/mempalace.toml (unless one exists and
        `overwrite` is false), and create the palace if it is missing."""
        from mempalace_cli.miners.project import (
            DEFAULT_EXCLUDE,
            ProjectConfig,
            load_project_config,
        )
        from mempalace_cli.miners.rooms import detect_rooms

        root = resolve_dir(directory)
        project_file = root / PROJECT_FILE
        existing = load_project_config(root) if project_file.exists() else None
        if existing is not None and not overwrite:
            config, written = existing, False
            if wing:
                config.wing = normalize_name(wing)
        else:
            config = ProjectConfig(
                wing=normalize_name(wing or root.name),
                rooms=detect_rooms(root),
                exclude=list(DEFAULT_EXCLUDE),
            )
            written = True
        if written or wing:
            write_toml(project_file, config.to_toml())
            written = True
        created = self.create()
        return {
            "directory": source_key(root),
            "project_file": source_key(project_file),
            "config_written": written,
            "kept_existing": existing is not None and not overwrite,
            "wing": config.wing,
            "rooms": [{"name": r.name, "keywords": r.keywords} for r in config.rooms],
            "exclude": config.exclude,
            "palace_path": str(self.path),
            "palace_created": created,
            "next_step": f"mempalace mine {storable(str(directory))}",
        }

    def mine(
        self,
        directory: str | Path,
        wing: str | None = None,
        agent: str | None = None,
        mode: str = "projects",
        dry_run: bool = False,
        limit: int | None = None,
        progress: ProgressFn | None = None,
    ) -> dict[str, Any]:
        started = time.perf_counter()
        check_mine_args(mode, limit)
        if mode == "convos":  # chat exports: service/convos.py
            return self.mine_convos(
                directory,
                wing=wing,
                agent=agent,
                dry_run=dry_run,
                limit=limit,
                progress=progress,
            )
        from mempalace_cli.miners.project import (
            DEFAULT_EXCLUDE,
            ProjectConfig,
            load_project_config,
        )
        from mempalace_cli.miners.rooms import detect_rooms

        root = resolve_dir(directory)
        project = load_project_config(root) or ProjectConfig(
            wing=normalize_name(root.name), rooms=detect_rooms(root), exclude=list(DEFAULT_EXCLUDE)
        )
        wing_name = normalize_name(wing) if wing else project.wing
        report = MineReport(source_key(root), wing_name, mode, dry_run)
        if not dry_run:
            report.palace_created = self.create()
            # An emptied or missing store is reported, never "unchanged"; a store another
            # program changed is mirrored first, so files that lost drawers are re-read.
            self._check_store_present()
            if not self.consistency.in_step():
                self.sync()
        known = self.catalog.files_under(source_key(root)) if self.catalog.exists else {}
        notify = progress or (lambda event, data: None)

        rooms_key = f"rooms:{source_key(root)}"
        fingerprint = rooms_fingerprint(project)
        stored = self.catalog.get_meta(rooms_key) if self.catalog.exists else None
        rooms_changed = stored is not None and stored != fingerprint
        pending, seen = self._scan(
            root, project, wing_name, agent, known, limit, report, rooms_changed, notify
        )
        report.limited = limit is not None and len(seen) >= limit
        removed = [] if report.limited else [src for src in known if src not in seen]
        # The manifest alone decides what changed; the drawer store (and the second it takes
        # to import chromadb) is opened only when there is something to write or repair.
        if not dry_run and (pending or removed or self.needs_repair()):
            self.sync()
        notify("plan", {"files": len(pending), "chunks": sum(len(p.rows) for p in pending)})

        if dry_run:
            report.files_mined = [p.rel for p in pending]
            report.drawers_added = sum(len(p.rows) for p in pending)
            for p in pending:
                report.plan_file(p.rel, not p.old_ids, p.reason, len(p.rows))
            report.plan_removed(root, {s: len(known[s].drawer_ids) for s in removed})
            report.drawers_removed = sum(report.removed_drawers.values())
        else:
            self._write_pending(pending, root, wing_name, mode, report, notify)
            self._remove_files(root, removed, known, report)
            if stored != fingerprint and not report.limited:
                with self.catalog.transaction() as conn:
                    self.catalog.set_meta(conn, rooms_key, fingerprint)
        report.elapsed_seconds = time.perf_counter() - started
        return report.to_dict()

    # -- steps ------------------------------------------------------------------------------
    def _scan(
        self,
        root: Path,
        project: ProjectConfig,
        wing: str,
        agent: str | None,
        known: dict[str, FileRecord],
        limit: int | None,
        report: MineReport,
        rooms_changed: bool = False,
        notify: ProgressFn | None = None,
    ) -> tuple[list[PendingFile], set[str]]:
        from mempalace_cli.miners.files import Candidate, Skipped, walk

        pending: list[PendingFile] = []
        seen: set[str] = set()
        skip = [self.path]  # the palace may live inside the mined folder
        notify = notify or (lambda event, data: None)
        for item in walk(root, project.exclude, skip):
            if isinstance(item, Skipped):
                report.files_skipped.append({"file": item.rel, "reason": item.reason})
                continue
            if limit is not None and len(seen) >= limit:
                break
            assert isinstance(item, Candidate)
            src = item.source
            seen.add(src)
            notify("scan", {"path": item.rel, "files": len(seen)})
            try:
                planned = self._plan_candidate(
                    root, item, project, wing, agent, known.get(src), report, rooms_changed
                )
            except PER_FILE_ERRORS as exc:
                report.files_skipped.append({"file": item.rel, "reason": per_file_reason(exc)})
                planned = True  # its stored drawers (if any) stand until it reads again
            if planned is False:  # mined before and now unusable: its drawers go
                seen.discard(src)
            elif isinstance(planned, PendingFile):
                pending.append(planned)
        return pending, seen

    def _plan_candidate(
        self,
        root: Path,
        item: Candidate,
        project: ProjectConfig,
        wing: str,
        agent: str | None,
        rec: FileRecord | None,
        report: MineReport,
        rooms_changed: bool = False,
    ) -> PendingFile | bool:
        """One file's drawers to (re)file; True when its stored drawers stand (unchanged, or
        unreadable now); False when it was mined before and can't be read as text any more.
        With `rooms_changed` (the rooms in mempalace.toml were edited), an unchanged file whose
        room would now differ is re-filed too."""
        from mempalace_cli.miners.project import FileText, plan_file, read_text_file

        src = item.source
        try:
            st = item.path.stat()
        except OSError as exc:
            report.files_skipped.append({"file": item.rel, "reason": per_file_reason(exc)})
            return True
        # A file mined in another mode (convos) or into another wing is re-filed.
        same_place = rec is not None and rec.wing == wing and rec.ingest_mode == "projects"
        if same_place and not rooms_changed and (rec.size, rec.mtime) == (st.st_size, st.st_mtime):
            report.files_unchanged += 1
            return True
        # Read once: the verdict, the hash, the text, size and mtime all come from one read.
        content = read_text_file(item.path, int(project.max_file_mb * 1_000_000))
        if not isinstance(content, FileText):
            report.files_skipped.append({"file": item.rel, "reason": content})
            return rec is None  # mined before and now unusable: False, its drawers go
        digest = content.digest
        if (
            same_place
            and rec.content_hash == digest
            and not self._room_moved(rec, item.rel, content.text, project, rooms_changed)
        ):
            report.files_unchanged += 1
            if not report.dry_run:
                with self.catalog.transaction() as conn:
                    self.catalog.touch_file(conn, src, content.size, content.mtime)
            return True
        room, chunks = plan_file(item.rel, content.text, project.rooms)
        filed_at = now_iso()
        rows = [
            DrawerRow(
                id=drawer_id_for(wing, room, src, c.index),
                wing=wing,
                room=room,
                source_file=src,
                chunk_index=c.index,
                filed_at=filed_at,
                text=c.text,
                metadata={
                    "added_by": agent or DEFAULT_AGENT,
                    "ingest_mode": "projects",
                    "source_root": source_key(root),
                    "source_hash": digest,
                    "source_mtime": content.mtime,
                    # The source's own date (its last change): what search --since/--before
                    # compare, before the filing date (filters.py).
                    **_source_date(content.mtime),
                    "line_start": c.line_start,
                    "line_end": c.line_end,
                    "encoding": content.encoding,
                },
            )
            for c in chunks
        ]
        old_ids = list(rec.drawer_ids) if rec else []
        reason = _change_reason(rec, wing, digest)
        return PendingFile(
            item.path, item.rel, content.size, content.mtime, digest, rows, old_ids, reason
        )

    def _room_moved(
        self, rec: FileRecord, rel: str, text: str, project: ProjectConfig, rooms_changed: bool
    ) -> bool:
        if not rooms_changed or not rec.drawer_ids:
            return False
        from mempalace_cli.miners.project import plan_file

        current = self.catalog.get(rec.drawer_ids[:1]).get(rec.drawer_ids[0])
        return current is not None and current.room != plan_file(rel, text, project.rooms)[0]

    def _write_pending(
        self,
        pending: list[PendingFile],
        root: Path,
        wing: str,
        mode: str,
        report: MineReport,
        notify: ProgressFn,
    ) -> None:
        """Embed in groups of about EMBED_GROUP chunks, then file each group under the lock;
        a file's manifest entry commits with its drawers, so a crash never records a file as
        mined when it wasn't."""
        group: list[PendingFile] = []
        size = 0
        if pending:
            notify("load", {})  # the model loads before the first drawer moves
            self.embedder.ensure_loaded()
        for i, item in enumerate(pending):
            group.append(item)
            size += len(item.rows)
            if size >= EMBED_GROUP or i == len(pending) - 1:
                self._write_group(group, root, wing, mode, report, notify)
                group, size = [], 0

    def _write_group(
        self,
        group: list[PendingFile],
        root: Path,
        wing: str,
        mode: str,
        report: MineReport,
        notify: ProgressFn,
    ) -> None:
        rows = [r for f in group for r in f.rows]
        owners = [f.rel for f in group for _ in f.rows]
        embeddings = self._embed_with_progress([r.text for r in rows], owners, notify)
        with self.lock.hold():
            replace: list[str] = []
            for f in group:
                replace += f.old_ids + self.catalog.drawer_ids_for_source(source_key(f.path))
            files = [
                FileRecord(
                    source_key(f.path),
                    source_key(root),
                    wing,
                    f.content_hash,
                    f.size,
                    f.mtime,
                    [r.id for r in f.rows],
                    mode,
                )
                for f in group
            ]
            new_ids = {r.id for r in rows}
            self._file_drawers(rows, embeddings, replace, files)
        report.drawers_removed += len({i for i in replace if i not in new_ids})
        report.drawers_added += len(rows)
        for f in group:
            report.files_mined.append(f.rel)
            notify("file", {"path": f.rel, "drawers": len(f.rows)})

    def _embed_with_progress(self, texts: list[str], owners: list[str], notify: ProgressFn) -> Any:
        """Embed in slices of EMBED_SLICE, telling `notify` after each (the file the slice ends
        in, and how many of this group's files it reached), so progress moves every few
        drawers, not once per write group."""
        import numpy as np

        parts = []
        reached = 0
        for start in range(0, len(texts), EMBED_SLICE):
            parts.append(self.embedder.embed(texts[start : start + EMBED_SLICE]))
            end = start + len(parts[-1])
            reached += len(set(owners[start:end]) - set(owners[:start]))
            notify("embedded", {"chunks": end - start, "path": owners[end - 1], "files": reached})
        return np.concatenate(parts) if parts else self.embedder.embed([])

    def _remove_files(
        self, root: Path, removed: list[str], known: dict[str, FileRecord], report: MineReport
    ) -> None:
        if not removed:
            return
        with self.lock.hold():
            ids: list[str] = []
            for src in removed:
                ids += known[src].drawer_ids + self.catalog.drawer_ids_for_source(src)
            ids = list(dict.fromkeys(ids))
            self._remove_drawers(ids, forget_files=removed)
        report.drawers_removed += len(ids)
        report.files_removed = [rel_source(root, s) for s in removed]


def _source_date(timestamp: float) -> dict[str, str]:
    """{"date": the file time as UTC ISO}, or nothing for a time no calendar can hold (a
    hostile or broken mtime): the drawer then dates from its filing."""
    try:
        return {"date": datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds")}
    except (OverflowError, OSError, ValueError):
        return {}


def _change_reason(rec: FileRecord | None, wing: str, digest: str) -> str:
    """Why a file is filed again, in the words of the mining plan."""
    if rec is None:
        return "new file"
    if rec.wing != wing:
        return f"moves from wing {rec.wing}"
    if rec.ingest_mode != "projects":
        return f"was mined as {rec.ingest_mode}"
    if rec.content_hash != digest:
        return "content changed"
    return "room changed in mempalace.toml"
