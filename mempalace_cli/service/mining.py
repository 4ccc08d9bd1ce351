"""`init` and `mine`: file a folder's text into the palace, incrementally and idempotently."""

from __future__ import annotations

import contextlib
import hashlib
import json
import shlex
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mempalace_cli.common.config import PROJECT_FILE, write_toml
from mempalace_cli.common.errors import InvalidInputError
from mempalace_cli.common.lazy import lazy
from mempalace_cli.common.naming import normalize_name
from mempalace_cli.miners.convos import plain_text
from mempalace_cli.miners.convos.detect import HEAD_BYTES, detect
from mempalace_cli.miners.convos.model import ParseError
from mempalace_cli.miners.dates import chunk_date, note_date, section_dates
from mempalace_cli.miners.files import Candidate, walk
from mempalace_cli.miners.paths import on_disk, source_key, storable
from mempalace_cli.miners.project import (
    DEFAULT_EXCLUDE,
    FileText,
    ProjectConfig,
    load_project_config,
    plan_file,
)
from mempalace_cli.miners.rooms import detect_rooms
from mempalace_cli.miners.secrets import policy_changed, read_screened, remember_policy
from mempalace_cli.service.convos import ConvoMining
from mempalace_cli.service.core import PalaceCore, Part, now_iso
from mempalace_cli.service.mine_common import (
    DEFAULT_AGENT,
    PER_FILE_ERRORS,
    ConfirmMovesFn,
    MineReport,
    MoveDeclined,
    PendingFile,
    ProgressFn,
    displaced_by,
    embed_groups,
    per_file_reason,
    rel_source,
    resolve_dir,
    resolve_target,
    walked,
)
from mempalace_cli.service.names import name_to_file
from mempalace_cli.service.results import InitResult, MineRun
from mempalace_cli.service.writer import DrawerWriter
from mempalace_cli.storage.catalog import DrawerRow, FileRecord
from mempalace_cli.storage.drawer_ids import drawer_id

np = lazy("numpy")

EMBED_SLICE = 32  # chunks per embedding call: progress moves at least this often
MINE_MODES = ("projects", "convos")
# A project mine checks this many of the files it reads for the look of a chat export, and
# says "mine them with --mode convos" when most of them have it.
CHAT_SAMPLE = 40


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


class Mining(Part):
    """Project folders, over the palace's resources; `mine` hands chat exports to the
    `ConvoMining` part, and drawers are filed and removed through the `DrawerWriter`."""

    def __init__(self, core: PalaceCore, writer: DrawerWriter, convos: ConvoMining) -> None:
        super().__init__(core)
        self.writer = writer
        self.convos = convos

    def init_project(
        self, directory: str | Path, wing: str | None = None, overwrite: bool = False
    ) -> InitResult:
        """Detect rooms from the folder layout, write DIR/mempalace.toml (unless one exists and
        `overwrite` is false), and create the palace if it is missing."""

        root = resolve_dir(directory)
        project_file = root / PROJECT_FILE
        existing = load_project_config(root) if project_file.exists() else None
        if existing is not None and not overwrite:
            config, written = existing, False
            if wing:
                config.wing = name_to_file(wing, "wing")
        else:
            config = ProjectConfig(
                wing=name_to_file(wing, "wing") if wing else normalize_name(root.name),
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
        confirm_moves: ConfirmMovesFn | None = None,
        keep_secrets: bool = False,
    ) -> MineRun:
        """Mine a folder (or one file of it) into the palace. A run that would move drawers out
        of another wing or mode (the folder was mined with another --wing or --mode before)
        asks `confirm_moves` first and raises MoveDeclined, writing nothing, when it says no;
        the report lists them under `displaced` either way."""
        started = time.perf_counter()
        check_mine_args(mode, limit)
        root, only = resolve_target(directory)
        if mode == "convos":  # chat exports: service/convos.py
            if only is not None:
                raise InvalidInputError(
                    f"--mode convos mines a folder of chat exports, not one file ({only}).",
                    hint="Pass the folder that holds it: mempalace mine "
                    f"{shlex.quote(storable(str(root)))} --mode convos",
                )
            known = self._known_under(root, None)
            wing_name = name_to_file(wing, "wing") if wing else normalize_name(root.name)
            displaced = displaced_by(known, wing_name, mode)
            self._confirm_moves(root, wing_name, mode, displaced, dry_run, confirm_moves)
            result = self.convos.mine_convos(
                root,
                wing=wing,
                agent=agent,
                dry_run=dry_run,
                limit=limit,
                progress=progress,
                keep_secrets=keep_secrets,
            )
            result["displaced"] = displaced
            drawers = result["drawers"]
            drawers["unchanged"] = self._unchanged(root, None, known, drawers, dry_run)
            return result

        # A subfolder of a folder mined before (and with no mempalace.toml of its own) is mined
        # as part of it: the same root, wing and rooms; `within` is the subfolder.
        within: Path | None = None
        if only is None and not (root / PROJECT_FILE).is_file():
            parent = self._mined_parent(root)
            mined = self._known_under(parent, None, root) if parent is not None else {}
            if parent is not None and mined:
                within, root = root, parent
                project = load_project_config(root) or ProjectConfig(
                    wing=next(iter(mined.values())).wing,
                    rooms=detect_rooms(root),
                    exclude=list(DEFAULT_EXCLUDE),
                )
        if within is not None:
            pass
        elif only is None:
            project = load_project_config(root) or ProjectConfig(
                wing=normalize_name(root.name),
                rooms=detect_rooms(root),
                exclude=list(DEFAULT_EXCLUDE),
            )
        else:
            root, project = self._file_project(root, only)
        target = only or within or root
        wing_name = name_to_file(wing, "wing") if wing else project.wing
        report = MineReport(source_key(target), wing_name, mode, dry_run)
        known = self._known_under(root, only, within)
        report.displaced = displaced_by(known, wing_name, mode)
        self._confirm_moves(target, wing_name, mode, report.displaced, dry_run, confirm_moves)
        if not dry_run:
            report.palace_created = self.create()
            # An emptied or missing store is reported, never "unchanged"; a store another
            # program changed is mirrored first, so files that lost drawers are re-read.
            self.core.check_store_present()
            if not self.consistency.in_step():
                self.sync()
                known = self._known_under(root, only, within)
        notify = progress or (lambda event, data: None)

        rooms_key = f"rooms:{source_key(root)}"
        fingerprint = rooms_fingerprint(project)
        stored = self.catalog.get_meta(rooms_key) if self.catalog.exists else None
        rooms_changed = stored is not None and stored != fingerprint
        # Secrets: credential files skipped, values redacted, unless --keep-secrets (CLI only).

        report.keep_secrets = keep_secrets
        report.rescreen = policy_changed(self.catalog, source_key(root), keep_secrets, known)
        items: Iterable[Any]
        if within is not None:
            prefix = storable(within.relative_to(root).as_posix())
            items = (
                Candidate(c.path, f"{prefix}/{c.rel}") if isinstance(c, Candidate) else c
                for c in walk(within, project.exclude, [self.path], keep_secrets=keep_secrets)
            )
        elif only is None:
            items = walk(root, project.exclude, [self.path], keep_secrets=keep_secrets)
        else:
            items = [Candidate(only, storable(only.relative_to(root).as_posix()))]
        pending, seen = self._scan(
            root, project, wing_name, agent, known, limit, report, rooms_changed, notify, items
        )
        report.limited = limit is not None and len(seen) >= limit and only is None
        whole = only is None and within is None  # the run saw the whole folder
        removed = [] if report.limited else [src for src in known if src not in seen]
        # The manifest alone decides what changed; the drawer store (and the second it takes
        # to import chromadb) is opened only when there is something to write or repair.
        if not dry_run and (pending or removed or self.needs_repair()):
            self.sync()
        notify("plan", {"files": len(pending), "chunks": sum(len(p.rows) for p in pending)})

        if dry_run:
            report.files_mined = [p.rel for p in pending]
            for p in pending:
                report.plan_file(p.rel, not p.old_ids, p.reason, len(p.rows))
                self._count_changes(report, [r.id for r in p.rows], self._replaced_ids(p))
            report.plan_removed(root, {s: len(known[s].drawer_ids) for s in removed})
            self._count_changes(report, [], self._removed_ids(removed, known))
        else:
            # Embedded in groups of about EMBED_GROUP chunks, each filed under the lock; a
            # file's manifest entry commits with its drawers, so a crash never records a file
            # as mined when it wasn't.
            if pending:
                notify("load", {})  # the model loads before the first drawer moves
                self.embedder.ensure_loaded()
            for group in embed_groups(pending, lambda p: len(p.rows)):
                self._write_group(group, root, wing_name, mode, report, notify)
            self.remove_files(root, removed, known, report)
            if stored != fingerprint and not report.limited and whole:
                with self.catalog.transaction() as conn:
                    self.catalog.set_meta(conn, rooms_key, fingerprint)
            if not report.limited and whole:
                remember_policy(self.catalog, source_key(root), keep_secrets)
        counts = {
            "added": report.drawers_added,
            "replaced": report.drawers_replaced,
            "removed": report.drawers_removed,
        }
        report.drawers_unchanged = self._unchanged(root, only, known, counts, dry_run, within)
        report.elapsed_seconds = time.perf_counter() - started
        return report.to_dict()

    # -- what a run starts from and how its counts add up -------------------------------------
    def _known_under(
        self, root: Path, only: Path | None, within: Path | None = None
    ) -> dict[str, FileRecord]:
        """The mining record of the folder's files (or of the one file, or of those of its
        subfolder `within`), by source."""
        if not self.catalog.exists:
            return {}
        if only is None:
            records = self.catalog.files_under(source_key(root))
            if within is None:
                return records
            inside = source_key(within).rstrip("/") + "/"
            return {src: rec for src, rec in records.items() if src.startswith(inside)}
        rec = self.catalog.get_file(source_key(only))
        return {rec.source_file: rec} if rec is not None else {}

    def _mined_parent(self, folder: Path) -> Path | None:
        """The folder above `folder` that its files were mined from before (the nearest, when
        there are several), or None."""
        if not self.catalog.exists:
            return None
        inside = source_key(folder).rstrip("/") + "/"
        rows = self.catalog.conn.execute(
            "SELECT DISTINCT source_root FROM files WHERE substr(source_file, 1, ?) = ?",
            (len(inside), inside),
        )
        parents = [
            on_disk(r[0])
            for r in rows
            if folder.is_relative_to(on_disk(r[0])) and on_disk(r[0]) != folder
        ]
        parents = [p for p in parents if p.is_dir()]
        return max(parents, key=lambda p: len(p.parts)) if parents else None

    def _file_project(self, folder: Path, file: Path) -> tuple[Path, ProjectConfig]:
        """Where one file is mined from, so that it lands where mining its folder puts it:
        the nearest folder (its own, or one above) with a mempalace.toml; else the folder it
        was mined from before; else its own folder (wing: the folder's name)."""

        for candidate in (folder, *folder.parents):
            if (candidate / PROJECT_FILE).is_file():
                config = load_project_config(candidate)
                if config is not None:
                    return candidate, config
        rec = self.catalog.get_file(source_key(file)) if self.catalog.exists else None
        if rec is not None:
            before = on_disk(rec.source_root)
            if file.is_relative_to(before) and before.is_dir():
                return before, ProjectConfig(
                    wing=rec.wing, rooms=detect_rooms(before), exclude=list(DEFAULT_EXCLUDE)
                )
        return folder, ProjectConfig(
            wing=normalize_name(folder.name),
            rooms=detect_rooms(folder),
            exclude=list(DEFAULT_EXCLUDE),
        )

    def _confirm_moves(
        self,
        target: Path,
        wing: str,
        mode: str,
        displaced: list[dict[str, Any]],
        dry_run: bool,
        confirm: ConfirmMovesFn | None,
    ) -> None:
        if not displaced or dry_run or confirm is None:
            return
        move = {"directory": source_key(target), "wing": wing, "mode": mode}
        move["displaced"] = displaced
        if not confirm(move):
            raise MoveDeclined(move)

    def _existing(self, ids: Iterable[str]) -> set[str]:
        """Those of `ids` that the palace holds now."""
        wanted = list(dict.fromkeys(ids))
        found: set[str] = set()
        if not wanted or not self.catalog.exists:
            return found
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            marks = ",".join("?" * len(part))
            rows = self.catalog.conn.execute(f"SELECT id FROM drawers WHERE id IN ({marks})", part)
            found.update(r[0] for r in rows)
        return found

    def _ids_from(self, source: str) -> list[str]:
        return self.catalog.drawer_ids_for_source(source) if self.catalog.exists else []

    def _replaced_ids(self, p: PendingFile) -> list[str]:
        """The drawers a re-filed file's new drawers take the place of."""
        return p.old_ids + self._ids_from(p.source)

    def _removed_ids(self, removed: list[str], known: dict[str, FileRecord]) -> list[str]:
        ids: list[str] = []
        for src in removed:
            ids += known[src].drawer_ids + self._ids_from(src)
        return list(dict.fromkeys(ids))

    def _count_changes(self, report: MineReport, new: list[str], old: list[str]) -> None:
        """Count `new` drawers as added (a new id) or replaced (an id the palace holds), and
        the `old` ones they don't keep, that the palace holds, as removed."""
        new_ids = set(new)
        stale = {i for i in old if i not in new_ids}
        present = self._existing([*new_ids, *stale])
        report.drawers_added += len(new_ids - present)
        report.drawers_replaced += len(new_ids & present)
        report.drawers_removed += len(stale & present)

    def _unchanged(
        self,
        root: Path,
        only: Path | None,
        before: dict[str, FileRecord],
        counts: dict[str, int],
        dry_run: bool,
        within: Path | None = None,
    ) -> int:
        """Drawers of the folder (or file) that the run left as they were: of those there
        before, all but the replaced and removed ones (a dry run); of those there after, all
        but the added and replaced ones."""
        if dry_run:
            records, gone = before, counts["replaced"] + counts["removed"]
        else:
            records = self._known_under(root, only, within)
            gone = counts["added"] + counts["replaced"]
        ids = {i for rec in records.values() for i in rec.drawer_ids}
        return max(0, len(self._existing(ids)) - gone)

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
        items: Iterable[Any] | None = None,
    ) -> tuple[list[PendingFile], set[str]]:
        """Plan every file of `items` (default: the folder's walk)."""

        pending: list[PendingFile] = []
        seen: set[str] = set()
        skip = [self.path]  # the palace may live inside the mined folder
        notify = notify or (lambda event, data: None)
        chats = _ChatSample()
        if items is None:
            items = walk(root, project.exclude, skip, keep_secrets=report.keep_secrets)
        for item in walked(items, report, limit, seen):
            src = item.source
            seen.add(src)
            notify("scan", {"path": item.rel, "files": len(seen)})
            try:
                planned = self.plan_candidate(
                    root, item, project, wing, agent, known.get(src), report, rooms_changed
                )
            except PER_FILE_ERRORS as exc:
                report.files_skipped.append({"file": item.rel, "reason": per_file_reason(exc)})
                planned = True  # its stored drawers (if any) stand until it reads again
            if planned is False:  # mined before and now unusable: its drawers go
                seen.discard(src)
            elif isinstance(planned, PendingFile):
                pending.append(planned)
                chats.check(item.path)
        if chats.most():
            report.hint = (
                "These look like chat exports; mine them with --mode convos: mempalace mine "
                f"{shlex.quote(report.directory)} --mode convos"
            )
        return pending, seen

    def plan_candidate(
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

        src = item.source
        try:
            st = item.path.stat()
        except OSError as exc:
            report.files_skipped.append({"file": item.rel, "reason": per_file_reason(exc)})
            return True
        # A file mined in another mode (convos) or into another wing is re-filed.
        same_place = rec is not None and rec.wing == wing and rec.ingest_mode == "projects"
        # Drawers filed before content dates (miners/dates.py) are filed again to get theirs.
        redate = same_place and self._dated_by_older_version(rec)
        if (
            same_place
            and not (rooms_changed or report.rescreen or redate)
            and (rec.size, rec.mtime) == (st.st_size, st.st_mtime)
        ):
            report.files_unchanged += 1
            return True
        # Read once: the verdict, the hash, the text, size and mtime all come from one read.
        # Credential files are refused and secrets redacted here (miners/secrets.py).
        content = read_screened(item.path, item.rel, int(project.max_file_mb * 1e6), report)
        if not isinstance(content, FileText):
            report.files_skipped.append({"file": item.rel, "reason": content})
            return rec is None  # mined before and now unusable: False, its drawers go
        digest = content.digest
        if (
            same_place
            and not redate
            and rec.content_hash == digest
            and not self._room_moved(rec, item.rel, content.text, project, rooms_changed)
        ):
            report.files_unchanged += 1
            if not report.dry_run:
                with self.catalog.transaction() as conn:
                    self.catalog.touch_file(conn, src, content.size, content.mtime)
            return True
        room, chunks = plan_file(item.rel, content.text, project.rooms)
        dated = note_date(item.rel, content.text, content.mtime)
        sections = section_dates(content.text)
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
                    # The date of what it records (miners/dates.py): what search
                    # --since/--before compare (filters.py), shown with each hit.
                    **chunk_date(dated, sections, c.line_start, c.line_end),
                    "line_start": c.line_start,
                    "line_end": c.line_end,
                    "encoding": content.encoding,
                },
            )
            for c in chunks
        ]
        old_ids = list(rec.drawer_ids) if rec else []
        reason = _change_reason(rec, wing, digest, redate)
        return PendingFile(
            item.path, item.rel, content.size, content.mtime, digest, rows, old_ids, reason
        )

    def _dated_by_older_version(self, rec: FileRecord) -> bool:
        """Whether the file's drawers were filed before drawers said where their date comes
        from (`date_source`, miners/dates.py): their `date` is the file's time at first
        mining, which the next mine replaces with the date of what the file records."""
        if not rec.drawer_ids:
            return False
        # One drawer's metadata, looked at as text (no JSON, no drawer text): on every
        # unchanged file of a re-mine this must cost next to nothing.
        row = self.catalog.conn.execute(
            "SELECT instr(metadata, '\"date_source\"') FROM drawers WHERE id = ?",
            (rec.drawer_ids[0],),
        ).fetchone()
        return row is not None and not row[0]

    def _room_moved(
        self, rec: FileRecord, rel: str, text: str, project: ProjectConfig, rooms_changed: bool
    ) -> bool:
        if not rooms_changed or not rec.drawer_ids:
            return False

        current = self.catalog.get(rec.drawer_ids[:1]).get(rec.drawer_ids[0])
        return current is not None and current.room != plan_file(rel, text, project.rooms)[0]

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
        # The last point a stop request (Ctrl-C) is taken before this group is written.
        notify("write", {"files": len(group), "drawers": len(rows)})
        with self.lock.hold():
            replace: list[str] = []
            for f in group:
                replace += self._replaced_ids(f)
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
            self._count_changes(report, [r.id for r in rows], replace)
            self.writer.file(rows, embeddings, replace, files, keep_secrets=report.keep_secrets)
        for f in group:
            report.files_mined.append(f.rel)
            notify("file", {"path": f.rel, "drawers": len(f.rows)})

    def _embed_with_progress(self, texts: list[str], owners: list[str], notify: ProgressFn) -> Any:
        """Embed in slices of EMBED_SLICE, telling `notify` after each (the file the slice ends
        in, and how many of this group's files it reached), so progress moves every few
        drawers, not once per write group."""
        parts = []
        reached = 0
        for start in range(0, len(texts), EMBED_SLICE):
            parts.append(self.embedder.embed(texts[start : start + EMBED_SLICE]))
            end = start + len(parts[-1])
            reached += len(set(owners[start:end]) - set(owners[:start]))
            notify("embedded", {"chunks": end - start, "path": owners[end - 1], "files": reached})
        return np.concatenate(parts) if parts else self.embedder.embed([])

    def remove_files(
        self, root: Path, removed: list[str], known: dict[str, FileRecord], report: MineReport
    ) -> None:
        if not removed:
            return
        with self.lock.hold():
            ids = self._removed_ids(removed, known)
            self._count_changes(report, [], ids)
            self.writer.remove(ids, forget_files=removed)
        report.files_removed = [rel_source(root, s) for s in removed]


class _ChatSample:
    """How many of the first CHAT_SAMPLE files a project mine reads look like chat exports."""

    def __init__(self) -> None:
        self.looked = self.chats = 0

    def check(self, path: Path) -> None:
        if self.looked >= CHAT_SAMPLE:
            return
        self.looked += 1
        # The file itself was read; a failure here only leaves it out of the count.
        with contextlib.suppress(*PER_FILE_ERRORS):
            self.chats += _looks_like_chat(path)

    def most(self) -> bool:
        return self.chats >= 2 and self.chats * 2 > self.looked


def _looks_like_chat(path: Path) -> bool:
    """A chat export by its content: one of the JSON exports, or a transcript with both a
    user's and an assistant's speaker lines (a note that merely quotes with ">" is not)."""

    try:
        found = detect(path).format
    except ParseError:
        return False
    if found != plain_text.FORMAT:
        return found is not None
    with path.open("rb") as fh:
        head = fh.read(HEAD_BYTES).decode("utf-8", "replace")
    return plain_text.transcript_mode(head.splitlines()) == "prefix"


def _change_reason(rec: FileRecord | None, wing: str, digest: str, redate: bool = False) -> str:
    """Why a file is filed again, in the words of the mining plan."""
    if rec is None:
        return "new file"
    if rec.wing != wing:
        return f"moves from wing {rec.wing}"
    if rec.ingest_mode != "projects":
        return f"was mined as {rec.ingest_mode}"
    if rec.content_hash != digest:
        return "content changed"
    if redate:
        return "gets its content date (mined by an older version)"
    return "room changed in mempalace.toml"
