"""The memory protocol: the rules an agent follows when it uses the palace.

One constant, served by `mempalace wake-up`, the MCP server's instructions and its status tool.
It names only MCP tools from `mempalace_cli.mcp_tools.MCP_TOOL_NAMES` and CLI commands that
exist, and stays short enough for a system prompt; tests hold it to both.
"""

from __future__ import annotations

PROTOCOL_TOKEN_BUDGET = 400  # measured with the embedding model's tokenizer

PROTOCOL = """\
You have a memory palace: wings (projects, people) hold rooms (topics) that hold drawers \
(verbatim text). Rules:
1. Call mempalace_status first and learn the exact wing and room names. Filter only by those: \
a guessed wing silently returns nothing.
2. Before you say anything about a person, project or past event, check it with \
mempalace_kg_query or mempalace_search. Never guess. When unsure, say so and look it up.
3. Cite the drawer_id and source file of every drawer you rely on.
4. When a decision is reached, save it with its rationale: mempalace_add_drawer (run \
mempalace_check_duplicate first) and the fact with mempalace_kg_add.
5. When a fact changes, invalidate the old one with mempalace_kg_invalidate, then add the new \
one with mempalace_kg_add.
6. At the end of a session, write a diary entry with mempalace_diary_write.
7. Search in English, even when the question is in another language: the search model is \
English-centric.
8. AAAK lines (LOCATION|ENTITIES|TOPICS|"KEY"|EMOTIONS|FLAGS|STARS) are lossy summaries: \
quote the drawer text, not the summary. mempalace_get_aaak_spec explains them.
9. Follow links between rooms and wings with mempalace_traverse and mempalace_find_tunnels.
From a shell: mempalace status, mempalace search, mempalace kg query, mempalace kg add, \
mempalace diary write, mempalace wake-up.
"""
