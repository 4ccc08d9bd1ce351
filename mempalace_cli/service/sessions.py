"""Filing an agent session's transcript when a client hook fires (stop, session end, before
compaction), once however many times the hook runs; and splitting files that hold several
sessions.

What the clients send (their hook documentation): Claude Code writes one JSON object on the
hook's standard input, `{"session_id", "transcript_path", "cwd", "hook_event_name", ...}`
(`Stop`, `SubagentStop`, `PreCompact` with `trigger`, `SessionStart` with `source`,
`SessionEnd` with `reason`); Codex hooks send the same keys plus `turn_id` and `model`
(`transcript_path` may be null); Codex's older `notify` program gets
`{"type": "agent-turn-complete", "thread-id", "turn-id", "cwd", ...}` as its last argument
and no transcript path, so its rollout file is found under `$CODEX_HOME/sessions` by thread id.
`parse_hook_input` reads all three into a `HookEvent`.

Filing (`file_transcript`) reuses the conversation miner (miners/convos: the same parsers,
exchange drawers, topic rooms and content-derived drawer ids as `mine --mode convos`, secrets
redacted by the same rules) for one file, and records the transcript in the mining manifest
like a mined export. So:
- a run finds a transcript unchanged (same size and time, or same content) from the
  catalogue alone, without loading Chroma or the model: `state`;
- a transcript that grew adds only its new exchanges;
- an exchange that changed (a reply still being written when the hook ran) replaces its drawer:
  the session's drawers are always exactly the exchanges of its current transcript, and a
  drawer no longer in it goes unless another recorded file holds it;
- two runs at once for one session take turns on a per-session lock file; the second finds the
  work done. Every palace write holds the palace's cross-process lock (the drawer writer's).

The hook's outcome goes to `hooks/hook.log` beside the palace's catalogue (one line per run,
kept under LOG_MAX_BYTES with one older copy), never to the client.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from filelock import FileLock, Timeout

from mempalace_cli.common.errors import InvalidInputError, NotFoundError, from_os_error
from mempalace_cli.common.lazy import lazy
from mempalace_cli.common.naming import normalize_name
from mempalace_cli.miners.paths import source_key, storable
from mempalace_cli.miners.secrets import (
    credential_reason,
    policy_key,
    redact_exchange,
    remember_policy,
    secret_name_reason,
)
from mempalace_cli.service.core import PalaceCore, Part
from mempalace_cli.service.names import name_to_file
from mempalace_cli.service.results import SplitFile, SplitResult, TranscriptResult
from mempalace_cli.storage.catalog import DrawerRow, FileRecord
from mempalace_cli.storage.consistency import now_iso

if TYPE_CHECKING:
    from mempalace_cli.service.writer import DrawerWriter

# The chat parsers and the conversation miner (~100 ms with pathspec) load when a transcript is
# read, not for the hook's quick check that it is unchanged (`Sessions.state`).
chats = lazy("mempalace_cli.miners.convos")
concat = lazy("mempalace_cli.miners.convos.concat")
miner_files = lazy("mempalace_cli.miners.files")
convo_mining = lazy("mempalace_cli.service.convos")

CLAUDE_CODE = "claude-code"
CODEX = "codex"
HARNESSES = (CLAUDE_CODE, CODEX)
MODE = "convos"  # recorded like a chat export mined with --mode convos
# The events that file the transcript, by their normalized names (`--hook` values too).
STOP, PRECOMPACT, SESSION_END, SESSION_START, TURN_COMPLETE = (
    "stop",
    "precompact",
    "session-end",
    "session-start",
    "turn-complete",
)
FILING_EVENTS = (STOP, PRECOMPACT, SESSION_END, SESSION_START, TURN_COMPLETE)
_EVENT_NAMES = {
    "stop": STOP,
    "precompact": PRECOMPACT,
    "pre-compact": PRECOMPACT,
    "sessionend": SESSION_END,
    "session-end": SESSION_END,
    "sessionstart": SESSION_START,
    "session-start": SESSION_START,
    "agent-turn-complete": TURN_COMPLETE,
    "turn-complete": TURN_COMPLETE,
}
MAX_INPUT_CHARS = 8_000_000  # a Stop payload carries the last reply; anything bigger is wrong
HOOK_DIR = "hooks"
HOOK_LOG = "hook.log"
LOG_MAX_BYTES = 1_000_000
SESSION_LOCK_TIMEOUT = 600.0  # a detached run waits this long for another run of its session
FILE_GROUP = 256  # drawers embedded and written per palace-lock hold
EMBED_BATCH = 8  # exchange drawers are long: small model batches keep memory low


@dataclass(frozen=True)
class HookEvent:
    """What a client's hook said, whichever client and hook form it came from."""

    harness: str  # claude-code | codex
    event: str  # normalized: stop, precompact, session-end, session-start, turn-complete...
    session_id: str = ""
    transcript: str | None = None  # as the client gave it
    cwd: str | None = None
    detail: str = ""  # trigger / reason / source, when the client says

    @property
    def files(self) -> bool:
        return self.event in FILING_EVENTS


def _event_name(value: Any) -> str:
    return _EVENT_NAMES.get(str(value or "").strip().lower().replace("_", "-"), "")


def parse_hook_input(raw: str, harness: str | None = None, hook: str | None = None) -> HookEvent:
    """The event in `raw` (the client's JSON). `harness` and `hook` are the `--harness` and
    `--hook` of the hook's command line, used when the JSON does not say (the JSON's own event
    name wins). Raises InvalidInputError, naming what is wrong, for anything else."""
    if harness is not None and harness not in HARNESSES:
        raise InvalidInputError(
            f"Unknown --harness {harness!r}.",
            hint=f"Use one of: {', '.join(HARNESSES)}.",
        )
    if len(raw) > MAX_INPUT_CHARS:
        raise InvalidInputError(
            f"The hook's input is {len(raw):,} characters, more than any client sends.",
            hint="Check what the hook's command line pipes into mempalace hook run.",
        )
    text = raw.strip().lstrip("\ufeff")
    if not text:
        raise InvalidInputError(
            "The hook's input was empty: no JSON on standard input or as an argument.",
            hint="Claude Code and Codex send the event as JSON; run the hook from the client, "
            "or pipe the JSON in: echo '{...}' | mempalace hook run",
        )
    try:
        data = json.loads(text)
    except ValueError as exc:
        shown = " ".join(text[:120].split())
        raise InvalidInputError(
            f"The hook's input is not JSON ({exc.msg} at line {exc.lineno} column "
            f"{exc.colno}): {shown!r}.",
            hint="Claude Code and Codex send one JSON object; check the hook's command line.",
        ) from None
    if not isinstance(data, dict):
        raise InvalidInputError(
            f"The hook's input is a JSON {type(data).__name__}, not an object.",
            hint="Claude Code and Codex send one JSON object.",
        )
    if data.get("type") == "agent-turn-complete" or "thread-id" in data:
        # Codex's notify program: kebab-case keys, no transcript path.
        return HookEvent(
            CODEX,
            TURN_COMPLETE,
            session_id=_text(data.get("thread-id")),
            cwd=_text(data.get("cwd")) or None,
        )
    named = data.get("hook_event_name")
    if isinstance(named, str) and named.strip():  # the client's own word wins over --hook
        event = _event_name(named) or named.strip()
    else:
        event = _event_name(hook) or str(hook or "").strip() or "unknown"
    if harness is None:
        harness = CODEX if "turn_id" in data or "model" in data else CLAUDE_CODE
    transcript = data.get("transcript_path")
    detail = next(
        (_text(data[k]) for k in ("trigger", "reason", "source") if isinstance(data.get(k), str)),
        "",
    )
    return HookEvent(
        harness,
        event,
        session_id=_text(data.get("session_id")),
        transcript=transcript if isinstance(transcript, str) and transcript.strip() else None,
        cwd=_text(data.get("cwd")) or None,
        detail=detail,
    )


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def codex_home() -> Path:
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex").expanduser()


def find_codex_rollout(thread_id: str, home: Path | None = None) -> Path | None:
    """The newest rollout file of Codex session `thread_id` under `home`/sessions."""
    if not thread_id or "/" in thread_id or "\\" in thread_id or "*" in thread_id:
        return None
    sessions = (home or codex_home()) / "sessions"
    try:
        found = list(sessions.glob(f"*/*/*/rollout-*{thread_id}.jsonl"))
        found += list(sessions.glob(f"rollout-*{thread_id}.jsonl"))
    except OSError:
        return None
    files = [p for p in found if p.is_file()]
    return max(files, key=lambda p: p.stat().st_mtime) if files else None


@dataclass
class _Filing:
    """One transcript's filing: what is read and what is written."""

    path: Path
    src: str
    root: str
    wing: str
    agent: str
    size: int
    mtime: float
    digest: str = ""
    fmt: str = ""
    ids: list[str] = field(default_factory=list)
    new_rows: list[DrawerRow] = field(default_factory=list)
    title: str = ""
    secrets: int = 0
    problems: list[str] = field(default_factory=list)


class _SecretsNote:
    """The report `redact_exchange` notes the redactions in."""

    keep_secrets = False

    def __init__(self) -> None:
        self.secrets: dict[str, list[dict[str, Any]]] = {}

    def count(self) -> int:
        return sum(len(found) for found in self.secrets.values())


class Sessions(Part):
    """Session transcripts: the hook's filing, its log, and `split`. Drawers are filed and
    removed through the `DrawerWriter` it is given."""

    def __init__(self, core: PalaceCore, writer: DrawerWriter) -> None:
        super().__init__(core)
        self.writer = writer

    # -- where the hook keeps its files ------------------------------------------------------
    @property
    def hook_dir(self) -> Path:
        return self.index_dir / HOOK_DIR

    @property
    def log_path(self) -> Path:
        return self.hook_dir / HOOK_LOG

    def log(self, message: str) -> Path:
        """Append one line to the hook log (a copy of the old one is kept past
        LOG_MAX_BYTES). Raises OSError when the palace folder can't be written."""
        path = self.log_path
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            if path.stat().st_size > LOG_MAX_BYTES:
                os.replace(path, path.with_name(HOOK_LOG + ".1"))
        except FileNotFoundError:
            pass
        stamp = datetime.now(UTC).astimezone().isoformat(timespec="seconds")
        line = " ".join(storable(message).split())
        with path.open("a", encoding="utf-8") as fh:
            fh.write(f"{stamp} {line}\n")
        return path

    # -- which file, and is there anything new ------------------------------------------------
    def transcript_of(self, event: HookEvent) -> Path | None:
        """The transcript file the event is about, or None when the client gave none that
        exists (a session that has not written one yet)."""
        if event.transcript:
            path = Path(event.transcript).expanduser()
            return path if path.is_file() else None
        if event.harness == CODEX and event.session_id:
            return find_codex_rollout(event.session_id)
        return None

    def state(self, transcript: Path) -> str:
        """ "unchanged" when the mining manifest holds this transcript at its current size and
        time, else "new" or "changed". Reads the catalogue only (no Chroma, no model)."""
        st = transcript.stat()
        catalog = self.catalog
        if not catalog.exists:
            return "new"
        rec = catalog.get_file(source_key(transcript))
        if rec is None:
            return "new"
        if rec.ingest_mode == MODE and (rec.size, rec.mtime) == (st.st_size, st.st_mtime):
            return "unchanged"
        return "changed"

    def default_wing(self, transcript: Path, cwd: str | None) -> str:
        """The wing a session is filed in when none is given: the one it was filed in before,
        else its project's folder name (the client's working folder), else the transcript's
        folder name."""
        catalog = self.catalog
        if catalog.exists:
            rec = catalog.get_file(source_key(transcript))
            if rec is not None:
                return rec.wing
        if cwd and Path(cwd).name:
            return normalize_name(Path(cwd).name)
        return normalize_name(transcript.parent.name or "sessions")

    # -- filing ------------------------------------------------------------------------------
    def file_transcript(
        self,
        transcript: str | Path,
        session_id: str | None = None,
        wing: str | None = None,
        agent: str | None = None,
        cwd: str | None = None,
        lock_timeout: float = SESSION_LOCK_TIMEOUT,
    ) -> TranscriptResult:
        """File one session transcript (a Claude Code or Codex session file, or any chat
        export `mine --mode convos` reads) into the palace as a conversation, once. Returns
        {status: filed|unchanged|skipped, transcript, session_id, wing, format, title,
        drawers: {added, removed, total}, secrets_redacted, elapsed_seconds[, reason]}."""
        started = time.perf_counter()
        path = Path(transcript).expanduser()
        if not path.exists():
            raise NotFoundError(
                f"The transcript {path} does not exist.",
                hint="Pass the session file the client wrote (its transcript_path).",
            )
        if not path.is_file():
            raise InvalidInputError(f"{path} is not a file.", hint="Pass one session file.")
        path = path.parent.resolve() / path.name
        src = source_key(path)
        key = session_id or src
        base = {"transcript": src, "session_id": session_id or ""}
        locks = self.hook_dir / "locks"
        try:
            locks.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise from_os_error(exc, locks, "create the hook's lock folder") from exc
        name = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:24]
        lock = FileLock(str(locks / f"{name}.lock"), thread_local=False)
        try:
            lock.acquire(timeout=lock_timeout)
        except Timeout:
            return {
                **base,
                "status": "skipped",
                "reason": f"another run has been filing this session for over {lock_timeout:g} s",
                "elapsed_seconds": round(time.perf_counter() - started, 3),
            }
        try:
            chosen = name_to_file(wing, "wing") if wing else self.default_wing(path, cwd)
            result = self._file(path, src, chosen, agent or "mempalace-cli")
        finally:
            lock.release()
        return {**base, **result, "elapsed_seconds": round(time.perf_counter() - started, 3)}

    def _file(self, path: Path, src: str, wing: str, agent: str) -> dict[str, Any]:
        st = path.stat()
        out: dict[str, Any] = {"wing": wing, "format": "", "title": "", "secrets_redacted": 0}
        drawers = {"added": 0, "removed": 0, "total": 0}
        why = credential_reason(path) or secret_name_reason(path.name)
        if why:
            return {**out, "status": "skipped", "reason": why, "drawers": drawers}
        rec = self.catalog.get_file(src) if self.catalog.exists else None
        same_place = rec is not None and rec.wing == wing and rec.ingest_mode == MODE
        if same_place and (rec.size, rec.mtime) == (st.st_size, st.st_mtime):
            drawers["total"] = len(rec.drawer_ids)
            return {**out, "status": "unchanged", "drawers": drawers}
        found = chats.detect(path)
        if found.format is None or found.format == chats.SLACK_INDEX:
            reason = found.reason or "a Slack workspace index, not messages"
            return {**out, "status": "skipped", "reason": reason, "drawers": drawers}
        digest = miner_files.sha256_file(path)
        out["format"] = found.format
        if same_place and rec.content_hash == digest:
            with self.lock.hold(), self.catalog.transaction() as conn:
                self.catalog.touch_file(conn, src, st.st_size, st.st_mtime)
            drawers["total"] = len(rec.drawer_ids)
            return {**out, "status": "unchanged", "drawers": drawers}
        filing = _Filing(path, src, source_key(path.parent), wing, agent, st.st_size, st.st_mtime)
        filing.digest, filing.fmt = digest, found.format
        try:
            self._read(filing)
        except (chats.ParseError, UnicodeDecodeError) as exc:
            where = getattr(exc, "where", "")
            problem = getattr(exc, "problem", str(exc))
            reason = f"{where}: {problem}" if where else problem
            return {**out, "status": "skipped", "reason": reason, "drawers": drawers}
        before = set(rec.drawer_ids if rec else ()) | set(
            self.catalog.drawer_ids_for_source(src) if self.catalog.exists else ()
        )
        if not filing.new_rows and before <= set(filing.ids) and self.catalog.exists:
            # Lines that hold no exchange (tool output, a summary) were added: no drawer
            # changes, so only the manifest is updated, without loading Chroma or the model.
            with self.lock.hold(), self.catalog.transaction() as conn:
                self.catalog.put_file(conn, _record(filing), now_iso())
            added = removed = 0
        else:
            self.create()
            self.sync()
            added = self._write(filing)
            removed = self._retire(filing, rec)
        self._remember_policy(filing.root)
        drawers.update(added=added, removed=removed, total=len(filing.ids))
        out.update(title=filing.title, secrets_redacted=filing.secrets)
        result = {**out, "status": "filed", "drawers": drawers}
        if filing.problems:
            result["left_out"] = filing.problems
        return result

    def _read(self, filing: _Filing) -> None:
        """Pass one: every drawer of the transcript (secrets redacted before the ids are taken
        from the words), and which of them the palace does not hold yet."""
        note = _SecretsNote()

        def exchanges() -> Iterator[Any]:
            for item in chats.read_exchanges(filing.path, filing.fmt):
                if isinstance(item, chats.Problem):
                    filing.problems.append(f"{item.where}: {item.problem}")
                else:
                    yield redact_exchange(item, filing.path.name, note)

        rows: list[DrawerRow] = []
        legacy: dict[str, str] = {}
        context = convo_mining.RowContext(
            filing.wing,
            filing.agent,
            filing.src,
            filing.root,
            filing.digest,
            filing.mtime,
            date_name=filing.path.name,  # no time in the session: its file's
        )
        for index, drawer in enumerate(chats.plan_drawers(exchanges())):
            row = context.row(drawer, index)
            legacy[row.id] = context.legacy_id(drawer)
            rows.append(row)
            filing.title = filing.title or drawer.exchange.title
        catalog = self.catalog
        stored = catalog.present([*legacy, *legacy.values()]) if catalog.exists else set()
        old = catalog.get([i for i in legacy.values() if i in stored]) if stored else {}
        seen: set[str] = set()
        for row in rows:
            was = old.get(legacy[row.id])
            if (
                row.id not in stored
                and was is not None
                and (was.wing, was.room)
                == (
                    row.wing,
                    row.room,
                )
            ):
                row = replace(row, id=was.id)  # filed before ids covered wing and room
            if row.id in seen:
                continue  # the same exchange twice in one session: one drawer
            seen.add(row.id)
            filing.ids.append(row.id)
            if row.id not in stored:
                filing.new_rows.append(row)
        filing.secrets = note.count()

    def _write(self, filing: _Filing) -> int:
        """Pass two: embed and file the new drawers FILE_GROUP at a time. The manifest entry
        is written with the last group, so a crash never records the transcript as filed when
        it was not; the next run finds the drawers already there and adds the rest."""
        record = _record(filing)
        rows = filing.new_rows
        groups = [rows[i : i + FILE_GROUP] for i in range(0, len(rows), FILE_GROUP)] or [[]]
        for n, group in enumerate(groups):
            vectors = (
                self.embedder.embed([r.text for r in group], batch_size=EMBED_BATCH)
                if group
                else None
            )
            last = n == len(groups) - 1
            with self.lock.hold():
                self.writer.file(group, vectors, (), [record] if last else ())
        return len(rows)

    def _retire(self, filing: _Filing, old: FileRecord | None) -> int:
        """Remove the drawers this transcript held before and no longer does (an exchange
        whose reply was still being written), unless another recorded file holds them."""
        keep = set(filing.ids)
        before = set(old.drawer_ids if old else ()) | set(
            self.catalog.drawer_ids_for_source(filing.src)
        )
        stale = before - keep
        if not stale:
            return 0
        with self.lock.hold():
            claimed: set[str] = set()
            for (ids,) in self.catalog.conn.execute(
                "SELECT drawer_ids FROM files WHERE source_file <> ?", (filing.src,)
            ):
                claimed.update(i for i in json.loads(ids) if i in stale)
            gone = sorted(stale - claimed)
            if gone:
                self.writer.remove(gone)
        return len(gone)

    def _remember_policy(self, root: str) -> None:
        """A folder first filed by the hook is recorded as screened for secrets, as a mine of
        it without --keep-secrets would; a policy recorded by an earlier mine is kept."""
        catalog = self.catalog
        if catalog.get_meta(policy_key(root)) is None:
            with self.lock.hold():
                remember_policy(catalog, root, False)

    # -- split -------------------------------------------------------------------------------
    def split(
        self,
        path: str | Path,
        output_dir: str | Path | None = None,
        min_sessions: int = 2,
        dry_run: bool = False,
    ) -> SplitResult:
        """Split the files at `path` (a file, or every file of a folder) that hold several
        sessions into one file per session in `output_dir`. Without `output_dir`, or with
        `dry_run`, only says what it would write. Never changes, moves or removes an input,
        and never overwrites a file in `output_dir`."""
        if isinstance(min_sessions, bool) or not isinstance(min_sessions, int) or min_sessions < 2:
            raise InvalidInputError(
                f"--min-sessions must be 2 or more, not {min_sessions!r}.",
                hint="A file with one session has nothing to split.",
            )
        root = Path(path).expanduser()
        if not root.exists():
            raise NotFoundError(f"{root} does not exist.", hint="Pass a file or a folder.")
        out = Path(output_dir).expanduser() if output_dir is not None else None
        if out is not None and out.exists() and not out.is_dir():
            raise InvalidInputError(f"{out} is a file, not a folder.", hint="Pass a folder.")
        writing = out is not None and not dry_run
        inputs = [root] if root.is_file() else _split_candidates(root, out)
        files: list[SplitFile] = []
        written = 0
        for file in inputs:
            found = concat.find_sessions(file)
            entry: dict[str, Any] = {
                "file": source_key(file),
                "layout": found.layout,
                "sessions": len(found.sessions),
            }
            if found.layout is None:
                files.append({**entry, "action": "skip", "reason": found.reason})
                continue
            if len(found.sessions) < min_sessions:
                n = len(found.sessions)
                reason = f"{n} session{'s' if n != 1 else ''}: nothing to split"
                files.append({**entry, "action": "skip", "reason": reason})
                continue
            target_dir = out if out is not None else file.parent
            names = {s.index: target_dir / concat.output_name(found, s) for s in found.sessions}
            parts = [
                {
                    "index": s.index,
                    "session_id": s.session_id,
                    "date": s.date,
                    "title": s.title,
                    "lines": s.lines,
                    "output": source_key(names[s.index]),
                }
                for s in found.sessions
            ]
            taken = [p["output"] for p in parts if names[p["index"]].exists()]
            if taken:
                files.append(
                    {
                        **entry,
                        "action": "skip",
                        "reason": f"{len(taken)} of its output files exist already "
                        f"({taken[0]}...): nothing overwritten",
                        "parts": parts,
                    }
                )
                continue
            if writing:
                assert out is not None
                try:
                    out.mkdir(parents=True, exist_ok=True)
                    concat.write_sessions(found, names)
                except FileExistsError as exc:
                    reason = f"{exc.args[0]} exists: nothing overwritten"
                    files.append({**entry, "action": "skip", "reason": reason, "parts": parts})
                    continue
                except OSError as exc:
                    raise from_os_error(exc, out, "write the split files") from exc
                written += len(parts)
            files.append({**entry, "action": "split", "parts": parts})
        return {
            "path": source_key(root),
            "output_dir": source_key(out) if out is not None else None,
            "dry_run": not writing,
            "min_sessions": min_sessions,
            "files": files,
            "files_written": written,
        }


def _record(filing: _Filing) -> FileRecord:
    """The transcript's mining-manifest entry: every drawer it holds, and its size, time and
    hash, so the next run sees it unchanged."""
    return FileRecord(
        filing.src,
        filing.root,
        filing.wing,
        filing.digest,
        filing.size,
        filing.mtime,
        filing.ids,
        MODE,
    )


def _split_candidates(folder: Path, out: Path | None) -> list[Path]:
    """The files of `folder` (and its subfolders; hidden ones and the output folder left out)
    that may hold sessions: JSON Lines and text."""
    suffixes = {".jsonl", ".txt", ".md", ".log", ".text"}
    skip = out.resolve() if out is not None and out.exists() else None
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        here = Path(dirpath)
        if skip is not None and here.resolve() == skip:
            dirnames[:] = []
            continue
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if not name.startswith(".") and Path(name).suffix.lower() in suffixes:
                found.append(here / name)
    return found
