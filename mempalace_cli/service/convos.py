"""`mine --mode convos`: file chat exports as one drawer per exchange, idempotent by content.

Drawer ids come from the exchange's words (see `miners.convos.exchange_key`), not from the
file, so re-mining, a grown session, or a later export that repeats earlier conversations only
embeds exchanges the palace has not seen. Every export file's manifest entry lists all the
drawers it contains, including ones first filed from another file.

Deleting (or shrinking) an export: a drawer goes only when no export still recorded in the
palace contains it; one that survives because another file holds the same exchange is
re-pointed at that file (`source_file`), so search never names a file that is gone.

Big exports are parsed twice rather than held: pass one streams each file to find the new
exchanges (keeping their drawers in memory only up to HOLD_CHARS of text), pass two streams
again the files whose drawers were not kept, embedding and filing EMBED_GROUP at a time.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mempalace_cli.common.naming import normalize_name
from mempalace_cli.miners.convos import (
    SLACK_INDEX,
    ConvoDrawer,
    Exchange,
    ParseError,
    Problem,
    detect,
    plan_drawers,
    read_exchanges,
)
from mempalace_cli.miners.dates import file_date
from mempalace_cli.miners.files import sha256_file, walk
from mempalace_cli.miners.paths import source_key
from mempalace_cli.miners.project import DEFAULT_EXCLUDE
from mempalace_cli.miners.secrets import (
    credential_reason,
    policy_changed,
    redact_exchange,
    remember_policy,
    secret_name_reason,
)
from mempalace_cli.service.core import PalaceCore, Part, now_iso
from mempalace_cli.service.mine_common import (
    DEFAULT_AGENT,
    EMBED_GROUP,
    PER_FILE_ERRORS,
    MineReport,
    ProgressFn,
    per_file_reason,
    rel_source,
    resolve_dir,
    walked,
)
from mempalace_cli.service.names import name_to_file
from mempalace_cli.service.results import MineRun
from mempalace_cli.service.writer import DrawerWriter
from mempalace_cli.storage.catalog import DrawerRow, FileRecord
from mempalace_cli.storage.drawer_ids import drawer_id as convo_drawer_id
from mempalace_cli.storage.drawer_ids import legacy_drawer_id

MODE = "convos"
HOLD_CHARS = 8_000_000  # drawer text kept between the passes; beyond it, files are re-read
# Exchange drawers are long (most near the model's 256 tokens), and ONNX's memory grows with
# batch x tokens^2: batches of 8 peak near 370 MB of RSS where 32 peak near 880 MB (measured).
EMBED_BATCH = 8
SLACK_INDEX_REASON = "a list of users or channels, not messages (Slack reads names from users.json)"


@dataclass
class PendingExport:
    path: Path
    rel: str
    size: int
    mtime: float
    content_hash: str
    fmt: str
    drawer_ids: list[str]  # every drawer the file contains, in order
    new_ids: set[str]  # the ones this run files
    rows: list[DrawerRow] | None  # the new drawers, or None: read the file again
    old_ids: list[str] = field(default_factory=list)


class ConvoMining(Part):
    """`mine --mode convos` (see the module docstring), over the palace's resources; drawers
    are filed and removed through the `DrawerWriter` it is given."""

    def __init__(self, core: PalaceCore, writer: DrawerWriter) -> None:
        super().__init__(core)
        self.writer = writer

    def mine_convos(
        self,
        directory: str | Path,
        wing: str | None = None,
        agent: str | None = None,
        dry_run: bool = False,
        limit: int | None = None,
        progress: ProgressFn | None = None,
        keep_secrets: bool = False,
    ) -> MineRun:
        """Mine the chat exports under `directory` (any mix of the six formats) into `wing`
        (default: the folder's name). Returns the same report as project mining. Secrets in
        the exchanges are redacted and credential files skipped, unless `keep_secrets`."""

        started = time.perf_counter()
        root = resolve_dir(directory)
        wing_name = name_to_file(wing, "wing") if wing else normalize_name(root.name)
        report = MineReport(source_key(root), wing_name, MODE, dry_run)
        report.keep_secrets = keep_secrets
        if not dry_run:
            report.palace_created = self.create()
            self.sync()
        has_catalog = self.catalog.exists
        known = self.catalog.files_under(source_key(root)) if has_catalog else {}
        existing = self.catalog.all_ids() if has_catalog else set()
        notify = progress or (lambda event, data: None)
        report.rescreen = policy_changed(self.catalog, source_key(root), keep_secrets, known)

        pending, seen = self._scan_exports(
            root, wing_name, agent or DEFAULT_AGENT, known, existing, limit, report, notify
        )
        report.limited = limit is not None and len(seen) >= limit
        removed = [] if report.limited else [src for src in known if src not in seen]
        notify("plan", {"files": len(pending), "chunks": sum(len(p.new_ids) for p in pending)})
        if dry_run:
            report.files_mined = [p.rel for p in pending]
            report.drawers_added = sum(len(p.new_ids) for p in pending)
            for p in pending:
                reason = "new export" if not p.old_ids else "content changed"
                report.plan_file(p.rel, not p.old_ids, reason, len(p.new_ids))
            report.plan_removed(root, {s: len(known[s].drawer_ids) for s in removed})
            gone, _ = self._stale(pending, removed, known, extra_claims=pending)
            report.drawers_removed = len(gone)
        else:
            self._file_exports(pending, root, wing_name, agent or DEFAULT_AGENT, report, notify)
            self._retire(pending, removed, known, root, report)
            if not report.limited:
                remember_policy(self.catalog, source_key(root), keep_secrets)
        report.elapsed_seconds = time.perf_counter() - started
        return report.to_dict()

    # -- pass one: what is new --------------------------------------------------------------
    def _scan_exports(
        self,
        root: Path,
        wing: str,
        agent: str,
        known: dict[str, FileRecord],
        existing: set[str],
        limit: int | None,
        report: MineReport,
        notify: ProgressFn,
    ) -> tuple[list[PendingExport], set[str]]:

        pending: list[PendingExport] = []
        seen: set[str] = set()
        planned: set[str] = set()  # new ids already claimed by an earlier file of this run
        held = 0
        keep = report.keep_secrets
        items = walk(root, DEFAULT_EXCLUDE, [self.path], keep_secrets=keep)
        for item in walked(items, report, limit, seen):
            src = source_key(item.path)
            why = None if keep else credential_reason(item.path)
            if why:  # a credential file (by name): never read; drawers it had go
                report.files_skipped.append({"file": item.rel, "reason": why})
                continue
            seen.add(src)
            try:
                st = item.path.stat()
            except OSError as exc:
                report.files_skipped.append({"file": item.rel, "reason": per_file_reason(exc)})
                continue
            rec = known.get(src)
            same_place = rec is not None and rec.wing == wing and rec.ingest_mode == MODE
            fresh = report.rescreen  # filed under other secrets rules: read again
            if same_place and not fresh and (rec.size, rec.mtime) == (st.st_size, st.st_mtime):
                report.files_unchanged += 1
                continue
            try:
                # The hash is taken before the exchanges are read: a save in between leaves
                # an old hash with new text, so the next run reads the file again (never the
                # other way round, which would call a changed file "unchanged").
                found = detect(item.path)
                digest = sha256_file(item.path) if found.format else ""
            except PER_FILE_ERRORS as exc:  # vanished, unreadable, nested too deep
                report.files_skipped.append({"file": item.rel, "reason": per_file_reason(exc)})
                continue
            if found.format == SLACK_INDEX:
                report.files_skipped.append({"file": item.rel, "reason": SLACK_INDEX_REASON})
                seen.discard(src)
                continue
            if found.format is None:
                report.files_skipped.append({"file": item.rel, "reason": found.reason})
                seen.discard(src)  # mined before and no longer an export: its drawers go
                continue
            if same_place and not fresh and rec.content_hash == digest:
                report.files_unchanged += 1
                if not report.dry_run:
                    with self.lock.hold(), self.catalog.transaction() as conn:
                        self.catalog.touch_file(conn, src, st.st_size, st.st_mtime)
                continue
            why = None if keep else secret_name_reason(item.rel)
            if why:  # its path is the drawers' source: refused, not filed under a redaction
                report.files_skipped.append({"file": item.rel, "reason": why})
                seen.discard(src)
                continue
            notify("scan", {"path": item.rel})
            try:
                ids: list[str] = []
                in_file: set[str] = set()
                new_ids: set[str] = set()
                rows: list[DrawerRow] | None = []
                problems: list[Problem] = []
                size = 0
                context = RowContext(wing, agent, src, source_key(root), digest, st.st_mtime)
                report.secrets.pop(item.rel, None)
                screen = None if keep else (item.rel, report)
                rows_of = self._rows(item.path, found.format, context, problems, screen)
                for row, legacy in rows_of:
                    if legacy in existing and self._filed_as_legacy(legacy, row):
                        row = replace(row, id=legacy)  # filed before ids covered wing and room
                    if row.id in in_file:
                        continue  # the same exchange twice in one file: one drawer
                    in_file.add(row.id)
                    ids.append(row.id)
                    if row.id in existing or row.id in planned:
                        continue
                    new_ids.add(row.id)
                    planned.add(row.id)
                    if rows is not None:
                        size += len(row.text)
                        rows.append(row)
                        if held + size > HOLD_CHARS:
                            rows = None  # too much to keep: pass two reads the file again
            except (ParseError, UnicodeDecodeError, *PER_FILE_ERRORS) as exc:
                planned -= new_ids
                report.files_skipped.append({"file": item.rel, "reason": _reason(exc)})
                seen.discard(src)
                continue
            for p in problems:
                report.files_skipped.append(
                    {
                        "file": item.rel,
                        "reason": f"{p.where}: {p.problem} (left out; the "
                        "rest of the file was mined)",
                    }
                )
            if rows is not None:
                held += size
            old = list(rec.drawer_ids) if rec else []
            pending.append(
                PendingExport(
                    item.path,
                    item.rel,
                    st.st_size,
                    st.st_mtime,
                    digest,
                    found.format,
                    ids,
                    new_ids,
                    rows,
                    old,
                )
            )
        return pending, seen

    def _rows(
        self,
        path: Path,
        fmt: str,
        context: RowContext,
        problems: list[Problem],
        screen: tuple[str, Any] | None = None,
    ) -> Iterator[tuple[DrawerRow, str]]:
        """The drawers of one export. `screen`: (the file as reported, a report to note
        them in): secrets are redacted before the drawer ids are taken from the words."""

        def exchanges() -> Iterator[Exchange]:
            for item in read_exchanges(path, fmt):
                if isinstance(item, Problem):
                    problems.append(item)
                elif screen is not None:
                    yield redact_exchange(item, *screen)
                else:
                    yield item

        for index, drawer in enumerate(plan_drawers(exchanges())):
            yield context.row(drawer, index), context.legacy_id(drawer)

    def _filed_as_legacy(self, legacy: str, row: DrawerRow) -> bool:
        """True when `legacy` (the id this exchange got before ids covered wing and room) is
        stored in the row's own wing and room, not in a look-alike pair such as a_b/c vs
        a/b_c."""
        stored = self.catalog.get([legacy]).get(legacy)
        return stored is not None and (stored.wing, stored.room) == (row.wing, row.room)

    # -- pass two: embed and file -----------------------------------------------------------
    def _file_exports(
        self,
        pending: list[PendingExport],
        root: Path,
        wing: str,
        agent: str,
        report: MineReport,
        notify: ProgressFn,
    ) -> None:
        """File the new drawers EMBED_GROUP at a time. A file's manifest entry is written with
        its last drawers, so a crash never records an export as mined when it wasn't; the next
        run finds the drawers already filed and adds only the rest."""
        rows: list[DrawerRow] = []
        done: list[PendingExport] = []

        def flush() -> None:
            embeddings = (
                self.embedder.embed([r.text for r in rows], batch_size=EMBED_BATCH)
                if rows
                else None
            )
            if rows:
                notify("embedded", {"chunks": len(rows)})
            records = [
                FileRecord(
                    source_key(p.path),
                    source_key(root),
                    wing,
                    p.content_hash,
                    p.size,
                    p.mtime,
                    p.drawer_ids,
                    MODE,
                )
                for p in done
            ]
            with self.lock.hold():
                self.writer.file(rows, embeddings, (), records, keep_secrets=report.keep_secrets)
            report.drawers_added += len(rows)
            for p in done:
                report.files_mined.append(p.rel)
                notify("file", {"path": p.rel, "drawers": len(p.new_ids)})
            rows.clear()
            done.clear()

        for p in pending:
            for row in self._new_rows(p, root, wing, agent, report.keep_secrets):
                rows.append(row)
                if len(rows) >= EMBED_GROUP:
                    flush()
            p.rows = None  # written or queued: free the memory
            done.append(p)
        if rows or done:
            flush()

    def _new_rows(
        self, p: PendingExport, root: Path, wing: str, agent: str, keep_secrets: bool = False
    ) -> Iterator[DrawerRow]:
        if p.rows is not None:
            yield from p.rows
            return

        context = RowContext(
            wing, agent, source_key(p.path), source_key(root), p.content_hash, p.mtime
        )
        emitted: set[str] = set()
        try:
            # Redacted as in pass one (the same ids); already noted in the report there.
            screen = None if keep_secrets else (p.rel, _Unreported())
            for row, _ in self._rows(p.path, p.fmt, context, [], screen):
                if row.id in p.new_ids and row.id not in emitted:
                    emitted.add(row.id)
                    yield row
        except (ParseError, UnicodeDecodeError, *PER_FILE_ERRORS):
            return  # changed under us since pass one; the next run picks it up

    # -- deletions --------------------------------------------------------------------------
    def _claims(self, exclude: set[str]) -> dict[str, str]:
        """drawer id -> a recorded file (other than `exclude`) that contains it."""
        claims: dict[str, str] = {}
        if not self.catalog.exists:
            return claims
        for source_file, ids in self.catalog.conn.execute(
            "SELECT source_file, drawer_ids FROM files"
        ):
            if source_file in exclude:
                continue
            for drawer_id in json.loads(ids):
                claims.setdefault(drawer_id, source_file)
        return claims

    def _stale(
        self,
        pending: list[PendingExport],
        removed: list[str],
        known: dict[str, FileRecord],
        extra_claims: Sequence[PendingExport] = (),
    ) -> tuple[list[str], dict[str, str]]:
        """(drawers to delete, drawer -> file to re-point it at) for exports that were
        deleted or lost exchanges."""
        gone_files = set(removed)
        candidates: dict[str, str] = {}  # drawer id -> the file it used to come from
        for p in pending:
            keep = set(p.drawer_ids)
            for drawer_id in p.old_ids + self._ids_from(source_key(p.path)):
                if drawer_id not in keep:
                    candidates.setdefault(drawer_id, source_key(p.path))
        for src in removed:
            for drawer_id in known[src].drawer_ids + self._ids_from(src):
                candidates.setdefault(drawer_id, src)
        if not candidates:
            return [], {}
        claims = self._claims(gone_files | {source_key(p.path) for p in extra_claims})
        for p in extra_claims:
            for drawer_id in p.drawer_ids:
                claims.setdefault(drawer_id, source_key(p.path))
        delete = [i for i in candidates if i not in claims]
        repoint = {i: claims[i] for i in candidates if i in claims}
        return delete, repoint

    def _ids_from(self, source_file: str) -> list[str]:
        return self.catalog.drawer_ids_for_source(source_file) if self.catalog.exists else []

    def _retire(
        self,
        pending: list[PendingExport],
        removed: list[str],
        known: dict[str, FileRecord],
        root: Path,
        report: MineReport,
    ) -> None:
        delete, repoint = self._stale(pending, removed, known)
        if not delete and not removed and not repoint:
            return
        with self.lock.hold():
            stored = self.catalog.get(list(repoint))
            moved = {
                i: src for i, src in repoint.items() if i in stored and stored[i].source_file != src
            }
            if moved:
                self._repoint(moved, stored)
            if delete or removed:
                self.writer.remove(delete, forget_files=removed)
        report.drawers_removed += len(delete)
        report.files_removed = [rel_source(root, s) for s in removed]

    def _repoint(self, moved: dict[str, str], stored: dict[str, DrawerRow]) -> None:
        """Name a surviving file as the source of drawers whose file is gone (the vectors are
        reused, not recomputed)."""
        ids = list(moved)
        got = self.store.get(ids, include=["embeddings"])
        vectors = dict(zip(got["ids"], got["embeddings"], strict=True))
        rows, embeddings = [], []
        for drawer_id in ids:
            if drawer_id not in vectors:
                continue
            old = stored[drawer_id]
            meta = dict(old.metadata)
            record = self.catalog.get_file(moved[drawer_id])
            if record is not None:
                meta["source_root"] = record.source_root
            for key in ("source_hash", "source_mtime"):
                meta.pop(key, None)
            rows.append(
                DrawerRow(
                    old.id,
                    old.wing,
                    old.room,
                    moved[drawer_id],
                    old.chunk_index,
                    old.filed_at,
                    old.text,
                    meta,
                )
            )
            embeddings.append(list(map(float, vectors[drawer_id])))
        if rows:
            self.writer.file(rows, embeddings)


class _Unreported:
    """A report whose secrets nobody reads (pass two redacts again what pass one noted)."""

    keep_secrets = False

    def __init__(self) -> None:
        self.secrets: dict[str, list[dict[str, Any]]] = {}


@dataclass(frozen=True)
class RowContext:
    """What every drawer of one conversation file shares (a chat export, or a session
    transcript: service/sessions.py). `date_name`: the name to read a date from when the
    conversation has no time, if not the file's path inside its root."""

    wing: str
    agent: str
    source_file: str
    source_root: str
    content_hash: str
    mtime: float
    date_name: str | None = None

    def file_date(self) -> dict[str, str]:
        if self.date_name is not None:
            return file_date(self.date_name, self.mtime)
        name = self.source_file
        if name.startswith(self.source_root.rstrip("/") + "/"):
            name = name[len(self.source_root.rstrip("/")) + 1 :]  # dated folders inside the root
        else:
            name = name.rsplit("/", 1)[-1]
        return file_date(name, self.mtime)

    def legacy_id(self, drawer: ConvoDrawer) -> str:
        return legacy_drawer_id(self.wing, drawer.room, drawer.key)

    def row(self, drawer: ConvoDrawer, index: int) -> DrawerRow:
        meta = drawer.metadata()
        meta.update(
            added_by=self.agent,
            source_root=self.source_root,
            source_hash=self.content_hash,
            source_mtime=self.mtime,
        )
        if "date" not in meta:  # no time in the conversation: its file's (miners/dates.py)
            meta.update(self.file_date())
        return DrawerRow(
            id=convo_drawer_id(self.wing, drawer.room, drawer.key),
            wing=self.wing,
            room=drawer.room,
            source_file=self.source_file,
            chunk_index=index,
            filed_at=now_iso(),
            text=drawer.text,
            metadata=meta,
        )


def _reason(exc: BaseException) -> str:

    if isinstance(exc, ParseError):
        return f"{exc.where}: {exc.problem}"
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text (invalid byte at offset {exc.start})"
    return per_file_reason(exc)
