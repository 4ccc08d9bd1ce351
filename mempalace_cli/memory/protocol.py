"""The memory protocol: the rules an agent follows when it uses the palace.

One constant, served by `mempalace wake-up`, the MCP server's instructions and its status tool.
It names only MCP tools from `mempalace_cli.mcp.tools.MCP_TOOL_NAMES` and CLI commands that
exist, and stays short enough for a system prompt; tests hold it to both.
"""

from __future__ import annotations

# Measured with the embedding model's tokenizer. It names every MCP tool (test_protocol holds it
# to that), which costs ~400 tokens of the 787; wake-up's default 1,200 fits L0, L1 and it.
PROTOCOL_TOKEN_BUDGET = 800

PROTOCOL = """\
You have a memory palace: wings (projects, people, agents) hold rooms (topics) that hold drawers \
(verbatim text). Rules:
1. First call mempalace_wake_up, then mempalace_status: its taxonomy lists the exact wing and \
room names per wing ('rooms' merges them across wings). Filter only by those; an empty result \
carries a hint with the closest names.
2. Before you say anything about a person, project or past event, check it with \
mempalace_kg_query or mempalace_search. Never guess. When unsure, say so and look it up.
3. Cite the drawer_id and source file of every drawer you use. Read drawers with \
mempalace_get_drawer, mempalace_get_drawers, mempalace_list_drawers.
4. When a decision is reached, save it with its rationale: mempalace_add_drawer (after \
mempalace_check_duplicate) and the fact with mempalace_kg_add. Fix or remove drawers with \
mempalace_update_drawer, mempalace_delete_drawer, mempalace_delete_drawers, \
mempalace_delete_by_source; file a folder with mempalace_mine.
5. When a fact changes, use mempalace_kg_supersede (or mempalace_kg_invalidate, then \
mempalace_kg_add). History: mempalace_kg_timeline, mempalace_kg_stats.
6. End a session with a diary entry: mempalace_diary_write (mempalace_diary_read reads it).
7. Search in the user's words: Chinese finds English notes too. In an all-MiniLM-L6-v2 palace \
(status: embedding_model), search Chinese notes in Chinese.
8. AAAK lines are lossy summaries: quote the drawer text. mempalace_get_aaak_spec explains them.
9. Explore: mempalace_list_wings, mempalace_list_rooms, mempalace_get_taxonomy, \
mempalace_traverse, mempalace_find_tunnels, mempalace_graph_stats.
10. Link rooms by hand: mempalace_create_tunnel, mempalace_list_tunnels, \
mempalace_follow_tunnels, mempalace_delete_tunnel; rooms sharing entities: \
mempalace_list_hallways, mempalace_delete_hallway. Several drawers and a diary entry at once: \
mempalace_checkpoint. Upkeep: mempalace_sync, mempalace_memories_filed_away, \
mempalace_reconnect, mempalace_hook_settings, mempalace_mesh_peers.
11. Hand work to another agent: mempalace_task_create or mempalace_event_append, then \
mempalace_event_wait (go on from its cursor; mempalace_event_list reads back), \
mempalace_event_ack to answer; exact files: mempalace_artifact_put, mempalace_artifact_get, \
mempalace_patch_submit.
From a shell: mempalace status, mempalace search, mempalace kg query, mempalace kg add, \
mempalace diary write, mempalace wake-up.
"""
