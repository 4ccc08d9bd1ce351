"""The MCP tool names the server exposes (MemPalace's names, so prompts written for it work).

The server registers exactly these; the memory protocol may name only these. Tests hold both
to this list.
"""

from __future__ import annotations

READ_TOOLS = (
    "mempalace_status",
    "mempalace_list_wings",
    "mempalace_list_rooms",
    "mempalace_get_taxonomy",
    "mempalace_search",
    "mempalace_check_duplicate",
    "mempalace_get_aaak_spec",
)
WRITE_TOOLS = ("mempalace_add_drawer", "mempalace_delete_drawer")
KG_TOOLS = (
    "mempalace_kg_query",
    "mempalace_kg_add",
    "mempalace_kg_invalidate",
    "mempalace_kg_timeline",
    "mempalace_kg_stats",
)
NAVIGATION_TOOLS = ("mempalace_traverse", "mempalace_find_tunnels", "mempalace_graph_stats")
DIARY_TOOLS = ("mempalace_diary_write", "mempalace_diary_read")
CONTEXT_TOOLS = ("mempalace_wake_up",)

MCP_TOOL_NAMES: tuple[str, ...] = (
    READ_TOOLS + WRITE_TOOLS + KG_TOOLS + NAVIGATION_TOOLS + DIARY_TOOLS + CONTEXT_TOOLS
)
