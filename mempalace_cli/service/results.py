"""What the service's verbs return, as types: one `TypedDict` per result a front end shows.

The first ones are the shapes the MCP tools publish as their output schemas: `mcp.spec.schema_of`
turns each type into the JSON schema of its tool (checked by tests/test_typed_results.py), and
the service verbs behind the tools say they return them. The rest are the results of the verbs
only the CLI and the web page show; the same test checks real results against them.

A key marked `NotRequired` may be absent; `X | None` may be null; the text in
`Annotated[X, "..."]` is the field's published description. Extra keys are allowed: a front
end relies only on the listed ones.

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


# -- the verbs only the CLI and the web page show ----------------------------------------------
# (no MCP tool publishes these; tests/test_typed_results.py checks real results against them)


# The overview and single drawers (service/drawers.py)
class StatusVerified(TypedDict):
    drawers_checked: int
    all_matched: bool
    repair: dict[str, Any] | None


class PalaceStatus(TypedDict):
    """`Drawers.status`, what `mempalace status` shows (mempalace_status is built from it)."""

    palace_path: str
    store: str
    total_drawers: int
    embedding_model: str  # queries are embedded with it
    taxonomy: dict[str, dict[str, int]]  # drawers by wing, then room
    wings: dict[str, int]
    rooms: dict[str, int]
    consistency: dict[str, Any]  # what the catalogue mirrors, and its last repair
    verified: NotRequired[StatusVerified]  # with verify


class AddDrawersResult(TypedDict):
    success: bool
    drawer_ids: list[str]
    added: int
    already_stored: int
    secrets_redacted: int


# Search (service/searching.py): a hit as the service ranks it; the MCP tool shows SearchHit's
class RankedHit(SearchHit):
    rank_score: float
    line_start: int | None
    line_end: int | None


class Ranking(TypedDict):
    query: str
    filters: dict[str, Any]
    mode: Literal["hybrid", "vector", "lexical"]
    results: list[RankedHit]
    time: NotRequired[dict[str, Any]]
    undated_left_out: NotRequired[int]
    hint: NotRequired[str]


# A drawer's neighbours in its file (service/neighbours.py)
class Neighbour(TypedDict):
    drawer_id: str
    chunk_index: int | None
    line_start: int | None
    line_end: int | None
    preview: str


class NeighboursResult(TypedDict):
    drawer_id: str
    source_file: str
    position: int
    total: int
    before: list[Neighbour]
    after: list[Neighbour]


# Mining (service/mining.py, service/convos.py, service/watching.py)
class ProjectRoom(TypedDict):
    name: str
    keywords: list[str]


class InitResult(TypedDict):
    directory: str
    project_file: str
    config_written: bool
    kept_existing: bool
    wing: str
    rooms: list[ProjectRoom]
    exclude: list[str]
    palace_path: str
    palace_created: bool
    next_step: str


class MineRun(MineResult):
    """A mine's whole report (`mempalace mine --json`); the MCP tool publishes MineResult's
    fields of it."""

    palace_created: bool
    displaced: list[dict[str, Any]]
    mined_files: list[str]
    removed_files: list[str]
    limited: bool
    elapsed_seconds: float
    hint: NotRequired[str]
    plan: NotRequired[list[dict[str, Any]]]  # a dry run's, file by file


class WatchBatch(TypedDict):
    """What watch mode did for one batch of changed paths."""

    directory: str
    wing: str
    mode: str
    full_rescan: bool
    files: dict[str, int]  # mined, moved, removed, unchanged, skipped
    drawers: dict[str, int]  # added, removed, embeddings_reused
    mined_files: list[str]
    moved_files: list[dict[str, str]]  # {"from", "to"}
    removed_files: list[str]
    skipped: list[dict[str, str]]
    secrets: dict[str, Any]
    elapsed_ms: int


# Session transcripts and split files (service/sessions.py)
class TranscriptDrawers(TypedDict):
    added: int
    removed: int
    total: int


class TranscriptResult(TypedDict):
    """`Sessions.file_transcript`: what a hook run did with a session's transcript."""

    transcript: str
    session_id: str
    status: Literal["filed", "unchanged", "skipped"]
    elapsed_seconds: float
    reason: NotRequired[str]  # skipped
    wing: NotRequired[str]
    format: NotRequired[str]
    title: NotRequired[str]
    secrets_redacted: NotRequired[int]
    drawers: NotRequired[TranscriptDrawers]
    left_out: NotRequired[list[str]]  # lines of the transcript that could not be read


class SplitPart(TypedDict):
    index: int
    session_id: str
    date: str
    title: str
    lines: int
    output: str


class SplitFile(TypedDict):
    file: str
    layout: str | None
    sessions: int
    action: Literal["split", "skip"]
    reason: NotRequired[str]
    parts: NotRequired[list[SplitPart]]


class SplitResult(TypedDict):
    path: str
    output_dir: str | None
    dry_run: bool
    min_sessions: int
    files: list[SplitFile]
    files_written: int


# Tunnels and hallways (service/tunnels.py)
class PruneTunnelsResult(TypedDict):
    dry_run: bool
    total: int
    dangling: list[Tunnel]
    matched: int
    removed: int


class TunnelProposal(TypedDict):
    source_wing: str
    source_room: str
    target_wing: str
    target_room: str
    label: str
    entities: list[str]
    shared: int


class ProposeTunnelsResult(TypedDict):
    dry_run: bool
    candidates: int
    proposals: list[TunnelProposal]
    created: list[Tunnel]
    hint: NotRequired[str]


class RestoreHallwayResult(TypedDict):
    success: bool
    hallway_id: str
    hidden: bool


# The coordination log's tasks (service/coordination.py)
class Task(TypedDict):
    task_id: str
    project: str
    from_agent: str
    to_agent: str | None
    goal: str | None
    done: str | None
    branch: str | None
    base_commit: str | None
    status: str | None
    status_by: str
    updated_at: str
    created_at: str
    event_id: str


class TaskListResult(TypedDict):
    tasks: list[Task]
    count: int


class TaskShowResult(TypedDict):
    task: Task
    events: list[Event]


class TaskUpdateResult(TypedDict):
    success: bool
    task_id: str
    status: str
    event: Event
    secrets_redacted: int


# Identity and the embedding model (service/wakeup.py, service/reembed.py)
class IdentityResult(TypedDict):
    text: str | None
    where: str


class SetIdentityResult(TypedDict):
    stored: bool
    where: str


class ReembedResult(TypedDict):
    palace_path: str
    model_before: str
    model: str
    collection: str
    switched: bool
    embedded: int
    resumed_from: int
    drawers: int
    caught_up: NotRequired[int]  # after a switch
    passages_added: NotRequired[int]  # long drawers given passage vectors (every run)


class ModelEntry(TypedDict):
    name: str
    dimension: int
    languages: str
    package: str
    about: str


class ModelsResult(TypedDict):
    palace_path: str
    palace_model: str | None
    palace_model_origin: str | None
    default_model: str
    models: list[ModelEntry]


# Moving a palace to or from a server (service/migration.py)
class DigestSummary(TypedDict):
    count: int
    id_digest: str
    content_digest: str


class DrawersCheck(TypedDict):
    source: DigestSummary
    target: DigestSummary
    max_vector_gap: float


class FactsCheck(TypedDict):
    source: DigestSummary
    target: DigestSummary
    counted: dict[str, int]  # source, target


class MigrateCheck(TypedDict):
    drawers: DrawersCheck
    facts: FactsCheck


MigrateResult = TypedDict(  # "from" is a Python keyword: the functional form
    "MigrateResult",
    {
        "from": str,
        "to": str,
        "drawers": dict[str, int],  # total, copied, already_there
        "facts": dict[str, int],  # total, copied
        "identity": bool,
        "verified": MigrateCheck,
    },
)


# How well organised the palace is (service/organisation.py)
class AuditCheck(TypedDict):
    check: str
    score: int
    weight: int
    summary: str


class AuditFinding(TypedDict):
    check: str
    text: str
    fix: str
    count: int
    examples: list[str]


class AuditResult(TypedDict):
    palace: str
    drawers: int
    wings: int
    rooms: int
    score: int | None  # None for an empty palace
    checks: list[AuditCheck]
    findings: list[AuditFinding]


# The `mempalace ui` pages (service/overview.py, service/duplicates.py)
class MapWing(TypedDict):
    wing: str
    drawers: int
    rooms: int
    isolated: bool


class RoomNode(TypedDict):
    room: str
    wings: list[str]
    drawers: int
    drawers_by_wing: NotRequired[dict[str, int]]  # a tunnel's
    tunnel: bool


class MapRoom(RoomNode):
    linked: bool
    private: bool
    isolated: bool


class LinkEnd(TypedDict):
    wing: str
    room: str
    drawer_id: str | None


class MapLink(TypedDict):
    id: str
    label: str | None
    source: LinkEnd
    target: LinkEnd
    missing_ends: list[str]


class PlaceRef(TypedDict):
    room: str
    wing: str


class PalaceMap(TypedDict):
    wings: list[MapWing]
    rooms: list[MapRoom]
    rooms_total: int
    rooms_hidden: int
    tunnels: list[RoomNode]
    links: list[MapLink]
    links_dangling: int
    drawers: int
    isolated_wings: list[str]
    isolated_rooms: list[PlaceRef]


class EntitiesResult(TypedDict):
    entities: list[str]
    total: int


class HistoryFact(Fact):
    holds_as_of: bool | None
    replaced_by: str | None
    replaces: str | None


class EntityHistory(TypedDict):
    entity: str
    as_of: str | None
    facts: list[HistoryFact]
    count: int
    current: int
    held_as_of: int | None
    suggestions: list[Any]


class DiaryEntry(TypedDict):
    drawer_id: str
    filed_at: str | None
    agent: str | None
    topic: str | None
    text: str


class DiaryPage(TypedDict):
    wing: str | None
    entries: list[DiaryEntry]
    total: int
    offset: int
    limit: int
    has_more: bool


class EndedFact(Fact):
    now: list[str]  # what holds now in its place


class StaleDrawer(TypedDict):
    drawer_id: str
    wing: str
    room: str
    preview: str
    ended_facts: list[EndedFact]


class StaleDrawers(TypedDict):
    drawers: list[StaleDrawer]
    total: int
    offset: int
    limit: int


class MissingSource(TypedDict):
    source_file: str
    drawers: int


class MissingSources(TypedDict):
    sources: list[MissingSource]
    total: int
    drawers: NotRequired[int]  # absent when there is no palace
    checked: int
    offset: int
    limit: int


class StoreAgreement(TypedDict):
    store: str
    in_step: bool | None  # None: only asking the store can tell (a server)
    write_interrupted: bool
    mirrors: str | None
    last_repair: dict[str, Any] | None
    catalogue_drawers: int


class PalaceModel(TypedDict):
    model: str
    dimension: int | None
    collection: str
    recorded: str


class DiskUse(TypedDict):
    bytes: dict[str, int]
    total: int


class DuplicateDrawer(TypedDict):
    drawer_id: str
    wing: str
    room: str
    source_file: str
    filed_at: str | None
    preview: str


class DuplicateGroupsResult(TypedDict):
    """A page of near-duplicate groups; while a large palace is still being read, only
    ready (false), read, to_read and error."""

    ready: bool
    read: NotRequired[int]
    to_read: NotRequired[int]
    error: NotRequired[str | None]
    groups: NotRequired[list[list[DuplicateDrawer]]]
    total: NotRequired[int]
    duplicates: NotRequired[int]
    drawers: NotRequired[int]
    offset: NotRequired[int]
    limit: NotRequired[int]
