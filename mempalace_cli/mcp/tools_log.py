"""The coordination log's tools: events (append, list, wait, ack), tasks, artifacts and patches,
through which agents hand work to each other (service/coordination.py).

Every one runs in its own lane (`ToolSpec.own_lane`): the log keeps its own store and takes
the palace's write lock itself, so a minute-long `mempalace_event_wait` holds up no search and
an append never waits behind a mine. The write tools are refused by `serve-mcp --read-only`.
"""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, Any

from mempalace_cli.mcp.spec import Arg, ToolSpec, schema_of, string_arg
from mempalace_cli.service import results
from mempalace_cli.service.coordination import (
    DEFAULT_LIMIT,
    DEFAULT_WAIT_MS,
    MAX_ARTIFACT_BYTES,
    MAX_ARTIFACT_IDS,
    MAX_BODY_CHARS,
    MAX_LIMIT,
    MAX_WAIT_MS,
    PREVIEW_CHARS,
    STATUSES,
    EventFilter,
)

if TYPE_CHECKING:
    from mempalace_cli.service import Palace

# -- arguments ---------------------------------------------------------------------------------
STATUS_WORDS = ", ".join(STATUSES)
FROM_AGENT = "Your agent name, as the others address you (e.g. 'mac-claude')."
TO_AGENT = "The agent it is for, or '*' for every agent."
STREAM = "The channel: 'project/NAME' for a project's work, or a shared channel name."
ROOM = "The sub-channel: e.g. delegation, patches, reviews, status."
TOPIC = "A track within the stream (e.g. 'auth-v2'), to keep related work together."
CORRELATION = "The id tying a request to its replies and acks (a task id); carry it through."
BRANCH = "The git branch the work is on, if any."
BASE_COMMIT = "The git commit the work started from, if any."
BODY = (
    f"The message, verbatim (at most {MAX_BODY_CHARS:,} characters; put longer content in an "
    "artifact and pass its id in artifact_ids)."
)
METADATA = "Small structured fields kept with it (a JSON object, at most 16 KiB)."
BODY_HINT = "Store the text with mempalace_artifact_put and pass its id in artifact_ids."


def _filters(to_what: str) -> tuple[Arg, ...]:
    return (
        string_arg("stream", f"Only {to_what} in this stream."),
        string_arg("room", f"Only {to_what} in this room."),
        string_arg("topic", f"Only {to_what} with this topic."),
        string_arg("type", f"Only {to_what} of this type (e.g. task.request, patch.ready)."),
        string_arg(
            "to_agent", f"Only {to_what} for this agent; broadcasts (to_agent '*') match too."
        ),
        string_arg("from_agent", f"Only {to_what} from this agent."),
        string_arg(
            "writer", f"Only {to_what} appended on this machine (an event's writer: host name)."
        ),
        string_arg("correlation_id", f"Only {to_what} with this correlation id (a task id)."),
        string_arg("status", f"Only {to_what} that set this status."),
    )


def _limit(what: str) -> Arg:
    return Arg(
        "limit",
        "integer",
        f"At most this many {what} (1-{MAX_LIMIT}).",
        default=DEFAULT_LIMIT,
        minimum=1,
        maximum=MAX_LIMIT,
    )


SINCE_EVENT = (
    "The cursor: only events appended after this event id (a result's cursor, or an event's "
    "id). Resume with it to miss nothing."
)
SINCE_CREATED = (
    "Only events created at or after this time: YYYY-MM-DD (UTC day) or an ISO datetime. A "
    "time window, not a cursor: resume with since_event_id."
)


# -- the calls ---------------------------------------------------------------------------------
def _append(p: Palace, a: dict[str, Any]) -> results.AppendResult:
    return p.coordination.event_append(
        a["type"],
        a["stream"],
        a["room"],
        a["from_agent"],
        to_agent=a["to_agent"],
        topic=a["topic"],
        correlation_id=a["correlation_id"],
        branch=a["branch"],
        base_commit=a["base_commit"],
        status=a["status"],
        body=a["body"],
        metadata=a["metadata"],
        artifact_ids=a["artifact_ids"],
    )


FILTER_FIELDS = frozenset(f.name for f in fields(EventFilter))


def _event_filter(a: dict[str, Any]) -> EventFilter:
    """The filter arguments of event_list and event_wait (named as EventFilter's fields)."""
    return EventFilter(**{k: v for k, v in a.items() if k in FILTER_FIELDS})


def _list(p: Palace, a: dict[str, Any]) -> results.EventListResult:
    return p.coordination.event_list(
        _event_filter(a),
        since_event_id=a["since_event_id"],
        before_event_id=a["before_event_id"],
        limit=a["limit"],
        order=a["order"],
        preview=bool(a["preview"]),
    )


def _wait(p: Palace, a: dict[str, Any]) -> results.EventWaitResult:
    return p.coordination.event_wait(
        _event_filter(a),
        since_event_id=a["since_event_id"],
        timeout_ms=a["timeout_ms"],
        limit=a["limit"],
    )


def _patch(p: Palace, a: dict[str, Any]) -> results.PatchSubmitResult:
    return p.coordination.patch_submit(
        a["content"],
        a["from_agent"],
        a["stream"],
        room=a["room"],
        topic=a["topic"],
        to_agent=a["to_agent"],
        correlation_id=a["correlation_id"],
        branch=a["branch"],
        base_commit=a["base_commit"],
        body=a["body"],
        metadata=a["metadata"],
    )


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "mempalace_event_append",
        "Append a coordination event",
        "Post a message to other agents through the palace: an immutable event in a stream "
        "and room, from you, optionally to one agent (or '*'), tied to a task by "
        "correlation_id, with a status (conventionally one of: "
        f"{STATUS_WORDS}) and a verbatim body. Returns the event with its id: the cursor "
        "others read on from. Agents waiting on a matching mempalace_event_wait wake at once. "
        "Secret values in any field are stored as [REDACTED:kind].",
        _append,
        schema_of(results.AppendResult),
        (
            string_arg(
                "type",
                "The kind of event: task.request, task.reply, patch.ready, status...",
                required=True,
            ),
            string_arg("stream", STREAM, required=True),
            string_arg("room", ROOM, required=True),
            string_arg("from_agent", FROM_AGENT, required=True),
            string_arg("to_agent", TO_AGENT),
            string_arg("topic", TOPIC),
            string_arg("correlation_id", CORRELATION),
            string_arg("branch", BRANCH),
            string_arg("base_commit", BASE_COMMIT),
            string_arg("status", f"The status this event reports ({STATUS_WORDS})."),
            string_arg("body", BODY, max_chars=MAX_BODY_CHARS, cap_hint=BODY_HINT),
            Arg("metadata", "object", METADATA),
            Arg(
                "artifact_ids",
                "array",
                f"Ids of stored artifacts this event hands over (at most {MAX_ARTIFACT_IDS}).",
                max_items=MAX_ARTIFACT_IDS,
            ),
        ),
        read_only=False,
        own_lane=True,
    ),
    ToolSpec(
        "mempalace_event_list",
        "List coordination events",
        "Events matching every filter given. Without since_event_id: the newest first (an "
        "inbox). With it: only events appended after that one, oldest first (resume from the "
        "last event you handled: that id is all a watcher keeps). before_event_id pages back. "
        "preview cuts long bodies. has_more says whether to page on. cursor is where to go "
        "on from: pass it as since_event_id to mempalace_event_wait to wait for what comes "
        "next, missing nothing.",
        _list,
        schema_of(results.EventListResult),
        (
            *_filters("events"),
            string_arg("since_event_id", SINCE_EVENT),
            string_arg(
                "before_event_id", "Only events appended before this event id (paging back)."
            ),
            string_arg("since_created_at", SINCE_CREATED),
            _limit("events"),
            string_arg(
                "order",
                "asc (oldest first) or desc (newest first). Default: asc after since_event_id, "
                "else desc.",
                enum=("asc", "desc"),
            ),
            Arg(
                "preview",
                "boolean",
                f"Cut each body to {PREVIEW_CHARS} characters (body_truncated and body_length "
                "say so), to scan a busy stream cheaply.",
                default=False,
            ),
        ),
        own_lane=True,
    ),
    ToolSpec(
        "mempalace_event_wait",
        "Wait for a coordination event",
        "Block until an event matching every filter is appended (by any agent or process), "
        "then return it at once; or return timed_out: true after timeout_ms (a normal "
        f"result, not an error). timeout_ms is at most {MAX_WAIT_MS} ({MAX_WAIT_MS // 1000} "
        f"s; default {DEFAULT_WAIT_MS // 1000} s). Without since_event_id it waits for events "
        "appended after the call; with it, events after that one count, even if they came "
        "already. Wait again with since_event_id set to the result's cursor: nothing "
        "appended in between is missed.",
        _wait,
        schema_of(results.EventWaitResult),
        (
            *_filters("events"),
            string_arg("since_event_id", SINCE_EVENT),
            string_arg("since_created_at", SINCE_CREATED),
            Arg(
                "timeout_ms",
                "integer",
                f"How long to wait, in milliseconds (0-{MAX_WAIT_MS}: at most "
                f"{MAX_WAIT_MS // 1000} s). 0 only checks.",
                default=DEFAULT_WAIT_MS,
                minimum=0,
                maximum=MAX_WAIT_MS,
            ),
            _limit("events"),
        ),
        own_lane=True,
    ),
    ToolSpec(
        "mempalace_event_ack",
        "Acknowledge an event",
        "Answer an event: appends an event.ack to its writer, in its stream and room, with "
        "its correlation id (or its id) and ack_of naming it, and optionally a status (e.g. "
        "claimed, applied, failed) and notes. The acknowledged event never changes. The same "
        "ack again (same agent, status and body) returns the first one (already_acked).",
        lambda p, a: p.coordination.event_ack(
            a["event_id"], a["from_agent"], status=a["status"], body=a["body"], topic=a["topic"]
        ),
        schema_of(results.EventAckResult),
        (
            string_arg("event_id", "The id of the event you acknowledge.", required=True),
            string_arg("from_agent", FROM_AGENT, required=True),
            string_arg("status", f"Your answer's status ({STATUS_WORDS})."),
            string_arg("body", BODY, max_chars=MAX_BODY_CHARS, cap_hint=BODY_HINT),
            string_arg("topic", "The ack's topic; default: the event's."),
        ),
        read_only=False,
        idempotent=True,
        own_lane=True,
    ),
    ToolSpec(
        "mempalace_task_create",
        "Hand a task to an agent",
        "Create a task for another agent: a task.request event (status open) in stream "
        "project/PROJECT, room delegation, with the goal and when it counts as done. "
        "Returns the task_id (its correlation id: carry it in every reply) and wake_up, a "
        "line to paste to the other agent. Follow it with mempalace_event_wait "
        "correlation_id=TASK_ID.",
        lambda p, a: p.coordination.task_create(
            a["project"],
            a["from_agent"],
            a["to_agent"],
            a["goal"],
            a["done"],
            branch=a["branch"],
            base_commit=a["base_commit"],
        ),
        schema_of(results.TaskCreateResult),
        (
            string_arg("project", "The project the task belongs to (e.g. 'myapp').", required=True),
            string_arg("from_agent", FROM_AGENT, required=True),
            string_arg("to_agent", "The agent who should do it.", required=True),
            string_arg(
                "goal",
                "What to do and why, verbatim.",
                required=True,
                max_chars=MAX_BODY_CHARS,
                cap_hint=BODY_HINT,
            ),
            string_arg(
                "done",
                "When it counts as done (e.g. 'the focused tests pass and a patch is submitted').",
                required=True,
                max_chars=MAX_BODY_CHARS,
            ),
            string_arg("branch", BRANCH),
            string_arg("base_commit", BASE_COMMIT),
        ),
        read_only=False,
        own_lane=True,
    ),
    ToolSpec(
        "mempalace_artifact_put",
        "Store an artifact",
        "Store exact text to hand over (a patch, a file, a log, a JSON report), at most "
        f"{MAX_ARTIFACT_BYTES // (1024 * 1024)} MiB as UTF-8. Returns its id and sha256; "
        "mempalace_artifact_get returns the same text. The id comes from the content, so "
        "storing the same text again returns the stored artifact (created: false). Secret "
        "values are stored as [REDACTED:kind]: then secrets_redacted counts them and sha256 "
        "is the stored text's.",
        lambda p, a: p.coordination.artifact_put(
            a["kind"], a["content"], a["created_by"], a["metadata"]
        ),
        schema_of(results.ArtifactPutResult),
        (
            string_arg("kind", "What it is: patch, file, log, json, note...", required=True),
            string_arg(
                "content",
                "The exact text.",
                required=True,
                max_chars=MAX_ARTIFACT_BYTES,
                cap_hint="Split it into several artifacts.",
            ),
            string_arg("created_by", FROM_AGENT, required=True),
            Arg("metadata", "object", METADATA + " E.g. path, branch, base_commit."),
        ),
        read_only=False,
        idempotent=True,
        own_lane=True,
    ),
    ToolSpec(
        "mempalace_artifact_get",
        "Get an artifact",
        "An artifact's exact text by id, with its sha256 (checked against the text before it "
        "is returned) and size.",
        lambda p, a: p.coordination.artifact_get(a["artifact_id"]),
        schema_of(results.ArtifactGetResult),
        (string_arg("artifact_id", "The id mempalace_artifact_put returned.", required=True),),
        own_lane=True,
    ),
    ToolSpec(
        "mempalace_patch_submit",
        "Submit a patch",
        "Hand over a patch in one call: stores it as an artifact (kind patch) and appends a "
        "patch.ready event (status ready, room patches unless given) pointing at it in "
        "artifact_ids. The receiver fetches it with mempalace_artifact_get, checks the "
        "sha256, applies it itself and answers with mempalace_event_ack.",
        _patch,
        schema_of(results.PatchSubmitResult),
        (
            string_arg(
                "content",
                "The patch (a unified diff), exact.",
                required=True,
                max_chars=MAX_ARTIFACT_BYTES,
                cap_hint="Split it into several patches.",
            ),
            string_arg("from_agent", FROM_AGENT, required=True),
            string_arg("stream", STREAM, required=True),
            string_arg("room", "The sub-channel; default: patches."),
            string_arg("topic", TOPIC),
            string_arg("to_agent", TO_AGENT),
            string_arg("correlation_id", CORRELATION),
            string_arg("branch", BRANCH),
            string_arg("base_commit", BASE_COMMIT),
            string_arg("body", BODY, max_chars=MAX_BODY_CHARS, cap_hint=BODY_HINT),
            Arg("metadata", "object", METADATA),
        ),
        read_only=False,
        own_lane=True,
    ),
)
