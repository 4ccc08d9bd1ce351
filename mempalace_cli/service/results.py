"""What the service's verbs return, as types: one `TypedDict` per result a front end shows.

These are the shapes the MCP tools publish as their output schemas: `mcp.spec.schema_of` turns
each type into the JSON schema of its tool (checked by tests/test_typed_results.py), and the
service verbs behind the tools say they return them. A key marked `NotRequired` may be absent;
`X | None` may be null; the text in `Annotated[X, "..."]` is the field's published description.
Extra keys are allowed: a front end relies only on the listed ones.

Plain data: imports only `typing`.
"""

from typing import Annotated, Any, Literal, NotRequired, TypedDict

IgnoredArguments = Annotated[
    dict[str, str],
    "MemPalace arguments this call passed that this server accepts but does "
    "not act on, each with why. Absent when there are none.",
]


class StatusResult(TypedDict):
    total_drawers: NotRequired[int]
    embedding_model: NotRequired[str]
    wings: NotRequired[dict[str, Any]]
    taxonomy: NotRequired[dict[str, Any]]
    rooms: NotRequired[dict[str, Any]]
    palace_path: NotRequired[str]
    protocol: NotRequired[str]
    aaak_dialect: NotRequired[str]
    error: NotRequired[str]
    hint: NotRequired[str]


class ListWingsResult(TypedDict):
    wings: dict[str, Any]


class ListRoomsResult(TypedDict):
    wing: NotRequired[str | None]
    rooms: dict[str, Any]
    hint: NotRequired[str]


class GetTaxonomyResult(TypedDict):
    taxonomy: dict[str, Any]


class SearchHit(TypedDict):
    drawer_id: str
    text: str
    wing: NotRequired[str]
    room: NotRequired[str]
    source_file: NotRequired[str]
    filed_at: NotRequired[str]
    metadata: NotRequired[dict[str, Any]]
    similarity: NotRequired[
        Annotated[
            float | None,
            (
                "Cosine similarity of query and drawer, -1 to 1 (near 0: unrelated); for "
                "keyword-only hits too. Compare it within one result list."
            ),
        ]
    ]
    date: NotRequired[
        Annotated[
            str | None,
            (
                "The date of what the drawer records (YYYY-MM-DD, or a UTC time): what "
                "since/before compare; null when it has none."
            ),
        ]
    ]
    matched_by: NotRequired[
        Annotated[
            list[Literal["vector", "lexical", "translated"]],
            (
                "Which sides found this drawer: vector (meaning), lexical (the query's "
                "words), translated (a Chinese query's words translated to English by "
                "dictionary). A hit found by 'translated' alone is a lead to read, not "
                "proof."
            ),
        ]
    ]
    duplicates: NotRequired[
        Annotated[
            int,
            (
                "Only on a hit that stands for copies: how many other drawers hold the "
                "same text (case, spacing and punctuation aside); they are not listed "
                "again."
            ),
        ]
    ]
    duplicate_ids: NotRequired[
        Annotated[list[str], "The drawer ids of those copies (with duplicates)."]
    ]


class SearchResult(TypedDict):
    query: str
    filters: dict[str, Any]
    results: list[SearchHit]
    time: NotRequired[
        Annotated[
            dict[str, Any],
            (
                "When the query names a time ('last month', '上个月') and no since/before is"
                " given: the period read from it (named, since, before, by the server's "
                "clock) and how many results are dated in it (ranked_first); those come "
                "first. Pass since/before to keep only them."
            ),
        ]
    ]
    hint: NotRequired[str]
    ignored_arguments: NotRequired[IgnoredArguments]


class CheckDuplicateResult(TypedDict):
    is_duplicate: bool
    matches: list[Any]
    similar: NotRequired[list[Any]]


class GetAaakSpecResult(TypedDict):
    aaak_spec: str


class Drawer(TypedDict):
    drawer_id: str
    text: str
    wing: str
    room: str
    source_file: NotRequired[str]
    filed_at: NotRequired[str]
    metadata: NotRequired[dict[str, Any]]


class GetDrawersResult(TypedDict):
    drawers: list[Drawer]
    missing: list[str]


class ListDrawersResult(TypedDict):
    filters: NotRequired[dict[str, Any]]
    drawers: list[dict[str, Any]]
    total: int
    limit: int
    offset: int
    has_more: bool
    hint: NotRequired[str]


class AddResult(TypedDict):
    success: bool
    drawer_id: NotRequired[str]
    wing: NotRequired[str]
    room: NotRequired[str]
    already_stored: NotRequired[bool]
    reason: NotRequired[str]
    matches: NotRequired[list[Any]]
    similar: NotRequired[list[Any]]
    secrets_redacted: NotRequired[int]


class UpdateDrawerResult(TypedDict):
    success: bool
    drawer_id: str
    wing: NotRequired[str]
    room: NotRequired[str]
    content_changed: NotRequired[bool]
    moved: NotRequired[bool]
    reason: NotRequired[str]
    matches: NotRequired[list[Any]]
    secrets_redacted: NotRequired[int]


class DeleteDrawerResult(TypedDict):
    success: bool
    drawer_id: str


class ForgetResult(TypedDict):
    dry_run: bool
    removed: int
    matched: int
    drawers: list[dict[str, Any]]
    missing: NotRequired[list[str]]
    files_forgotten: NotRequired[list[str]]
    sources: NotRequired[list[dict[str, Any]]]
    sources_total: NotRequired[int]
    drawers_not_shown: NotRequired[int]
    max_per_call: NotRequired[int]
    hint: NotRequired[str]


class MineResult(TypedDict):
    directory: str
    wing: str
    mode: str
    dry_run: bool
    files: dict[str, Any]
    drawers: dict[str, Any]
    skipped: NotRequired[list[Any]]
    secrets: NotRequired[dict[str, Any]]
    ignored_arguments: NotRequired[IgnoredArguments]


class Fact(TypedDict):
    triple_id: str
    subject: str
    predicate: str
    object: str
    valid_from: NotRequired[str | None]
    valid_to: NotRequired[str | None]
    confidence: NotRequired[float]
    source: NotRequired[str | None]
    source_closet: NotRequired[str | None]
    source_drawer_id: NotRequired[str | None]
    source_file: NotRequired[str | None]
    current: NotRequired[bool]


class KgQueryResult(TypedDict):
    entity: str
    as_of: NotRequired[str | None]
    direction: NotRequired[str]
    facts: list[Fact]
    count: int
    suggestions: NotRequired[list[Any]]


class KgAddResult(TypedDict):
    triple_id: str
    created: bool
    subject: NotRequired[str]
    predicate: NotRequired[str]
    object: NotRequired[str]
    valid_from: NotRequired[str | None]
    valid_to: NotRequired[str | None]
    source: NotRequired[str | None]
    source_closet: NotRequired[str | None]


class KgInvalidateResult(TypedDict):
    invalidated: int
    ended: str
    facts: NotRequired[list[Fact]]


class KgSupersedeResult(TypedDict):
    at: str
    ended: list[Fact]
    started: Fact


class KgTimelineResult(TypedDict):
    entity: NotRequired[str | None]
    facts: list[Fact]
    count: int
    offset: NotRequired[int]


class KgStatsResult(TypedDict):
    entities: int
    triples: int
    current_facts: NotRequired[int]
    expired_facts: NotRequired[int]
    predicates: NotRequired[dict[str, Any]]
    path: NotRequired[str]


class TraverseResult(TypedDict):
    start: str
    found: bool
    max_hops: NotRequired[int]
    results: list[Any]
    count: int
    suggestions: NotRequired[list[Any]]
    message: NotRequired[str]


class FindTunnelsResult(TypedDict):
    wing_a: NotRequired[str | None]
    wing_b: NotRequired[str | None]
    tunnels: list[Any]
    count: int
    explicit: NotRequired[list[Any]]


class GraphStatsResult(TypedDict):
    rooms: NotRequired[int]
    tunnels: NotRequired[int]
    explicit_tunnels: NotRequired[int]
    top_tunnels: NotRequired[list[Any]]


class DiaryWriteResult(TypedDict):
    success: bool
    drawer_id: str
    agent: NotRequired[str]
    wing: str
    timestamp: NotRequired[str]
    topic: NotRequired[str]
    secrets_redacted: NotRequired[int]


class DiaryReadResult(TypedDict):
    agent: str
    wing: str
    entries: list[Any]
    total: int


class WakeUpResult(TypedDict):
    text: str
    budget: NotRequired[int]
    total_tokens: NotRequired[int]


class Tunnel(TypedDict):
    id: str
    source_wing: str
    source_room: str
    source_drawer_id: NotRequired[str | None]
    target_wing: str
    target_room: str
    target_drawer_id: NotRequired[str | None]
    label: NotRequired[str | None]
    created_at: NotRequired[str]
    updated_at: NotRequired[str]
    missing_ends: NotRequired[list[Literal["source", "target"]]]


class CreateTunnelResult(TypedDict):
    success: bool
    created: bool
    tunnel: Tunnel


class ListTunnelsResult(TypedDict):
    wing: NotRequired[str | None]
    tunnels: list[Tunnel]
    count: int
    hint: NotRequired[str]


class DeleteTunnelResult(TypedDict):
    success: bool
    deleted: str
    tunnel: NotRequired[Tunnel]


class FollowTunnelsResult(TypedDict):
    wing: str
    room: str
    connections: list[dict[str, Any]]
    count: int
    hint: NotRequired[str]


class Hallway(TypedDict):
    hallway_id: str
    wing_a: str
    room_a: str
    wing_b: str
    room_b: str
    entities: list[str]
    shared: int
    cross_wing: NotRequired[bool]
    hidden: NotRequired[bool]


class ListHallwaysResult(TypedDict):
    wing: NotRequired[str | None]
    hallways: list[Hallway]
    total: int
    hidden: NotRequired[int]
    limit: int
    offset: int
    has_more: bool
    entities: NotRequired[int]
    common_entities: NotRequired[list[str]]
    hint: NotRequired[str]


class DeleteHallwayResult(TypedDict):
    success: bool
    hallway_id: str
    hidden: NotRequired[bool]
    already_hidden: NotRequired[bool]
    hallway: NotRequired[Hallway]


class CheckpointResult(TypedDict):
    success: bool
    added: int
    filed: list[dict[str, Any]]
    skipped: int
    duplicates: list[dict[str, Any]]
    diary: NotRequired[dict[str, Any] | None]
    secrets_redacted: NotRequired[int]


class SyncResult(TypedDict):
    dry_run: bool
    project_dir: NotRequired[str | None]
    wing: NotRequired[str | None]
    checked_files: NotRequired[int]
    files: list[dict[str, Any]]
    files_not_shown: NotRequired[int]
    stale_files: NotRequired[int]
    matched: int
    removed: int
    problems: NotRequired[list[str]]
    hint: NotRequired[str]


class MemoriesFiledAwayResult(TypedDict):
    status: str
    message: str
    count: int
    since: NotRequired[str]
    timestamp: NotRequired[str | None]
    by_room: NotRequired[list[dict[str, Any]]]
    by_filer: NotRequired[list[dict[str, Any]]]
    latest: NotRequired[list[dict[str, Any]]]


class ReconnectResult(TypedDict):
    success: bool
    reconnected: list[str]
    palace_path: NotRequired[str]
    store: NotRequired[str]
    health: dict[str, Any]
    hint: NotRequired[str]


class HookSettingsResult(TypedDict):
    success: bool
    settings: dict[str, Any]
    updated: NotRequired[list[str]]
    path: NotRequired[str]


class MeshPeersResult(TypedDict):
    peers: list[dict[str, Any]]
    count: int
    team_palace: bool
    server: NotRequired[str]
    this_machine: NotRequired[str]
    window_hours: NotRequired[int]
    reason: NotRequired[str]


class Event(TypedDict):
    id: str
    seq: int
    type: str
    stream: str
    room: str
    topic: NotRequired[str | None]
    from_agent: str
    to_agent: NotRequired[str | None]
    correlation_id: NotRequired[str | None]
    branch: NotRequired[str | None]
    base_commit: NotRequired[str | None]
    status: NotRequired[str | None]
    body: NotRequired[str | None]
    metadata: NotRequired[dict[str, Any] | None]
    artifact_ids: NotRequired[list[str]]
    ack_of: NotRequired[str | None]
    writer: NotRequired[str]
    created_at: str
    body_truncated: NotRequired[bool]
    body_length: NotRequired[int]


class AppendResult(TypedDict):
    success: bool
    event: Event
    secrets_redacted: NotRequired[int]


class EventListResult(TypedDict):
    events: list[Event]
    count: int
    order: str
    has_more: bool
    cursor: NotRequired[str | None]
    hint: NotRequired[str]


class EventWaitResult(TypedDict):
    timed_out: bool
    events: list[Event]
    count: int
    has_more: NotRequired[bool]
    cursor: str | None
    waited_ms: NotRequired[int]
    hint: NotRequired[str]


class EventAckResult(TypedDict):
    success: bool
    event: Event
    acked_event_id: str
    already_acked: bool
    secrets_redacted: NotRequired[int]


class TaskCreateResult(TypedDict):
    success: bool
    task_id: str
    event: Event
    wake_up: NotRequired[str]
    secrets_redacted: NotRequired[int]


class Artifact(TypedDict):
    id: str
    kind: str
    sha256: str
    size_bytes: int
    created_by: str
    created_at: str
    metadata: NotRequired[dict[str, Any] | None]
    content: NotRequired[str]


class ArtifactPutResult(TypedDict):
    success: bool
    artifact: Artifact
    created: bool
    secrets_redacted: NotRequired[int]
    note: NotRequired[str]


class ArtifactGetResult(TypedDict):
    artifact: Artifact


class PatchSubmitResult(TypedDict):
    success: bool
    artifact: Artifact
    event: Event
    secrets_redacted: NotRequired[int]
