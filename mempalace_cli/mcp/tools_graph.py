"""The palace-graph tools of MemPalace 3.11: explicit tunnels, hallways, checkpoint, sync and
the session helpers (memories_filed_away, reconnect, hook_settings, mesh_peers).

Names and arguments are MemPalace's; what each does is this server's own (service/tunnels.py,
service/upkeep.py). Every write goes through the palace's one write lock."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mempalace_cli.mcp.policy import MAX_BULK_DELETE, check_bulk_count
from mempalace_cli.mcp.spec import (
    DRAWER_ID,
    PATH_CHARS,
    TEXT_CHARS,
    WING_FILTER,
    Arg,
    ToolSpec,
    schema_of,
    string_arg,
)
from mempalace_cli.service import results
from mempalace_cli.service.drawers import DUPLICATE_THRESHOLD
from mempalace_cli.service.tunnels import MAX_HALLWAY_PAGE, MAX_LABEL_CHARS
from mempalace_cli.service.upkeep import MAX_CHECKPOINT_ITEMS

if TYPE_CHECKING:
    from mempalace_cli.service import Palace

ITEM_SCHEMA = {
    "type": "object",
    "properties": {
        "wing": {"type": "string", "description": "Wing to file into."},
        "room": {"type": "string", "description": "Room inside the wing."},
        "content": {
            "type": "string",
            "maxLength": TEXT_CHARS,
            "description": "The text to keep, verbatim.",
        },
        "source_file": {"type": "string", "description": "Where it came from, if anywhere."},
    },
    "required": ["wing", "room", "content"],
    "additionalProperties": False,
}
SHOWN_FILES = 100  # stale files listed in a sync result


def _sync(p: Palace, a: dict[str, Any]) -> results.SyncResult:
    """A dry run unless apply is true; at most MAX_BULK_DELETE drawers go per call."""
    upkeep = p.upkeep
    apply = a["apply"] is True
    preview = upkeep.sync(a["project_dir"], a["wing"], apply=False)
    if apply and preview["matched"]:
        check_bulk_count(preview["matched"], "this sync")
        preview = upkeep.sync(a["project_dir"], a["wing"], apply=True)
    files = preview["files"]
    preview["files"] = files[:SHOWN_FILES]
    preview["files_not_shown"] = max(0, len(files) - SHOWN_FILES)
    return preview


def _checkpoint(p: Palace, a: dict[str, Any]) -> results.CheckpointResult:
    return p.upkeep.checkpoint(
        a["items"], diary=a["diary"], dedup_threshold=a["dedup_threshold"], added_by=a["added_by"]
    )


TOOLS: tuple[ToolSpec, ...] = (
    # -- explicit tunnels -----------------------------------------------------------------------
    ToolSpec(
        "mempalace_create_tunnel",
        "Create a tunnel",
        "Link two rooms on purpose (of one wing or two), or two drawers in them, with an "
        "optional label saying why they belong together. The palace graph walks it "
        "(mempalace_traverse). Both rooms must exist; diary rooms stay private. The same two "
        "ends again, either way round, are the same tunnel: its label is updated and created "
        "is false.",
        lambda p, a: p.tunnels.create(
            a["source_wing"],
            a["source_room"],
            a["target_wing"],
            a["target_room"],
            label=a["label"],
            source_drawer_id=a["source_drawer_id"],
            target_drawer_id=a["target_drawer_id"],
        ),
        schema_of(results.CreateTunnelResult),
        (
            string_arg("source_wing", "Wing of the first room.", required=True),
            string_arg("source_room", "The first room.", required=True),
            string_arg("target_wing", "Wing of the second room.", required=True),
            string_arg("target_room", "The second room.", required=True),
            string_arg(
                "label",
                "Why the two belong together, in a line ('the outage this decision caused').",
                max_chars=MAX_LABEL_CHARS,
            ),
            string_arg("source_drawer_id", f"Link this drawer of the first room. {DRAWER_ID}"),
            string_arg("target_drawer_id", f"Link this drawer of the second room. {DRAWER_ID}"),
        ),
        read_only=False,
        idempotent=True,
    ),
    ToolSpec(
        "mempalace_list_tunnels",
        "List tunnels",
        "The explicit tunnels, oldest first (with wing: those with an end in it), each with its "
        "id, both ends, label and missing_ends (an end whose room is now empty or whose drawer "
        "is gone).",
        lambda p, a: p.tunnels.list_tunnels(a["wing"]),
        schema_of(results.ListTunnelsResult),
        (string_arg("wing", "Only tunnels with an end in this wing; omit for all."),),
    ),
    ToolSpec(
        "mempalace_delete_tunnel",
        "Delete a tunnel",
        "Remove one explicit tunnel by id (from mempalace_list_tunnels). The rooms and drawers "
        "it linked stay as they are.",
        lambda p, a: p.tunnels.delete(a["tunnel_id"]),
        schema_of(results.DeleteTunnelResult),
        (string_arg("tunnel_id", "The tunnel's id, as listed (tunnel_...).", required=True),),
        read_only=False,
        destructive=True,
    ),
    ToolSpec(
        "mempalace_follow_tunnels",
        "Follow tunnels",
        "Where the explicit tunnels at a room lead: for each, the other end's wing and room, "
        "its drawer count, the label, and the linked drawer's opening words when the tunnel "
        "names a drawer.",
        lambda p, a: p.tunnels.follow(a["wing"], a["room"]),
        schema_of(results.FollowTunnelsResult),
        (
            string_arg("wing", "The room's wing.", required=True),
            string_arg("room", "The room to start from.", required=True),
        ),
    ),
    # -- hallways -------------------------------------------------------------------------------
    ToolSpec(
        "mempalace_list_hallways",
        "List hallways",
        "Rooms linked through knowledge-graph entities they share: an entity is in a room when "
        "a fact about it was read from a drawer or file there, or a drawer there mentions it. "
        "Most shared entities first, a page at a time; hidden hallways are left out and counted. "
        "An entity found in very many rooms links none (common_entities).",
        lambda p, a: p.tunnels.hallways(
            a["wing"], a["limit"], a["offset"], include_hidden=a["include_hidden"]
        ),
        schema_of(results.ListHallwaysResult),
        (
            string_arg("wing", f"Only hallways with an end in this wing. {WING_FILTER}"),
            Arg(
                "limit",
                "integer",
                f"Hallways per page (1-{MAX_HALLWAY_PAGE}).",
                default=50,
                minimum=1,
                maximum=MAX_HALLWAY_PAGE,
            ),
            Arg("offset", "integer", "How many to skip (paging).", default=0, minimum=0),
            Arg(
                "include_hidden",
                "boolean",
                "Also list the hidden ones (marked hidden: true).",
                default=False,
            ),
        ),
    ),
    ToolSpec(
        "mempalace_delete_hallway",
        "Hide a hallway",
        "Hide a hallway for good (by id, from mempalace_list_hallways): it stays out of every "
        "later listing however the palace changes. Nothing else is deleted; `mempalace "
        "hallways restore ID` brings it back.",
        lambda p, a: p.tunnels.delete_hallway(a["hallway_id"]),
        schema_of(results.DeleteHallwayResult),
        (string_arg("hallway_id", "The hallway's id, as listed (hallway_...).", required=True),),
        read_only=False,
        idempotent=True,
    ),
    # -- upkeep ---------------------------------------------------------------------------------
    ToolSpec(
        "mempalace_checkpoint",
        "Save a checkpoint",
        "File several drawers and an optional diary entry in one call, all or nothing: every "
        "item is checked first, and one bad item (or diary entry) writes nothing and names it. "
        "Items already in the palace, or at least dedup_threshold similar to a drawer or to an "
        f"earlier item, are skipped and listed under duplicates. At most "
        f"{MAX_CHECKPOINT_ITEMS} items.",
        _checkpoint,
        schema_of(results.CheckpointResult),
        (
            Arg(
                "items",
                "array",
                "The drawers: [{wing, room, content, source_file?}, ...].",
                required=True,
                max_items=MAX_CHECKPOINT_ITEMS,
                items=ITEM_SCHEMA,
            ),
            Arg(
                "diary",
                "object",
                "An entry for your diary, filed with them: {agent_name, entry (or content), "
                "topic?, wing?}.",
            ),
            Arg(
                "dedup_threshold",
                "number",
                "Cosine similarity (0-1] from which an item counts as a duplicate and is skipped.",
                default=DUPLICATE_THRESHOLD,
                exclusive_minimum=0.0,
                maximum=1.0,
            ),
            string_arg("added_by", "Who files them: your agent name, or 'mcp'.", default="mcp"),
        ),
        read_only=False,
    ),
    ToolSpec(
        "mempalace_sync",
        "Prune stale drawers",
        "Find the drawers mined from files that were deleted, moved, or are now ignored "
        "(.gitignore, the exclude list of the folder's mempalace.toml, folders mining skips), "
        "with the reason for each file. A dry run unless apply is true; then they are removed "
        "and the files leave the mining record. Drawers filed by hand are never touched. At "
        f"most {MAX_BULK_DELETE:,} drawers per call.",
        _sync,
        schema_of(results.SyncResult),
        (
            string_arg(
                "project_dir",
                "Only files mined from this folder (an absolute path); omit for every mined "
                "folder.",
                max_chars=PATH_CHARS,
            ),
            string_arg("wing", "Only files filed in this wing."),
            Arg(
                "apply",
                "boolean",
                "false (the default): list what would go and remove nothing. true: remove.",
                default=False,
            ),
        ),
        read_only=False,
        destructive=True,
        idempotent=True,
    ),
    # -- sessions -------------------------------------------------------------------------------
    ToolSpec(
        "mempalace_memories_filed_away",
        "What was filed away",
        "What was filed since you last asked (or since this server started): by client hooks, "
        "watch mode, other agents. Counts by room and by filer, and the newest drawers. Asking "
        "marks them as seen.",
        lambda p, a: p.upkeep.memories_filed_away(),
        schema_of(results.MemoriesFiledAwayResult),
    ),
    ToolSpec(
        "mempalace_reconnect",
        "Reconnect to the palace",
        "Drop this server's cached handles (drawer store, index, knowledge graph, tunnels) and "
        "read the palace afresh: for after another program changed or replaced its files. "
        "Returns the palace's health.",
        lambda p, a: p.reopen(),
        schema_of(results.ReconnectResult),
    ),
    ToolSpec(
        "mempalace_hook_settings",
        "Hook settings",
        "Show or change how `mempalace hook` behaves. silent_save (default true): the stop hook "
        "files the session itself; false: it asks you to save first. desktop_toast (default "
        "false): also show a desktop notification. Call with no arguments to read them.",
        lambda p, a: p.upkeep.hook_settings(a["silent_save"], a["desktop_toast"]),
        schema_of(results.HookSettingsResult),
        (
            Arg("silent_save", "boolean", "true: file sessions silently; false: ask first."),
            Arg("desktop_toast", "boolean", "true: a desktop notification on each save."),
        ),
        read_only=False,
        idempotent=True,
    ),
    ToolSpec(
        "mempalace_mesh_peers",
        "Team palace peers",
        "The machines writing to this team palace (its Chroma server) in the last day, newest "
        "first, with when each last wrote. An embedded palace (a folder) has no peers: the "
        "list is empty and reason says why.",
        lambda p, a: p.upkeep.mesh_peers(),
        schema_of(results.MeshPeersResult),
    ),
)
