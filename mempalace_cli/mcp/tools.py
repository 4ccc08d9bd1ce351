"""The MCP tools as tables: every tool's name, title, hints, description, arguments, output
schema and the service call behind it (`spec.ToolSpec`).

Everything else reads these tables: the server builds `tools/list` and validates every call
from them, the tool list in docs/mcp-tools.md is generated from them
(`python -m mempalace_cli.mcp.doc`, checked by a test), and the schema-parity test compares
them with MemPalace's. `TOOLS` gathers
this module's `CORE_TOOLS` with the tools of the modules beside it (`tools_*.py`), each one a
table of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mempalace_cli.common.errors import INIT_HINT, InvalidInputError, NoPalaceError
from mempalace_cli.mcp import tools_graph, tools_log
from mempalace_cli.mcp.options import ServeOptions
from mempalace_cli.mcp.policy import (
    MINE_ROOT_FLAG,
    bulk_view,
    check_bulk_count,
    check_bulk_source,
    check_mine_source,
)
from mempalace_cli.mcp.spec import (
    BULK_DRY_RUN,
    BULK_RULES,
    DATE,
    DRAWER_ID_ARG,
    ENTITY,
    PATH_CHARS,
    PLACE_FILTERS,
    QUERY_CHARS,
    ROOM_FILE,
    SPLIT_HINT,
    TEXT_CHARS,
    WING_FILE,
    Arg,
    ToolSpec,
    schema_of,
    string_arg,
)
from mempalace_cli.memory.kg import FactInput
from mempalace_cli.memory.layers import DEFAULT_BUDGET, MAX_BUDGET, MIN_BUDGET
from mempalace_cli.service import results
from mempalace_cli.service.curation import MAX_IDS, MAX_PAGE
from mempalace_cli.service.diary import MAX_READ
from mempalace_cli.service.drawers import DUPLICATE_THRESHOLD
from mempalace_cli.service.mine_common import describe_displaced
from mempalace_cli.service.navigation import MAX_HOPS
from mempalace_cli.service.searching import MAX_DISTANCE, MAX_RESULTS

if TYPE_CHECKING:
    from mempalace_cli.service import Palace


# -- the calls ----------------------------------------------------------------------
def _status(p: Palace, a: dict[str, Any]) -> results.StatusResult:
    try:
        st = p.status()
    except NoPalaceError:
        return {"error": "No palace found", "palace_path": str(p.path), "hint": INIT_HINT}
    return {
        "total_drawers": st["total_drawers"],
        "embedding_model": st["embedding_model"],
        "wings": st["wings"],
        "taxonomy": st["taxonomy"],
        "rooms": st["rooms"],
        "palace_path": st["palace_path"],
        "protocol": p.protocol(),
        "aaak_dialect": p.aaak_spec(),
    }


def _search(p: Palace, a: dict[str, Any]) -> results.SearchResult:
    result = p.search(
        a["query"],
        wing=a["wing"],
        room=a["room"],
        limit=a["limit"],
        since=a["since"],
        before=a["before"],
        source_file=a["source_file"],
        max_distance=a["max_distance"],
        mode=CANDIDATE_MODES[a["candidate_strategy"] or "union"],
    )
    keys = ("drawer_id", "text", "wing", "room", "source_file", "date", "similarity", "matched_by")
    view: dict[str, Any] = {
        "query": result["query"],
        "filters": result["filters"],
        "results": [{k: item.get(k) for k in keys} for item in result["results"]],
    }
    for hit, item in zip(view["results"], result["results"], strict=True):
        if item.get("duplicates"):  # a hit standing for copies of its text (search_rules.py)
            hit.update(duplicates=item["duplicates"], duplicate_ids=item["duplicate_ids"])
    for key in ("time", "hint"):  # a time the query names (ranked first); a hint
        if key in result:
            view[key] = result[key]
    return view


def _mine(p: Palace, a: dict[str, Any], options: ServeOptions) -> results.MineResult:
    folder = check_mine_source(a["source"], options)  # only under the owner's mining roots
    mode = a["mode"]
    ignored: dict[str, str] = {}
    if mode == "extract":  # MemPalace's classifying mode: mined as the chat exports they are
        mode = "convos"
        ignored["mode"] = EXTRACT_MODE
    result = p.mine(
        str(folder),
        wing=a["wing"],
        agent=a["agent"],
        mode=mode,
        dry_run=a["dry_run"],
        limit=a["limit"],
        confirm_moves=_refuse_moves,
    )
    return result | ({"ignored_arguments": ignored} if ignored else {})


def _refuse_moves(move: dict[str, Any]) -> bool:
    """An agent can't be asked: mining over MCP never moves drawers filed under another wing
    or mode (the CLI asks a person first)."""
    what = describe_displaced(move["displaced"], move["wing"], move["mode"])
    raise InvalidInputError(
        f"Mining {move['directory']} this way would move {what}. Nothing was written.",
        hint="Mine it into the wing it is filed under (omit wing and mode), preview with "
        "dry_run: true, or ask the user to run `mempalace mine DIR --wing WING --yes` in a "
        "shell to move the drawers.",
    )


def _delete_by_source(p: Palace, a: dict[str, Any]) -> results.ForgetResult:
    """Never by a root, the home or the working folder; at most MAX_BULK_DELETE drawers; a
    dry run unless dry_run is false. What goes is exactly what the preview matched."""
    source, dry_run = a["source_file"], a["dry_run"] is not False
    check_bulk_source(source)
    preview = p.forget(source=source, dry_run=True)
    if dry_run:
        return bulk_view(preview, dry_run=True)
    check_bulk_count(preview["matched"], f"deleting by {source[:200]!r}")
    ids = [d["id"] for d in preview["drawers"]]
    return bulk_view(p.forget(drawer_ids=ids, dry_run=False), dry_run=False)


def _delete_drawers(p: Palace, a: dict[str, Any]) -> results.ForgetResult:
    dry_run = a["dry_run"] is not False
    if not dry_run:  # the schema's id cap is MAX_IDS; the per-call cap holds whatever it is
        check_bulk_count(len(set(a["drawer_ids"])), "this call")
    return bulk_view(p.forget(drawer_ids=a["drawer_ids"], dry_run=dry_run), dry_run)


# MemPalace's candidate strategies, as this server's search modes: 'union' ranks keyword and
# semantic candidates together (what this server always did), 'vector' by meaning only.
CANDIDATE_MODES = {"union": "hybrid", "vector": "vector"}
EXTRACT_MODE = (
    "mode 'extract' (MemPalace's classifying extraction) is mined as convos: each exchange is "
    "filed verbatim, nothing is classified"
)
# MemPalace 3.11's arguments with no meaning here: accepted, and reported when used.
SEARCH_MEMPALACE_ARGS = (
    Arg(
        "candidate_strategy",
        "string",
        "How candidates are found: 'union' (the default) ranks keyword and semantic candidates "
        "together; 'vector' ranks by meaning only.",
        enum=("vector", "union"),
    ),
    Arg(
        "cli_compatible",
        "boolean",
        "MemPalace: shape results like its CLI's.",
        ignored="results have one shape for every client here",
        honoured=(False,),
    ),
    Arg(
        "include_media",
        "boolean",
        "MemPalace: include media drawers.",
        ignored="the palace holds text drawers only, so there is no media to include",
        honoured=(False,),
    ),
    string_arg(
        "query_task",
        "MemPalace: the embedding task for the query ('search' or 'code').",
        enum=("search", "code"),
        ignored="the query is always embedded as a search query ('search'); the model has no "
        "code task",
        honoured=("search",),
    ),
    string_arg(
        "context",
        "MemPalace: text about the situation the search is for.",
        max_chars=QUERY_CHARS,
        ignored="only query is ranked; put the words that matter in query and narrow with "
        "wing, room or since",
    ),
)
MINE_MEMPALACE_ARGS = (
    string_arg(
        "extract",
        "MemPalace: how chat exports are cut ('exchange': each question with its answer; "
        "'general': classified memories).",
        enum=("exchange", "general"),
        ignored="chat exports are always filed as verbatim exchanges ('exchange'); nothing "
        "is classified",
        honoured=("exchange",),
    ),
    Arg(
        "include_ignored",
        "array",
        "MemPalace: paths to mine although .gitignore ignores them.",
        ignored="mining follows .gitignore and the exclude list of the folder's "
        "mempalace.toml; edit those to include a file",
        honoured=([],),
        max_chars=PATH_CHARS,
    ),
    Arg(
        "include_subagents",
        "boolean",
        "MemPalace: also mine sub-agents' transcripts.",
        ignored="chat exports are mined whole; sub-agent transcripts are not told apart",
    ),
)

CORE_TOOLS: tuple[ToolSpec, ...] = (
    # -- read ---------------------------------------------------------------------------------
    ToolSpec(
        "mempalace_status",
        "Palace status",
        "Overview of the palace: drawer counts per wing and per wing and room (taxonomy; "
        "'rooms' merges rooms of the same name across wings, kept for compatibility), plus the "
        "memory protocol, the AAAK dialect and the embedding model (all-MiniLM-L6-v2 is "
        "English-only). Call this first; use its exact names in filters.",
        _status,
        schema_of(results.StatusResult),
    ),
    ToolSpec(
        "mempalace_list_wings",
        "List wings",
        "Every wing (project, person or agent) with its drawer count.",
        lambda p, a: p.list_wings(),
        schema_of(results.ListWingsResult),
    ),
    ToolSpec(
        "mempalace_list_rooms",
        "List rooms",
        "Rooms (topics) with their drawer counts, in one wing or merged across the palace.",
        lambda p, a: p.list_rooms(a["wing"]),
        schema_of(results.ListRoomsResult),
        (string_arg("wing", "List only this wing's rooms; omit for every room in the palace."),),
    ),
    ToolSpec(
        "mempalace_get_taxonomy",
        "Wing/room taxonomy",
        "The full tree: wing -> room -> drawer count.",
        lambda p, a: p.get_taxonomy(),
        schema_of(results.GetTaxonomyResult),
    ),
    ToolSpec(
        "mempalace_search",
        "Search the palace",
        "Find the drawers that best answer a query (keyword + semantic ranking). Returns each "
        "drawer's verbatim text with its wing, room, source file, similarity (cosine, -1 to 1) and "
        "matched_by "
        "(the sides that found it). A filter "
        "that matches nothing returns no results and a hint naming the closest wings or rooms.",
        _search,
        schema_of(results.SearchResult),
        (
            string_arg(
                "query",
                "What to look for, in natural language or keywords. Must not be empty.",
                required=True,
                max_chars=QUERY_CHARS,
                cap_hint="Search with the key sentence or a few keywords.",
            ),
            Arg(
                "limit",
                "integer",
                f"How many results to return (1-{MAX_RESULTS}).",
                default=5,
                minimum=1,
                maximum=MAX_RESULTS,
            ),
            *PLACE_FILTERS,
            string_arg(
                "source_file",
                "Only drawers from this source: the path as results show it, its ending "
                "('auth.md') or a folder.",
                max_chars=PATH_CHARS,
            ),
            Arg(
                "max_distance",
                "number",
                "Drop hits whose cosine distance to the query is larger (0 identical - "
                "1 unrelated - 2 opposite); e.g. 0.6 keeps close matches only.",
                minimum=0.0,
                maximum=MAX_DISTANCE,
            ),
            *SEARCH_MEMPALACE_ARGS,
        ),
    ),
    ToolSpec(
        "mempalace_check_duplicate",
        "Check for duplicates",
        "Is this content already in the palace? is_duplicate is true when a close drawer says "
        "the same words (case, punctuation and spacing aside): those are the matches. Drawers "
        "at least `threshold` similar with other words (perhaps an older version of the same "
        "fact) are listed under similar: they don't block a write.",
        lambda p, a: p.check_duplicate(a["content"], a["threshold"]),
        schema_of(results.CheckDuplicateResult),
        (
            string_arg(
                "content",
                "The text you are about to file.",
                required=True,
                max_chars=TEXT_CHARS,
                cap_hint=SPLIT_HINT,
            ),
            Arg(
                "threshold",
                "number",
                "Cosine similarity (0-1] from which a close drawer with other words is listed "
                "under similar.",
                default=DUPLICATE_THRESHOLD,
                exclusive_minimum=0.0,
                maximum=1.0,
            ),
        ),
    ),
    ToolSpec(
        "mempalace_get_aaak_spec",
        "AAAK dialect spec",
        "The AAAK dialect: the compressed shorthand used in summaries and diaries.",
        lambda p, a: {"aaak_spec": p.aaak_spec()},
        schema_of(results.GetAaakSpecResult),
    ),
    ToolSpec(
        "mempalace_get_drawer",
        "Get a drawer",
        "One whole drawer by id: its verbatim text, wing, room, source file and metadata.",
        lambda p, a: p.get_drawer(a["drawer_id"]),
        schema_of(results.Drawer),
        (DRAWER_ID_ARG,),
    ),
    ToolSpec(
        "mempalace_get_drawers",
        "Get several drawers",
        "Several whole drawers by id, in the order asked; ids not found are listed in missing.",
        lambda p, a: p.get_drawers(a["drawer_ids"]),
        schema_of(results.GetDrawersResult),
        (
            Arg(
                "drawer_ids",
                "array",
                f"Drawer ids (at most {MAX_IDS:,}).",
                required=True,
                max_items=MAX_IDS,
            ),
        ),
    ),
    ToolSpec(
        "mempalace_list_drawers",
        "List drawers",
        "Drawers in a wing and/or room (or the whole palace), newest first, a page at a time, "
        "each with a short preview; total and has_more tell whether to page on with offset.",
        lambda p, a: p.list_drawers(
            a["wing"], a["room"], a["since"], a["before"], a["limit"], a["offset"]
        ),
        schema_of(results.ListDrawersResult),
        (
            *PLACE_FILTERS,
            Arg(
                "limit",
                "integer",
                f"Drawers per page (1-{MAX_PAGE}).",
                default=20,
                minimum=1,
                maximum=MAX_PAGE,
            ),
            Arg("offset", "integer", "How many drawers to skip (paging).", default=0, minimum=0),
        ),
    ),
    # -- write --------------------------------------------------------------------------------
    ToolSpec(
        "mempalace_add_drawer",
        "File a drawer",
        "File verbatim text into a wing and room. Refused when a drawer already says the same "
        "words (success: false, reason: 'duplicate', with the matches); filing the identical "
        "text again is a no-op. A close drawer with other words (an older version of a fact) "
        "does not block it: it is listed under similar, so you can update or delete the old "
        "one. Returns the drawer_id.",
        lambda p, a: p.add_drawer(
            a["wing"], a["room"], a["content"], source_file=a["source_file"], added_by=a["added_by"]
        ),
        schema_of(results.AddResult),
        (
            string_arg("wing", WING_FILE, required=True),
            string_arg("room", ROOM_FILE, required=True),
            string_arg(
                "content",
                f"The text to keep, verbatim (at most {TEXT_CHARS:,} characters).",
                required=True,
                max_chars=TEXT_CHARS,
                cap_hint=SPLIT_HINT,
            ),
            string_arg(
                "source_file",
                "Where the text came from (a path or URL), if any.",
                max_chars=PATH_CHARS,
            ),
            string_arg("added_by", "Who files it: your agent name, or 'mcp'.", default="mcp"),
        ),
        read_only=False,
        idempotent=True,
    ),
    ToolSpec(
        "mempalace_update_drawer",
        "Edit a drawer",
        "Replace a drawer's text and/or move it to another wing or room; it keeps its id. New "
        "text is embedded and indexed again, and refused (success: false, reason: 'duplicate') "
        "when another drawer already says the same words.",
        lambda p, a: p.update_drawer(a["drawer_id"], a["content"], a["wing"], a["room"]),
        schema_of(results.UpdateDrawerResult),
        (
            DRAWER_ID_ARG,
            string_arg(
                "content",
                "The new verbatim text; omit to keep it.",
                max_chars=TEXT_CHARS,
                cap_hint=SPLIT_HINT,
            ),
            string_arg("wing", "Move the drawer to this wing; omit to keep it."),
            string_arg("room", "Move the drawer to this room; omit to keep it."),
        ),
        read_only=False,
        idempotent=True,
    ),
    ToolSpec(
        "mempalace_delete_drawer",
        "Delete a drawer",
        "Permanently remove one drawer. Use only for content that is wrong or must go.",
        lambda p, a: p.delete_drawer(a["drawer_id"]),
        schema_of(results.DeleteDrawerResult),
        (DRAWER_ID_ARG,),
        read_only=False,
        destructive=True,
        idempotent=True,
    ),
    ToolSpec(
        "mempalace_delete_drawers",
        "Delete drawers",
        "Permanently remove several drawers by id. Ids not found are listed in missing. "
        + BULK_RULES,
        _delete_drawers,
        schema_of(results.ForgetResult),
        (
            Arg(
                "drawer_ids",
                "array",
                f"Drawer ids to remove (at most {MAX_IDS:,}).",
                required=True,
                max_items=MAX_IDS,
            ),
            BULK_DRY_RUN,
        ),
        read_only=False,
        destructive=True,
        idempotent=True,
    ),
    ToolSpec(
        "mempalace_delete_by_source",
        "Delete a source's drawers",
        "Remove every drawer filed from a source file or folder; mining the source again files "
        "it again. " + BULK_RULES + " Refused outright: a filesystem root ('/'), the home "
        "folder ('~'), the server's working folder ('.') and any folder holding one of them.",
        _delete_by_source,
        schema_of(results.ForgetResult),
        (
            string_arg(
                "source_file",
                "The source file exactly as results show it, or a mined folder (its absolute "
                "path).",
                required=True,
                max_chars=PATH_CHARS,
            ),
            BULK_DRY_RUN,
        ),
        read_only=False,
        destructive=True,
        idempotent=True,
    ),
    ToolSpec(
        "mempalace_mine",
        "Mine a folder",
        "File a folder's notes and code (mode projects) or chat exports (mode convos) into the "
        "palace, verbatim, with the same rules and report as `mempalace mine`. Unchanged files "
        "are skipped; dry_run reports without writing. Only folders inside the ones the "
        f"server's owner allowed (serve-mcp {MINE_ROOT_FLAG} DIR, or mcp_mine_roots in "
        "config.toml) can be mined, none by default; source must be an absolute path (no ~, "
        "no relative path), and symlinks and '..' are followed before the check, so a link "
        "out of an allowed folder is refused.",
        lambda p, a: _mine(p, a, ServeOptions()),
        schema_of(results.MineResult),
        (
            string_arg(
                "source",
                "The folder to mine: an absolute path inside an allowed folder.",
                required=True,
                max_chars=PATH_CHARS,
            ),
            string_arg(
                "mode",
                "projects (notes, docs, code) or convos (chat exports); MemPalace's 'extract' "
                "is mined as convos (reported in ignored_arguments).",
                default="projects",
                enum=("projects", "convos", "extract"),
            ),
            string_arg(
                "wing", "Wing to file into; default: the folder's mempalace.toml or its name."
            ),
            string_arg("agent", "Convos: the agent name recorded on each drawer."),
            Arg("limit", "integer", "Mine at most this many files.", minimum=1),
            Arg("dry_run", "boolean", "Report what would change, write nothing.", default=False),
            *MINE_MEMPALACE_ARGS,
        ),
        read_only=False,
        idempotent=True,
        serve_call=_mine,
    ),
    # -- knowledge graph ----------------------------------------------------------------------
    ToolSpec(
        "mempalace_kg_query",
        "Query the knowledge graph",
        "Facts about an entity, each with its validity interval and source. With as_of, the "
        "facts valid that day: valid_from <= as_of <= valid_to, both days included.",
        lambda p, a: p.kg_query(a["entity"], as_of=a["as_of"], direction=a["direction"]),
        schema_of(results.KgQueryResult),
        (
            string_arg("entity", ENTITY, required=True),
            string_arg("as_of", "Only facts valid on this date (YYYY-MM-DD); omit for all."),
            string_arg(
                "direction",
                "'outgoing': the entity is the subject; 'incoming': the object; 'both'.",
                default="both",
                enum=("outgoing", "incoming", "both"),
            ),
        ),
    ),
    ToolSpec(
        "mempalace_kg_add",
        "Add a fact",
        "Record a fact (subject, predicate, object), valid from valid_from through valid_to "
        "(both included), with where it came from.",
        lambda p, a: p.kg_add(
            FactInput(
                a["subject"],
                a["predicate"],
                a["object"],
                valid_from=a["valid_from"],
                valid_to=a["valid_to"],
                confidence=a["confidence"],
                source_drawer_id=a["source_drawer_id"],
                source_file=a["source_file"],
                subject_type=a["subject_type"],
                object_type=a["object_type"],
                source_closet=a["source_closet"],
            )
        ),
        schema_of(results.KgAddResult),
        (
            string_arg("subject", "Who or what the fact is about ('Maya').", required=True),
            string_arg("predicate", "The relation, snake_case ('works_on').", required=True),
            string_arg("object", "The value or other entity ('myapp').", required=True),
            string_arg("valid_from", f"When it became true. {DATE} Omit if unknown."),
            string_arg("valid_to", f"The last day it was true. {DATE} Omit if current."),
            Arg(
                "confidence", "number", "How sure you are, 0-1.", default=1.0, minimum=0, maximum=1
            ),
            string_arg("source_closet", "The closet (summary pointer) the fact came from, if any."),
            string_arg("source_drawer_id", "The drawer this fact was read from, if any."),
            string_arg(
                "source_file", "The file this fact was read from, if any.", max_chars=PATH_CHARS
            ),
            string_arg("subject_type", "Kind of subject: person, project, tool, place..."),
            string_arg("object_type", "Kind of object: person, project, tool, place..."),
        ),
        read_only=False,
        idempotent=True,
    ),
    ToolSpec(
        "mempalace_kg_invalidate",
        "End a fact",
        "Mark a fact as no longer true after a date (its last day). Never deletes: history stays "
        "queryable with as_of.",
        lambda p, a: p.kg_invalidate(a["subject"], a["predicate"], a["object"], ended=a["ended"]),
        schema_of(results.KgInvalidateResult),
        (
            string_arg("subject", "The fact's subject, as stored.", required=True),
            string_arg("predicate", "The fact's predicate, as stored.", required=True),
            string_arg("object", "The fact's object, as stored.", required=True),
            string_arg("ended", f"The last day it was true. {DATE} Default: today."),
        ),
        read_only=False,
    ),
    ToolSpec(
        "mempalace_kg_supersede",
        "Replace a fact",
        "A fact changed: end 'subject predicate old_object' on at and start 'subject predicate "
        "new_object' on at, in one step. On that day both hold; afterwards only the new one is "
        "current.",
        lambda p, a: p.kg_supersede(
            a["subject"], a["predicate"], a["old_object"], a["new_object"], at=a["at"]
        ),
        schema_of(results.KgSupersedeResult),
        (
            string_arg("subject", "The fact's subject ('MyProject').", required=True),
            string_arg("predicate", "The relation ('uses').", required=True),
            string_arg("old_object", "The value that stops being true ('Auth0').", required=True),
            string_arg("new_object", "The value that replaces it ('Clerk').", required=True),
            string_arg("at", f"The switch-over day. {DATE} Default: today."),
        ),
        read_only=False,
    ),
    ToolSpec(
        "mempalace_kg_timeline",
        "Fact timeline",
        "Facts in chronological order, for one entity or the whole graph, a page at a time.",
        lambda p, a: p.kg_timeline(a["entity"], limit=a["limit"], offset=a["offset"]),
        schema_of(results.KgTimelineResult),
        (
            string_arg("entity", f"{ENTITY} Omit for the whole graph."),
            Arg("limit", "integer", "At most this many facts; omit for all.", minimum=1),
            Arg("offset", "integer", "Skip this many facts first (paging).", default=0, minimum=0),
        ),
    ),
    ToolSpec(
        "mempalace_kg_stats",
        "Knowledge-graph stats",
        "Counts of entities and facts (current and expired) and of each predicate in use.",
        lambda p, a: p.kg_stats(),
        schema_of(results.KgStatsResult),
    ),
    # -- navigation ---------------------------------------------------------------------------
    ToolSpec(
        "mempalace_traverse",
        "Walk the palace graph",
        "Rooms reachable from a room, hop by hop: rooms of one wing are neighbours, a room "
        "filed in several wings (a tunnel) leads into each of them, and so does an explicit "
        "tunnel (mempalace_create_tunnel; via.explicit names it). An unknown room gives "
        "found: false with close names in suggestions.",
        lambda p, a: p.traverse(a["start_room"], max_hops=a["max_hops"]),
        schema_of(results.TraverseResult),
        (
            string_arg(
                "start_room",
                "Room to start from (a name from mempalace_list_rooms).",
                required=True,
            ),
            Arg(
                "max_hops",
                "integer",
                f"How far to walk, in rooms (1-{MAX_HOPS}).",
                default=2,
                minimum=1,
                maximum=MAX_HOPS,
            ),
        ),
    ),
    ToolSpec(
        "mempalace_find_tunnels",
        "Find tunnels",
        "Rooms that appear in more than one wing: where projects and people meet. Diary rooms "
        "are private and never count. explicit lists the tunnels made on purpose "
        "(mempalace_create_tunnel) between the wings.",
        lambda p, a: p.find_tunnels(wing_a=a["wing_a"], wing_b=a["wing_b"]),
        schema_of(results.FindTunnelsResult),
        (
            string_arg("wing_a", "First wing; omit for any wing."),
            string_arg("wing_b", "Second wing; omit for any wing."),
        ),
    ),
    ToolSpec(
        "mempalace_graph_stats",
        "Palace graph stats",
        "Counts of wings, rooms, drawers, tunnels and edges in the palace graph (and of "
        "explicit tunnels), and the top tunnels.",
        lambda p, a: p.graph_stats(),
        schema_of(results.GraphStatsResult),
    ),
    # -- diary --------------------------------------------------------------------------------
    ToolSpec(
        "mempalace_diary_write",
        "Write diary entry",
        "Append an entry to your own diary: a drawer in wing wing_<agent_name> (or the wing you "
        "name), room diary. Diaries stay private: they never form tunnels.",
        lambda p, a: p.diary_write(a["agent_name"], a["entry"], topic=a["topic"], wing=a["wing"]),
        schema_of(results.DiaryWriteResult),
        (
            string_arg(
                "agent_name",
                "Your agent name (letters or digits); each agent has its own diary.",
                required=True,
                aliases=("agent",),
            ),
            string_arg(
                "entry",
                "The entry: what you did, learned or decided (AAAK welcome). Required: pass "
                "it as entry or as content.",
                required=True,
                max_chars=TEXT_CHARS,
                aliases=("content",),
                publish_aliases=True,
                cap_hint="Write a shorter entry, or file the text with mempalace_add_drawer.",
            ),
            string_arg("topic", "A short topic to file the entry under, if any."),
            string_arg("wing", "File into this wing instead of wing_<agent_name>."),
        ),
        read_only=False,
    ),
    ToolSpec(
        "mempalace_diary_read",
        "Read diary",
        "An agent's most recent diary entries, newest first, and how many there are in all.",
        lambda p, a: p.diary_read(a["agent_name"], last=a["last_n"], wing=a["wing"]),
        schema_of(results.DiaryReadResult),
        (
            string_arg(
                "agent_name", "The agent whose diary to read.", required=True, aliases=("agent",)
            ),
            Arg(
                "last_n",
                "integer",
                f"How many recent entries (1-{MAX_READ}).",
                default=10,
                minimum=1,
                maximum=MAX_READ,
                aliases=("last",),
            ),
            string_arg(
                "wing", "Read the agent's entries in this wing instead of wing_<agent_name>."
            ),
        ),
    ),
    # -- context ------------------------------------------------------------------------------
    ToolSpec(
        "mempalace_wake_up",
        "Wake-up context",
        "The same wake-up context as `mempalace wake-up`: identity plus the palace's most "
        "important drawers, within a token budget. Call at the start of a session.",
        lambda p, a: p.wake_up(wing=a["wing"], budget=a["budget"]),
        schema_of(results.WakeUpResult),
        (
            string_arg("wing", "Focus on this wing; omit for the whole palace."),
            Arg(
                "budget",
                "integer",
                f"Token budget for the context text ({MIN_BUDGET}-{MAX_BUDGET}).",
                default=DEFAULT_BUDGET,
                minimum=MIN_BUDGET,
                maximum=MAX_BUDGET,
            ),
        ),
    ),
)

TOOLS: tuple[ToolSpec, ...] = CORE_TOOLS + tools_graph.TOOLS + tools_log.TOOLS
TOOLS_BY_NAME: dict[str, ToolSpec] = {t.name: t for t in TOOLS}
MCP_TOOL_NAMES: tuple[str, ...] = tuple(TOOLS_BY_NAME)
READ_TOOLS: tuple[str, ...] = tuple(t.name for t in TOOLS if t.read_only)
WRITE_TOOLS: tuple[str, ...] = tuple(t.name for t in TOOLS if not t.read_only)
