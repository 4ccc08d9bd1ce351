"""The coordination log agents hand work through: events (append, list, wait, ack), tasks,
artifacts and patches, durable in the palace and shared through a team palace's server.

- An event is immutable once appended and has a place in one append order (`seq`); its id is
  the cursor to read on from (`since_event_id`). An ack, a task's change of status, a patch
  are new events that point at earlier ones (`ack_of`, `correlation_id`), never edits.
- `event_wait` returns as soon as a matching event is appended by any process: the store is
  polled with a cheap check (every 20 ms in SQLite, 50 ms on a server; see
  storage/coordination_log.py), for at most MAX_WAIT_MS. Without a cursor it waits for events
  appended after the call began.
- A task is a `task.request` event in stream `project/<project>`, room `delegation`; its id is
  its `correlation_id`; its status is the last status any event of that correlation set.
- An artifact is text kept exactly, by an id derived from its content (`art_` + the start of
  its sha256), so storing the same text twice stores it once. Reading it returns the same
  text and checks it against its sha256.
- Secrets never enter the palace: every text an event, task or artifact stores passes the
  drawers' redaction (miners/secrets.py) and the result says how many values were replaced.
  For an artifact that means the stored text, not the sent one, is what every reader gets,
  exactly, with the stored text's sha256; only the CLI's `artifact put --keep-secrets` (the
  palace's owner at a shell) stores a text unscreened.

The log keeps its own store and takes the palace's write lock file itself (its own lock
object, never the drawers' one, which reopens drawer handles when taken), so it runs beside
the MCP server's read and write lanes: a long wait holds up no search, and an append never
waits for a mine. Nothing here imports chromadb for an embedded palace.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import Any, get_type_hints

from mempalace_cli.common.errors import (
    InvalidInputError,
    NoPalaceError,
    NotFoundError,
    PalaceCorruptError,
)
from mempalace_cli.miners.secrets import redact
from mempalace_cli.service import results
from mempalace_cli.service.core import PalaceCore, Part
from mempalace_cli.storage.coordination_log import (
    BROADCAST,
    ChromaLog,
    CoordinationLog,
    SqliteLog,
    now_stamp,
)
from mempalace_cli.storage.coordination_log import EventFilter as LogFilter
from mempalace_cli.storage.locking import PalaceLock

# -- limits (the MCP tool table and the CLI show the same ones) --------------------------------
MAX_NAME_CHARS = 500
MAX_BODY_CHARS = 100_000
MAX_ARTIFACT_BYTES = 4 * 1024 * 1024
MAX_METADATA_CHARS = 16_384  # as JSON
MAX_ARTIFACT_IDS = 50
DEFAULT_LIMIT = 50
MAX_LIMIT = 500
DEFAULT_WAIT_MS = 30_000
MAX_WAIT_MS = 60_000
PREVIEW_CHARS = 240
RESULT_BODY_CHARS = 1_000_000  # body text one list or wait answer carries; the rest pages on

# -- the conventions of the log ----------------------------------------------------------------
TASK_TYPE = "task.request"
TASK_STATUS_TYPE = "task.status"
ACK_TYPE = "event.ack"
PATCH_TYPE = "patch.ready"
TASK_ROOM = "delegation"
PATCH_ROOM = "patches"
PROJECT_STREAM = "project/"
STATUSES = ("open", "claimed", "ready", "applied", "blocked", "failed", "superseded", "done")
ARTIFACT_PREFIX = "art_"
TASK_PREFIX = "task_"
LOG_HINT = (
    "Nothing was handed over in this palace yet: append the first event with "
    "mempalace_event_append, or create a task with mempalace_task_create."
)
# Which file-type rules redaction applies to an artifact's text, by its kind.
_KIND_FILES = {"patch": "artifact.diff", "diff": "artifact.diff", "json": "artifact.json"}


# -- checking what callers send ----------------------------------------------------------------
def _check_text(value: str, label: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(
            f"{label} is not valid text: it holds a lone surrogate (a broken character).",
            hint="Send it as UTF-8 text.",
        ) from None


def _name(value: Any, label: str, required: bool = False) -> str | None:
    """A one-line name (stream, room, agent, type...), stripped; None when absent."""
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise InvalidInputError(
                f"{label} is {'missing' if value is None else 'empty'}.",
                hint=f"Give {label}: a short name, e.g. {_EXAMPLES.get(label, 'claude')}.",
            )
        return None
    if not isinstance(value, str):
        raise InvalidInputError(f"{label} must be text, not {type(value).__name__}.")
    text = value.strip()
    _check_text(text, label)
    if len(text) > MAX_NAME_CHARS:
        raise InvalidInputError(
            f"{label} is {len(text):,} characters; at most {MAX_NAME_CHARS} are accepted.",
            hint="Names route events: keep them short, and put text in body.",
        )
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise InvalidInputError(
            f"{label} {text[:60]!r} holds a line break or another control character.",
            hint="Names are one line of text; put longer text in body.",
        )
    return text


_EXAMPLES = {
    "type": "task.request",
    "stream": "project/myapp",
    "room": "delegation",
    "project": "myapp",
    "kind": "patch",
    "status": "claimed",
}


def _body(value: Any, label: str = "body") -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInputError(f"{label} must be text, not {type(value).__name__}.")
    _check_text(value, label)
    if len(value) > MAX_BODY_CHARS:
        raise InvalidInputError(
            f"{label} is {len(value):,} characters; at most {MAX_BODY_CHARS:,} are accepted.",
            hint="Store long text as an artifact (mempalace_artifact_put) and pass its id in "
            "artifact_ids.",
        )
    return value


def _metadata(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InvalidInputError(
            f"metadata must be an object of named values, not {type(value).__name__}."
        )
    try:
        size = len(json.dumps(value, ensure_ascii=False))
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"metadata can't be stored as JSON: {exc}.") from None
    if size > MAX_METADATA_CHARS:
        raise InvalidInputError(
            f"metadata is {size:,} characters as JSON; at most {MAX_METADATA_CHARS:,} are "
            "accepted.",
            hint="Keep metadata to small fields; store long content as an artifact.",
        )
    _check_text(json.dumps(value, ensure_ascii=False), "metadata")
    return value or None


def _limit(value: Any, default: int = DEFAULT_LIMIT) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LIMIT:
        raise InvalidInputError(f"limit must be 1 to {MAX_LIMIT}, not {value!r}.")
    return value


def _timeout_ms(value: Any) -> int:
    if value is None:
        return DEFAULT_WAIT_MS
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_WAIT_MS:
        raise InvalidInputError(
            f"timeout_ms must be 0 to {MAX_WAIT_MS} ({MAX_WAIT_MS // 1000} s), not {value!r}.",
            hint="To wait longer, call again with since_event_id set to the cursor the last "
            "wait returned: nothing appended in between is missed.",
        )
    return value


def parse_since(value: Any) -> int | None:
    """since_created_at as microseconds since the epoch: YYYY-MM-DD (from that day's start,
    UTC) or an ISO datetime (UTC unless it names an offset)."""
    text = _name(value, "since_created_at")
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        raise InvalidInputError(
            f"since_created_at {text!r} is not a date.",
            hint="Use YYYY-MM-DD or an ISO datetime such as 2026-07-02T03:24:43Z.",
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1_000_000)


def _redact(value: Any) -> tuple[Any, int]:
    """`value` (text, or JSON-like data holding text) with every secret value replaced by
    `[REDACTED:kind]`, and how many were replaced."""
    if isinstance(value, str):
        if not value:
            return value, 0
        found = redact(value)
        return found.text, found.count
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        total = 0
        for key, item in value.items():
            out[key], n = _redact(item)
            total += n
        return out, total
    if isinstance(value, list):
        items = [_redact(item) for item in value]
        return [v for v, _ in items], sum(n for _, n in items)
    return value, 0


_WRITER: list[str] = []


def writer_name() -> str:
    """The machine that appends (an event's `writer`): its host name."""
    if not _WRITER:
        _WRITER.append(socket.gethostname() or "unknown-host")
    return _WRITER[0]


def public_event(event: dict[str, Any], preview: bool = False) -> results.Event:
    """An event as results show it; with `preview`, a long body cut (body_truncated and
    body_length say so)."""
    out = {k: v for k, v in event.items() if k != "created_us"}
    body = out.get("body")
    if preview and isinstance(body, str) and len(body) > PREVIEW_CHARS:
        out.update(body=body[:PREVIEW_CHARS], body_truncated=True, body_length=len(body))
    return out


def _within_budget(events: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], bool]:
    """The events whose bodies fit one answer (always at least one), and whether any was
    left for the next page."""
    total = 0
    for i, event in enumerate(events):
        total += len(event.get("body") or "")
        if total > RESULT_BODY_CHARS and i > 0:
            return events[:i], True
    return events, False


# The log filter's fields that hold a name (stream, room, ..., status, ack_of).
_NAME_FIELDS = tuple(k for k, kind in get_type_hints(LogFilter).items() if kind == str | None)


@dataclass(frozen=True)
class EventFilter(LogFilter):
    """Which events `event_list` and `event_wait` answer with, as a caller asks: the log's
    filter (every field given must match; `to_agent` matches broadcasts, to_agent '*', too),
    with its time as text: `since_created_at` keeps the events created at or after it
    (YYYY-MM-DD, a UTC day, or an ISO datetime). The front ends build it from their arguments
    and options, which carry these names; the verbs check it (`checked`)."""

    since_created_at: str | None = None

    def checked(self) -> LogFilter:
        """The filter as the log reads it: each name stripped and checked (InvalidInputError
        naming a bad one), the time in microseconds since the epoch."""
        given = {f.name: getattr(self, f.name) for f in fields(LogFilter)}
        given.update({name: _name(given[name], name) for name in _NAME_FIELDS})
        if self.since_created_at is not None:
            given["since_us"] = parse_since(self.since_created_at)
        return LogFilter(**given)


class Coordination(Part):
    """The log's verbs over one palace. Safe to call from several threads at once: every
    call opens its own database connection (or uses the thread-safe server client), and
    writes take the palace's write lock (the lock file itself, see the module docstring)."""

    def __init__(self, core: PalaceCore) -> None:
        super().__init__(core)
        self._guard = threading.Lock()
        self._log: CoordinationLog | None = None
        self._lock: PalaceLock | None = None
        self._stopping = threading.Event()

    def stop(self) -> None:
        """End every wait of this palace object now (they return as timed out): the process
        is shutting down."""
        self._stopping.set()

    # -- plumbing -----------------------------------------------------------------------------
    @property
    def log(self) -> CoordinationLog:
        """The palace's log, as its backend keeps it (storage/backend.py)."""
        with self._guard:
            if self._log is None:
                self._log = self.backend.open_coordination_log()
            return self._log

    @property
    def lock(self) -> PalaceLock:
        with self._guard:
            if self._lock is None:
                self._lock = PalaceLock(self.index_dir, self.settings.lock_timeout)
            return self._lock

    @property
    def location(self) -> str:
        return self.log.location

    @property
    def on_server(self) -> bool:
        """The log is on the palace's Chroma server (asking imports nothing: the log connects
        on its first read or write)."""
        return isinstance(self.log, ChromaLog)

    def _readable(self) -> CoordinationLog:
        """The log, for reading: an embedded palace whose folder does not exist yet is
        reported (its log can't hold anything, and reading creates nothing)."""
        log = self.log
        if isinstance(log, SqliteLog) and not self.path.is_dir():
            raise NoPalaceError(str(self.path), hint=LOG_HINT)
        return log

    def _event(self, event_id: Any, label: str = "event_id") -> dict[str, Any]:
        wanted = _name(event_id, label, required=True)
        assert wanted is not None
        found = self._readable().get_event(wanted)
        if found is None:
            raise NotFoundError(
                f"No event {wanted!r} in this palace's coordination log ({label}).",
                hint="Use an id exactly as a result's event id field gives it "
                "(mempalace_event_list lists them).",
            )
        return found

    def _seq_of(self, event_id: Any, label: str) -> int | None:
        if event_id is None or (isinstance(event_id, str) and not event_id.strip()):
            return None
        return int(self._event(event_id, label)["seq"])

    # -- events -------------------------------------------------------------------------------
    def event_append(
        self,
        type: str,
        stream: str,
        room: str,
        from_agent: str,
        to_agent: str | None = None,
        topic: str | None = None,
        correlation_id: str | None = None,
        branch: str | None = None,
        base_commit: str | None = None,
        status: str | None = None,
        body: str | None = None,
        metadata: dict[str, Any] | None = None,
        artifact_ids: list[str] | None = None,
        ack_of: str | None = None,
    ) -> results.AppendResult:
        """Append one event; returns it with its id, seq and created_at."""
        new: dict[str, Any] = {
            "type": _name(type, "type", required=True),
            "stream": _name(stream, "stream", required=True),
            "room": _name(room, "room", required=True),
            "from_agent": _name(from_agent, "from_agent", required=True),
            "to_agent": _name(to_agent, "to_agent"),
            "topic": _name(topic, "topic"),
            "correlation_id": _name(correlation_id, "correlation_id"),
            "branch": _name(branch, "branch"),
            "base_commit": _name(base_commit, "base_commit"),
            "status": _name(status, "status"),
            "body": _body(body),
            "metadata": _metadata(metadata),
            "ack_of": ack_of,
        }
        ids = self._artifact_ids(artifact_ids)
        new, secrets = _redact(new)
        new["artifact_ids"] = ids
        with self.lock.hold():
            missing = sorted(set(ids) - self.log.artifacts_present(ids))
            if missing:
                raise NotFoundError(
                    f"No artifact {', '.join(map(repr, missing))} in this palace "
                    "(artifact_ids). Nothing was appended.",
                    hint="Store the content first with mempalace_artifact_put and pass the id "
                    "it returns.",
                )
            event = self.log.append(new, writer_name())
        return {"success": True, "event": public_event(event), "secrets_redacted": secrets}

    def _artifact_ids(self, value: Any) -> list[str]:
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InvalidInputError("artifact_ids must be a list of artifact ids.")
        ids = list(dict.fromkeys(v.strip() for v in value if v.strip()))
        if len(ids) > MAX_ARTIFACT_IDS:
            raise InvalidInputError(
                f"artifact_ids holds {len(ids)} ids; at most {MAX_ARTIFACT_IDS} per event."
            )
        for i in ids:
            _name(i, "artifact_ids")
        return ids

    def event_list(
        self,
        filters: EventFilter | None = None,
        since_event_id: str | None = None,
        before_event_id: str | None = None,
        limit: int | None = None,
        order: str | None = None,
        preview: bool = False,
    ) -> results.EventListResult:
        """Events matching every one of `filters` given, at most `limit`: oldest first after
        a cursor (since_event_id), newest first otherwise (or as `order` says)."""
        flt = (filters or EventFilter()).checked()
        limit = _limit(limit)
        if order is not None and order not in ("asc", "desc"):
            raise InvalidInputError(f"order must be asc or desc, not {order!r}.")
        after = self._seq_of(since_event_id, "since_event_id") or 0
        before = self._seq_of(before_event_id, "before_event_id")
        order = order or ("asc" if since_event_id else "desc")
        log = self._readable()
        _, head_id = log.head()  # read first: the answer covers everything up to it
        found, more = log.events(flt, after, before, limit, order == "desc")
        found, cut = _within_budget(found)
        # Where to wait or read on from: the last event of an ascending page that has more,
        # else the newest event in the log when the list was read.
        cursor = found[-1]["id"] if order == "asc" and (more or cut) else head_id
        result: dict[str, Any] = {
            "events": [public_event(e, preview) for e in found],
            "count": len(found),
            "order": order,
            "has_more": more or cut,
            "cursor": cursor,
        }
        if result["has_more"]:
            page = "since_event_id" if order == "asc" else "before_event_id"
            last = found[-1]["id"]
            result["hint"] = (
                f"More events match: call again with {page} {last!r} for the next page."
            )
        elif not found:
            result["hint"] = self._empty_hint(flt, since_event_id)
        return result

    def _empty_hint(self, flt: LogFilter, cursor: Any) -> str:
        if self.log.head()[0] == 0:
            return LOG_HINT
        if cursor:
            return "Nothing matches after that event yet; mempalace_event_wait waits for one."
        return "No event matches these filters; drop one to see more."

    def event_wait(
        self,
        filters: EventFilter | None = None,
        since_event_id: str | None = None,
        timeout_ms: int | None = None,
        limit: int | None = None,
    ) -> results.EventWaitResult:
        """Return as soon as events matching every one of `filters` exist after the cursor,
        oldest first, or after `timeout_ms` with timed_out true (not an error). The cursor is
        since_event_id; without it, events created since `filters.since_created_at`, or else
        events appended after this call began. The result's cursor is where the next wait
        should start, so that nothing appended in between is missed."""
        started = time.monotonic()
        flt = (filters or EventFilter()).checked()
        limit = _limit(limit)
        deadline = started + _timeout_ms(timeout_ms) / 1000
        log = self._readable()
        cursor_seq = self._seq_of(since_event_id, "since_event_id")
        head_seq, head_id = log.head()
        if cursor_seq is None:
            cursor_seq = 0 if flt.since_us is not None else head_seq
            cursor_id = None if flt.since_us is not None else head_id
        else:
            cursor_id = since_event_id.strip() if isinstance(since_event_id, str) else None
        with log.watch() as watch:
            first = True
            while True:
                if first or watch.changed():
                    first = False
                    head_seq, head_id = log.head()  # everything up to it is readable now
                    found, more = log.events(flt, cursor_seq, None, limit)
                    if found:
                        found, cut = _within_budget(found)
                        return {
                            "timed_out": False,
                            "events": [public_event(e) for e in found],
                            "count": len(found),
                            "has_more": more or cut,
                            "cursor": found[-1]["id"],
                            "waited_ms": round((time.monotonic() - started) * 1000),
                        }
                    if head_seq > cursor_seq:
                        cursor_seq, cursor_id = head_seq, head_id
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._stopping.is_set():
                    return {
                        "timed_out": True,
                        "events": [],
                        "count": 0,
                        "has_more": False,
                        "cursor": cursor_id,
                        "waited_ms": round((time.monotonic() - started) * 1000),
                        "hint": "Nothing matching was appended. Wait again with since_event_id "
                        "set to cursor to miss nothing in between.",
                    }
                self._stopping.wait(min(log.poll_seconds, remaining))

    def event_ack(
        self,
        event_id: str,
        from_agent: str,
        status: str | None = None,
        body: str | None = None,
        topic: str | None = None,
    ) -> results.EventAckResult:
        """Acknowledge an event: a new `event.ack` event to its writer, in its stream and room,
        with its correlation id (or its id) and `ack_of` naming it. The event itself never
        changes. Acknowledging again with the same status and body returns the first ack."""
        target = self._event(event_id)
        agent = _name(from_agent, "from_agent", required=True)
        status = _name(status, "status")
        cleaned, _ = _redact({"status": status, "body": _body(body)})
        with self.lock.hold():
            earlier, _ = self.log.events(
                LogFilter(ack_of=target["id"], from_agent=agent, type=ACK_TYPE), limit=None
            )
            for ack in earlier:
                if (ack["status"], ack["body"]) == (cleaned["status"], cleaned["body"]):
                    return {
                        "success": True,
                        "event": public_event(ack),
                        "acked_event_id": target["id"],
                        "already_acked": True,
                        "secrets_redacted": 0,
                    }
            result = self.event_append(
                ACK_TYPE,
                target["stream"],
                target["room"],
                agent or "",
                to_agent=target["from_agent"],
                topic=topic or target["topic"],
                correlation_id=target["correlation_id"] or target["id"],
                status=status,
                body=body,
                ack_of=target["id"],
            )
        return {**result, "acked_event_id": target["id"], "already_acked": False}

    # -- tasks --------------------------------------------------------------------------------
    def task_create(
        self,
        project: str,
        from_agent: str,
        to_agent: str,
        goal: str,
        done: str,
        branch: str | None = None,
        base_commit: str | None = None,
    ) -> results.TaskCreateResult:
        """Hand a task to an agent: a `task.request` event (status open) in stream
        project/<project>, room delegation, whose correlation id is the new task id."""
        name = _name(project, "project", required=True)
        sender = _name(from_agent, "from_agent", required=True)
        receiver = _name(to_agent, "to_agent", required=True)
        goal_text = _body(goal, "goal")
        if not goal_text or not goal_text.strip():
            raise InvalidInputError(
                "goal is empty.", hint="Say what the task is for, in a sentence or two."
            )
        done_text = _body(done, "done")
        if not done_text or not done_text.strip():
            raise InvalidInputError(
                "done is empty.",
                hint="Say when the task counts as done, e.g. 'the tests pass and a patch is "
                "submitted'.",
            )
        task_id = (
            TASK_PREFIX
            + hashlib.sha256(
                f"{name}\x00{sender}\x00{receiver}\x00{time.time_ns()}\x00{goal_text}".encode()
            ).hexdigest()[:12]
        )
        lines = [f"Task {task_id} for {receiver} from {sender} (project {name})", "", "Goal:"]
        lines += [goal_text.strip(), "", "Done when:", done_text.strip()]
        if branch or base_commit:
            lines += ["", f"Branch: {branch or '-'} (base commit {base_commit or '-'})"]
        result = self.event_append(
            TASK_TYPE,
            PROJECT_STREAM + (name or ""),
            TASK_ROOM,
            sender or "",
            to_agent=receiver,
            correlation_id=task_id,
            branch=branch,
            base_commit=base_commit,
            status="open",
            body="\n".join(lines),
            metadata={"project": name, "goal": goal_text, "done": done_text},
        )
        return {
            "success": True,
            "task_id": task_id,
            "event": result["event"],
            "secrets_redacted": result["secrets_redacted"],
            "wake_up": f"{receiver}: {sender} handed you task {task_id} (project {name}) in "
            f"the palace. Read it with mempalace_event_list correlation_id={task_id}; claim it "
            f"with mempalace_event_ack on event {result['event']['id']} status=claimed.",
        }

    def _task_request(self, task_id: Any) -> dict[str, Any]:
        wanted = _name(task_id, "task_id", required=True)
        found, _ = self._readable().events(
            LogFilter(type=TASK_TYPE, correlation_id=wanted), limit=1
        )
        if not found:
            raise NotFoundError(
                f"No task {wanted!r} in this palace's coordination log.",
                hint="Use a task id as mempalace_task_create returned it (`mempalace task "
                "list` shows them).",
            )
        return found[0]

    def task_list(
        self,
        project: str | None = None,
        to_agent: str | None = None,
        from_agent: str | None = None,
        status: str | None = None,
        limit: int | None = None,
    ) -> results.TaskListResult:
        """Tasks, newest first, each with its current status (the last one any event of the
        task set) and who set it."""
        limit = _limit(limit)
        name = _name(project, "project")
        flt = LogFilter(
            type=TASK_TYPE,
            stream=PROJECT_STREAM + name if name else None,
            to_agent=_name(to_agent, "to_agent"),
            from_agent=_name(from_agent, "from_agent"),
        )
        wanted = _name(status, "status")
        log = self._readable()
        requests, _ = log.events(flt, limit=MAX_LIMIT if wanted else limit, newest_first=True)
        # A task is a request with a task id; one appended by hand without it is an event only.
        requests = [r for r in requests if r["correlation_id"]]
        tasks = self._with_status(log, requests)
        if wanted:
            tasks = [t for t in tasks if t["status"] == wanted]
        return {"tasks": tasks[:limit], "count": len(tasks[:limit])}

    def _with_status(
        self, log: CoordinationLog, requests: list[dict[str, Any]]
    ) -> list[results.Task]:
        ids = tuple(r["correlation_id"] for r in requests if r["correlation_id"])
        updates, _ = log.events(LogFilter(correlation_ids=ids, with_status=True), limit=None)
        last: dict[str, dict[str, Any]] = {}
        for event in updates:  # in append order: the last one wins
            last[event["correlation_id"]] = event
        return [self._task_view(r, last.get(r["correlation_id"], r)) for r in requests]

    def _task_view(self, request: dict[str, Any], latest: dict[str, Any]) -> results.Task:
        meta = request.get("metadata") or {}
        stream = request["stream"]
        return {
            "task_id": request["correlation_id"],
            "project": meta.get("project") or stream.removeprefix(PROJECT_STREAM),
            "from_agent": request["from_agent"],
            "to_agent": request["to_agent"],
            "goal": meta.get("goal"),
            "done": meta.get("done"),
            "branch": request["branch"],
            "base_commit": request["base_commit"],
            "status": latest["status"],
            "status_by": latest["from_agent"],
            "updated_at": latest["created_at"],
            "created_at": request["created_at"],
            "event_id": request["id"],
        }

    def task_show(self, task_id: str) -> results.TaskShowResult:
        """One task with every event of it (its correlation id), oldest first."""
        request = self._task_request(task_id)
        log = self._readable()
        thread, _ = log.events(LogFilter(correlation_id=request["correlation_id"]), limit=MAX_LIMIT)
        task = self._with_status(log, [request])[0]
        return {"task": task, "events": [public_event(e, preview=True) for e in thread]}

    def task_update(
        self, task_id: str, status: str, from_agent: str, body: str | None = None
    ) -> results.TaskUpdateResult:
        """Set a task's status: a `task.status` event of the task, to the other party."""
        request = self._task_request(task_id)
        wanted = _name(status, "status", required=True)
        if wanted not in STATUSES:
            raise InvalidInputError(
                f"status {wanted!r} is not a task status.",
                hint=f"Use one of: {', '.join(STATUSES)}.",
            )
        agent = _name(from_agent, "from_agent", required=True)
        other = request["from_agent"] if agent == request["to_agent"] else request["to_agent"]
        result = self.event_append(
            TASK_STATUS_TYPE,
            request["stream"],
            request["room"],
            agent or "",
            to_agent=other or BROADCAST,
            topic=request["topic"],
            correlation_id=request["correlation_id"],
            status=wanted,
            body=body,
        )
        return {
            "success": True,
            "task_id": request["correlation_id"],
            "status": wanted,
            "event": result["event"],
            "secrets_redacted": result["secrets_redacted"],
        }

    # -- artifacts and patches ----------------------------------------------------------------
    def artifact_put(
        self,
        kind: str,
        content: str,
        created_by: str,
        metadata: dict[str, Any] | None = None,
        keep_secrets: bool = False,
    ) -> results.ArtifactPutResult:
        """Store `content` exactly (after redaction unless `keep_secrets`), by an id derived
        from it; storing the same text again returns the stored artifact (created false)."""
        kind_name = _name(kind, "kind", required=True)
        author = _name(created_by, "created_by", required=True)
        if not isinstance(content, str):
            raise InvalidInputError(f"content must be text, not {type(content).__name__}.")
        _check_text(content, "content")
        meta = _metadata(metadata)
        size = len(content.encode("utf-8"))
        if size > MAX_ARTIFACT_BYTES:
            raise InvalidInputError(
                f"The artifact is {size:,} bytes; at most {MAX_ARTIFACT_BYTES:,} "
                f"({MAX_ARTIFACT_BYTES // (1024 * 1024)} MiB) are accepted. Nothing was stored.",
                hint="Split it into several artifacts, or hand over a path or a commit instead.",
            )
        secrets = 0
        if not keep_secrets:
            filename = _KIND_FILES.get((kind_name or "").lower(), "")
            found = redact(content, filename)
            content, secrets = found.text, found.count
            (kind_name, author, meta), more = _redact([kind_name, author, meta])
            secrets += more
        data = content.encode("utf-8")
        digest = hashlib.sha256(data).hexdigest()
        record = {
            "id": ARTIFACT_PREFIX + digest[:32],
            "kind": kind_name,
            "sha256": digest,
            "size_bytes": len(data),
            "content": data,
            "created_by": author,
            "created_at": now_stamp()[0],
            "metadata": meta,
        }
        with self.lock.hold():
            stored, created = self.log.put_artifact(record)
        result: dict[str, Any] = {
            "success": True,
            "artifact": _artifact_view(stored),
            "created": created,
            "secrets_redacted": secrets,
        }
        if secrets:
            result["note"] = (
                f"{secrets} secret value{'s' if secrets != 1 else ''} replaced by "
                "[REDACTED:kind]: the stored text differs from what was sent, and sha256 is "
                "the stored text's."
            )
        return result

    def artifact_get(self, artifact_id: str) -> results.ArtifactGetResult:
        """The artifact with its exact text, checked against its sha256."""
        wanted = _name(artifact_id, "artifact_id", required=True)
        assert wanted is not None
        stored = self._readable().get_artifact(wanted)
        if stored is None:
            raise NotFoundError(
                f"No artifact {wanted!r} in this palace's coordination log.",
                hint="Use the id exactly as mempalace_artifact_put returned it, or as an "
                "event lists it.",
            )
        data = stored["content"]
        if hashlib.sha256(data).hexdigest() != stored["sha256"]:
            raise PalaceCorruptError(
                f"The artifact {wanted!r} no longer matches its sha256: its stored text was "
                f"changed or damaged ({self.location}).",
                hint="Ask its author to store it again.",
            )
        view = _artifact_view(stored)
        view["content"] = data.decode("utf-8")
        return {"artifact": view}

    def artifact_bytes(self, artifact_id: str) -> tuple[bytes, dict[str, Any]]:
        """The artifact's exact bytes (UTF-8) and its record, for writing to a file."""
        found = self.artifact_get(artifact_id)["artifact"]
        return found["content"].encode("utf-8"), found

    def patch_submit(
        self,
        content: str,
        from_agent: str,
        stream: str,
        room: str | None = None,
        topic: str | None = None,
        to_agent: str | None = None,
        correlation_id: str | None = None,
        branch: str | None = None,
        base_commit: str | None = None,
        body: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> results.PatchSubmitResult:
        """Store a patch as an artifact (kind patch) and append its `patch.ready` event
        (status ready, room patches unless given) pointing at it."""
        # Everything checked before the artifact is stored: a refused event leaves nothing.
        _name(from_agent, "from_agent", required=True)
        _name(stream, "stream", required=True)
        for value, label in ((room, "room"), (topic, "topic"), (to_agent, "to_agent")):
            _name(value, label)
        _name(correlation_id, "correlation_id")
        _body(body)
        extra = {
            "branch": _name(branch, "branch"),
            "base_commit": _name(base_commit, "base_commit"),
        }
        meta = {**(_metadata(metadata) or {}), **{k: v for k, v in extra.items() if v}}
        with self.lock.hold():
            stored = self.artifact_put("patch", content, from_agent, meta or None)
            event = self.event_append(
                PATCH_TYPE,
                stream,
                room or PATCH_ROOM,
                from_agent,
                to_agent=to_agent,
                topic=topic,
                correlation_id=correlation_id,
                branch=branch,
                base_commit=base_commit,
                status="ready",
                body=body,
                metadata=metadata,
                artifact_ids=[stored["artifact"]["id"]],
            )
        return {
            "success": True,
            "artifact": stored["artifact"],
            "event": event["event"],
            "secrets_redacted": stored["secrets_redacted"] + event["secrets_redacted"],
        }


def _artifact_view(stored: dict[str, Any]) -> results.Artifact:
    return {
        k: stored[k]
        for k in ("id", "kind", "sha256", "size_bytes", "created_by", "created_at", "metadata")
    }
