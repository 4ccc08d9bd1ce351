"""Keeping a palace in step with its sources and its sessions:

- `checkpoint`: several drawers and an optional diary entry in one call, all or nothing: every
  item is checked before anything is written, then one lock hold files them in one write (one
  drawer-store request, one catalogue transaction). Items already in the palace, or at least
  `dedup_threshold` similar to a drawer (or to an earlier item), are skipped and reported.
- `sync`: drawers whose source file was deleted, moved, or is now ignored (.gitignore, the
  exclude list of the folder's mempalace.toml, folders and temporary files mining never reads);
  a dry run unless `apply`.
- `memories_filed_away`: what was filed since the last time it was asked in this process (by
  a client hook, watch mode, another agent): counts by room and filer, and the newest drawers.
- `health`: what a palace just read afresh holds (after `Palace.reopen()`, which drops every
  cached handle: drawer store, catalogue, knowledge graph, tunnels).
- `hook_settings`: how `mempalace hook` behaves (common/hook_settings.py).
- `mesh_peers`: the machines writing to a team palace (its Chroma server's change records);
  an embedded palace has none, and says why.

A part the `Palace` facade owns (`palace.upkeep`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mempalace_cli.common.errors import ConfigError, InvalidInputError, failure_of
from mempalace_cli.common.hook_settings import hook_settings_path, write_hook_settings
from mempalace_cli.common.lazy import lazy
from mempalace_cli.common.textsafe import clean_text
from mempalace_cli.miners.dates import filed_date
from mempalace_cli.miners.files import IgnoreRules, is_skipped_dir, is_temp_file
from mempalace_cli.miners.paths import on_disk, source_key
from mempalace_cli.miners.project import DEFAULT_EXCLUDE, load_project_config
from mempalace_cli.miners.secrets import redact_for_drawer
from mempalace_cli.service.core import PalaceCore, Part
from mempalace_cli.service.diary import entry_row
from mempalace_cli.service.drawers import DUPLICATE_THRESHOLD, check_content
from mempalace_cli.service.names import name_to_file, name_to_read
from mempalace_cli.service.navigation import read_catalog
from mempalace_cli.service.results import (
    CheckpointResult,
    HookSettingsResult,
    KgStatsResult,
    MemoriesFiledAwayResult,
    MeshPeersResult,
    ReconnectResult,
    SyncResult,
)
from mempalace_cli.storage.catalog import DrawerRow, FileRecord
from mempalace_cli.storage.consistency import now_iso
from mempalace_cli.storage.drawer_ids import candidate_ids, filed_under
from mempalace_cli.storage.drawer_ids import drawer_id as hand_filed_id
from mempalace_cli.storage.manifest import drawer_ids_of_sources, filed_since, mined_files
from mempalace_cli.storage.server_ledger import RETENTION_US, now_us, peer_name

if TYPE_CHECKING:
    from mempalace_cli.service.drawers import Drawers
    from mempalace_cli.service.writer import DrawerWriter

np = lazy("numpy")

MAX_CHECKPOINT_ITEMS = 100
ITEM_FIELDS = ("wing", "room", "content", "source_file")
DIARY_FIELDS = ("agent_name", "agent", "entry", "content", "topic", "wing")
# What `memories_filed_away` counts from when first asked: this process's start (the module
# is imported when the server starts).
PROCESS_STARTED = now_iso()
PEER_WINDOW_HOURS = 24


@dataclass
class _Item:
    index: int
    row: DrawerRow
    digest: str


class Upkeep(Part):
    """Checkpoints, sync and the session helpers. Drawers are filed and removed through the
    `DrawerWriter` it is given; near duplicates are found by the `Drawers` part. (Its own
    `sync` is the stale-file verb: the catalogue's repair is `self.core.sync()`.)"""

    def __init__(self, core: PalaceCore, writer: DrawerWriter, drawers: Drawers) -> None:
        super().__init__(core)
        self.writer = writer
        self.drawers = drawers
        self._filed_mark: tuple[str, set[str]] = (PROCESS_STARTED, set())

    # -- checkpoint -------------------------------------------------------------------------
    def checkpoint(
        self,
        items: list[dict[str, Any]],
        diary: dict[str, Any] | None = None,
        dedup_threshold: float = DUPLICATE_THRESHOLD,
        added_by: str | None = None,
    ) -> CheckpointResult:
        """File `items` ({wing, room, content, source_file?}) and the `diary` entry
        ({agent_name, entry or content, topic?, wing?}) in one write; see the module
        docstring. A bad item or diary entry is an InvalidInputError naming it, and nothing
        is written."""
        if isinstance(dedup_threshold, bool) or not isinstance(dedup_threshold, int | float):
            raise InvalidInputError(f"dedup_threshold must be a number, not {dedup_threshold!r}.")
        if not 0.0 < dedup_threshold <= 1.0:
            raise InvalidInputError(
                f"dedup_threshold must be above 0 and at most 1, not {dedup_threshold}.",
                hint="0.9 skips items that say nearly what a drawer says; 1 only exact ones.",
            )
        filer = (added_by or "").strip() or "mcp"
        batch, secrets = self._checked_items(items, filer)
        diary_row, diary_result = self._checked_diary(diary)
        with self.lock.hold():  # one hold: the checks against the palace and the write
            self.create()
            self.core.sync()  # the catalogue's repair (this part's `sync` is another verb)
            filed, duplicates, rows, vectors = self._new_items(batch, dedup_threshold)
            if diary_row is not None:
                rows.append(diary_row)
                vectors.append(self.embedder.embed([diary_row.text])[0])
            if rows:
                self.writer.file(rows, np.asarray(vectors, dtype=np.float32))
        return {
            "success": True,
            "added": len(filed),
            "filed": filed,
            "skipped": len(duplicates),
            "duplicates": duplicates,
            "diary": diary_result,
            "secrets_redacted": secrets + (diary_result or {}).get("secrets_redacted", 0),
        }

    def _checked_items(self, items: Any, filer: str) -> tuple[list[_Item], int]:
        if not isinstance(items, list) or not items:
            raise InvalidInputError(
                "items must be a non-empty list of {wing, room, content}. Nothing was written.",
                hint="Pass at least one item, e.g. [{wing: 'myapp', room: 'decisions', "
                "content: '...'}].",
            )
        if len(items) > MAX_CHECKPOINT_ITEMS:
            raise InvalidInputError(
                f"{len(items):,} items in one checkpoint; at most {MAX_CHECKPOINT_ITEMS} are "
                "accepted. Nothing was written.",
                hint="Split them over several checkpoints.",
            )
        stamp = now_iso()
        batch: list[_Item] = []
        secrets = 0
        for n, item in enumerate(items):
            try:
                _check_object(
                    item,
                    "{wing, room, content}",
                    ITEM_FIELDS,
                    f"an item takes {', '.join(ITEM_FIELDS)}",
                )
                wing = name_to_file(item.get("wing"), "wing")
                room = name_to_file(item.get("room"), "room")
                text = check_content(item.get("content"))
                source = item.get("source_file")
                if source is not None and not isinstance(source, str):
                    raise InvalidInputError(f"source_file must be text, not {source!r}.")
                content, source, found = redact_for_drawer(clean_text(text), source)
                digest = hashlib.sha256(content.encode("utf-8")).hexdigest()
                meta: dict[str, Any] = {
                    "added_by": filer,
                    "content_hash": digest,
                    "ingest_mode": "manual",
                }
                meta.update(filed_date(meta, stamp))
            except InvalidInputError as exc:
                raise InvalidInputError(
                    f"Item {n} of the checkpoint is invalid: {exc.message.rstrip('.')}. "
                    "Nothing was written (no item, no diary entry).",
                    hint=exc.hint or "Fix that item and send the whole checkpoint again.",
                ) from exc
            secrets += found["secrets_redacted"]
            row = DrawerRow(
                hand_filed_id(wing, room, digest),
                wing,
                room,
                source or "",
                None,
                stamp,
                content,
                meta,
            )
            batch.append(_Item(n, row, digest))
        return batch, secrets

    @staticmethod
    def _checked_diary(diary: Any) -> tuple[DrawerRow | None, dict[str, Any] | None]:
        if diary is None:
            return None, None
        try:
            _check_object(
                diary,
                "{agent_name, entry, topic, wing}",
                DIARY_FIELDS,
                "it takes agent_name, entry (or content), topic and wing",
            )
            agent = diary.get("agent_name", diary.get("agent"))
            text = diary.get("entry", diary.get("content"))
            topic, wing = diary.get("topic"), diary.get("wing")
            for name, value in (("topic", topic), ("wing", wing)):
                if value is not None and not isinstance(value, str):
                    raise InvalidInputError(f"{name} must be text, not {value!r}.")
            return entry_row(agent, text, topic, wing)
        except InvalidInputError as exc:
            raise InvalidInputError(
                f"The checkpoint's diary entry is invalid: {exc.message.rstrip('.')}. "
                "Nothing was written (no item, no diary entry).",
                hint=exc.hint or "Fix the diary entry and send the whole checkpoint again.",
            ) from exc

    def _new_items(
        self, batch: list[_Item], threshold: float
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[DrawerRow], list[Any]]:
        """Which items to file (with their vectors): not stored already, not close to a drawer
        or to an earlier item."""
        keys = [c for b in batch for c in candidate_ids(b.row.wing, b.row.room, b.digest)]
        stored = self.catalog.get(keys) if self.catalog.exists else {}
        filed: list[dict[str, Any]] = []
        duplicates: list[dict[str, Any]] = []
        fresh: list[_Item] = []
        taken: dict[str, int] = {}
        for b in batch:
            where = {"item": b.index, "wing": b.row.wing, "room": b.row.room}
            already = filed_under(stored, b.row.wing, b.row.room, b.digest, b.row.text)
            if already:
                duplicates.append(where | {"reason": "already_stored", "drawer_id": already})
            elif b.row.id in taken:
                duplicates.append(where | {"reason": "same_as_item", "same_as": taken[b.row.id]})
            else:
                taken[b.row.id] = b.index
                fresh.append(b)
        if not fresh:
            return filed, duplicates, [], []
        vectors = np.asarray(self.embedder.embed([b.row.text for b in fresh]), dtype=np.float32)
        units = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        rows: list[DrawerRow] = []
        kept: list[int] = []  # positions in `fresh` of the items filed so far
        for pos, b in enumerate(fresh):
            where = {"item": b.index, "wing": b.row.wing, "room": b.row.room}
            matches, similar = self.drawers.near_duplicates(vectors[pos], b.row.text, threshold)
            if matches or similar:
                reason = "duplicate" if matches else "similar"
                duplicates.append(where | {"reason": reason, "matches": (matches or similar)})
                continue
            close = [k for k in kept if float(units[k] @ units[pos]) >= threshold]
            if close:
                duplicates.append(
                    where | {"reason": "similar_to_item", "same_as": fresh[close[0]].index}
                )
                continue
            kept.append(pos)
            rows.append(b.row)
            filed.append(where | {"drawer_id": b.row.id})
        duplicates.sort(key=lambda d: d["item"])
        return filed, duplicates, rows, [vectors[k] for k in kept]

    # -- sync -------------------------------------------------------------------------------
    def sync(
        self, project_dir: str | None = None, wing: str | None = None, apply: bool = False
    ) -> SyncResult:
        """The mined files (all, those mined from `project_dir`, those filed in `wing`) whose
        drawers no longer belong in the palace, and why; with `apply`, those drawers are
        removed (and the files leave the mining record, so mining again starts afresh)."""
        catalog = read_catalog(self.core)
        scope_root = _project_key(project_dir)
        records = mined_files(catalog)
        wing_n = name_to_read(wing, {r.wing for r in records}, "wing")
        chosen = [
            r
            for r in records
            if (wing_n is None or r.wing == wing_n)
            and (scope_root is None or _under(r, scope_root))
        ]
        stale, problems = _stale_files(chosen)
        ids_by_file = _ids_by_file(catalog, stale, records)
        removed = 0
        if apply and stale:
            with self.lock.hold():  # read again under the lock: what goes is what is stale now
                records = mined_files(catalog)
                going = {rec.source_file for rec, _why in stale}
                stale, _ = _stale_files([r for r in records if r.source_file in going])
                ids_by_file = _ids_by_file(catalog, stale, records)
                ids = list(dict.fromkeys(i for found in ids_by_file.values() for i in found))
                if stale:
                    forget = [rec.source_file for rec, _why in stale]
                    self.writer.remove(ids, forget_files=forget)
                removed = len(ids)
        files = [
            {
                "source_file": rec.source_file,
                "wing": rec.wing,
                "mined_from": rec.source_root,
                "reason": why,
                "drawers": len(ids_by_file[rec.source_file]),
            }
            for rec, why in stale
        ]
        result: dict[str, Any] = {
            "dry_run": not apply,
            "project_dir": scope_root,
            "wing": wing_n,
            "checked_files": len(chosen),
            "files": files,
            "stale_files": len(files),
            "matched": sum(f["drawers"] for f in files),
            "removed": removed,
        }
        if problems:
            result["problems"] = problems
        if not chosen:
            result["hint"] = (
                "No mined files match"
                + (f" folder {scope_root}" if scope_root else "")
                + (f" in wing {wing_n!r}" if wing_n else "")
                + ". sync only checks drawers mined from files (mempalace_mine or `mempalace "
                "mine`); drawers filed by hand are never touched."
            )
        elif not files:
            result["hint"] = "Every mined file is still there and still mined: nothing to remove."
        elif not apply:
            result["hint"] = (
                f"A dry run: {result['matched']} drawer(s) of {len(files)} file(s) would go. "
                "Call again with apply: true to remove them."
            )
        return result

    # -- session helpers --------------------------------------------------------------------
    def memories_filed_away(self) -> MemoriesFiledAwayResult:
        """What was filed since this was last asked in this process (or since it started),
        then remember that as read."""
        since, skip = self._filed_mark
        if not self.exists():
            return {
                "status": "quiet",
                "message": "No palace yet: nothing was filed.",
                "count": 0,
                "since": since,
                "timestamp": None,
            }
        catalog = read_catalog(self.core)
        got = filed_since(catalog, since, skip)
        if got.newest is not None:
            ids = set(got.ids_at_newest) | (skip if got.newest == since else set())
            self._filed_mark = (got.newest, ids)
        if not got.total:
            return {
                "status": "quiet",
                "message": f"Nothing new was filed since {since}.",
                "count": 0,
                "since": since,
                "timestamp": None,
            }
        places = ", ".join(f"{w}/{r} ({n})" for w, r, n in got.by_place[:5])
        more = len(got.by_place) - 5
        return {
            "status": "ok",
            "message": f"{got.total} drawer{'s' if got.total != 1 else ''} filed away since "
            f"{since}: {places}" + (f" and {more} more rooms" if more > 0 else "") + ".",
            "count": got.total,
            "since": since,
            "timestamp": got.newest,
            "by_room": [{"wing": w, "room": r, "drawers": n} for w, r, n in got.by_place],
            "by_filer": [{"added_by": who, "drawers": n} for who, n in got.by_filer],
            "latest": got.latest,
        }

    def health(self, reopened: list[str], facts: Callable[[], KgStatsResult]) -> ReconnectResult:
        """What the palace holds, read afresh after `Palace.reopen()` dropped the handles
        named in `reopened`; `facts` is the knowledge graph's stats (its `kg_stats`)."""
        if not self.exists():
            return {
                "success": True,
                "reconnected": reopened,
                "palace_path": str(self.path),
                "health": {"palace": "missing"},
                "hint": "No palace here yet: file a drawer or run `mempalace init` first.",
            }
        repaired = self.core.sync()
        self.core.keep_vector_index()  # an explicit step: the derived vector index too
        health: dict[str, Any] = {
            "palace": "ok",
            "drawers": self.catalog.count(),
            "index_repaired": repaired,
            "embedding_model": self.binding().model,
        }
        try:
            health["facts"] = facts()["triples"]
        except Exception as exc:  # a broken graph file is reported, the drawers still serve
            health["knowledge_graph"] = failure_of(exc).text()
        return {
            "success": True,
            "reconnected": reopened,
            "palace_path": str(self.path),
            "store": self.store.location,
            "health": health,
        }

    def hook_settings(
        self, silent_save: bool | None = None, desktop_toast: bool | None = None
    ) -> HookSettingsResult:
        for name, value in (("silent_save", silent_save), ("desktop_toast", desktop_toast)):
            if value is not None and not isinstance(value, bool):
                raise InvalidInputError(f"{name} must be true or false, not {value!r}.")
        home = self.settings.home
        settings, changed = write_hook_settings(
            home, silent_save=silent_save, desktop_toast=desktop_toast
        )
        return {
            "success": True,
            "settings": settings.to_dict(),
            "updated": changed,
            "path": str(hook_settings_path(home)),
        }

    def mesh_peers(self) -> MeshPeersResult:
        me = peer_name()
        window = min(RETENTION_US, PEER_WINDOW_HOURS * 3600 * 1_000_000)
        found = self.backend.writers_since(now_us() - window)
        if found is None:
            return {
                "peers": [],
                "count": 0,
                "team_palace": False,
                "this_machine": me,
                "reason": "This palace is a folder on this machine (embedded), so nothing else "
                "writes to it: it has no peers. A team palace on a Chroma server "
                "(--chroma-url, chroma_url in config.toml) lists the machines writing to it.",
            }
        peers = [
            {
                "peer": who,
                "last_write": _stamp_of(last),
                "change_records": n,
                "this_machine": who == me,
            }
            for who, (last, n) in sorted(found.items(), key=lambda kv: -kv[1][0])
        ]
        result: dict[str, Any] = {
            "peers": peers,
            "count": len(peers),
            "team_palace": True,
            "server": self.store.location,
            "this_machine": me,
            "window_hours": window // (3600 * 1_000_000),
        }
        if not peers:
            result["reason"] = (
                f"No machine wrote to this team palace in the last {result['window_hours']} hours."
            )
        return result


# -- sync's rules -----------------------------------------------------------------------------
def _check_object(value: Any, shape: str, fields: tuple[str, ...], takes: str) -> None:
    """`value` is an object {shape} with no field but `fields`; else why not, with what it
    `takes`."""
    if not isinstance(value, dict):
        raise InvalidInputError(f"it is not an object {shape}.")
    unknown = sorted(set(value) - set(fields))
    if unknown:
        raise InvalidInputError(f"unknown field(s) {', '.join(map(repr, unknown))}; {takes}.")


def _project_key(project_dir: str | None) -> str | None:
    if project_dir is None or not str(project_dir).strip():
        return None
    path = Path(str(project_dir)).expanduser()
    if not path.is_absolute():
        path = Path.cwd() / path
    return source_key(os.path.normpath(path))


def _under(rec: FileRecord, root: str) -> bool:
    inside = root.rstrip("/") + "/"
    return rec.source_root == root or rec.source_file.startswith(inside)


def _stale_files(records: list[FileRecord]) -> tuple[list[tuple[FileRecord, str]], list[str]]:
    """The records whose drawers no longer belong, each with why; and the problems that kept
    some folder from being checked (its mempalace.toml can't be read): never a reason to
    remove."""
    rules: dict[tuple[str, str], tuple[Any, Any, list[str]] | None] = {}
    problems: list[str] = []
    stale: list[tuple[FileRecord, str]] = []

    def rules_for(root: Path, mode: str) -> tuple[Any, Any, list[str]] | None:
        key = (str(root), mode)
        if key not in rules:
            exclude = list(DEFAULT_EXCLUDE)
            if mode == "projects":
                try:
                    config = load_project_config(root)
                except ConfigError as exc:
                    problems.append(f"{root}: {exc.message} (its files were not checked)")
                    rules[key] = None
                    return None
                if config is not None:
                    exclude = config.exclude
            rules[key] = (IgnoreRules(root, exclude), IgnoreRules(root, ()), exclude)
        return rules[key]

    for rec in records:
        root, path = on_disk(rec.source_root), on_disk(rec.source_file)
        if not root.is_dir():
            stale.append((rec, f"the folder it was mined from ({rec.source_root}) is gone"))
            continue
        if not path.exists():
            stale.append((rec, "deleted or moved"))
            continue
        try:
            rel = path.relative_to(root)
        except ValueError:
            continue  # recorded outside its root: not ours to judge
        skipped = next((part for part in rel.parts[:-1] if is_skipped_dir(part)), None)
        if skipped is not None:
            stale.append((rec, f"in a folder mining skips ({skipped})"))
            continue
        if is_temp_file(path.name):
            stale.append((rec, "a temporary file mining skips"))
            continue
        found = rules_for(root, rec.ingest_mode)
        if found is None:
            continue
        everything, git_only, _exclude = found
        if not (everything.folder_ignored(path.parent) or everything.ignored(path, False)):
            continue
        by_git = git_only.folder_ignored(path.parent) or git_only.ignored(path, False)
        stale.append((rec, "ignored by a .gitignore" if by_git else "excluded by mempalace.toml"))
    return stale, problems


def _ids_by_file(
    catalog: Any, stale: list[tuple[FileRecord, str]], records: list[FileRecord]
) -> dict[str, list[str]]:
    """stale file -> the drawers that go with it: its own (by the manifest and by source),
    less those another remaining file also holds (a conversation exported twice)."""
    if not stale:
        return {}
    going = {rec.source_file for rec, _ in stale}
    by_source = drawer_ids_of_sources(catalog, sorted(going)) if catalog.exists else {}
    kept = {i for r in records if r.source_file not in going for i in r.drawer_ids}
    present = catalog.present(
        sorted(
            {i for rec, _ in stale for i in rec.drawer_ids}
            | {i for ids in by_source.values() for i in ids}
        )
    )
    out: dict[str, list[str]] = {}
    for rec, _why in stale:
        ids = dict.fromkeys([*rec.drawer_ids, *by_source.get(rec.source_file, [])])
        out[rec.source_file] = [i for i in ids if i in present and i not in kept]
    return out


def _stamp_of(at_us: int) -> str:
    return datetime.fromtimestamp(at_us / 1_000_000, UTC).isoformat(timespec="seconds")
