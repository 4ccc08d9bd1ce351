"""The palace-graph tools of MemPalace 3.11: explicit tunnels, hallways, checkpoint, sync and
the session helpers (memories_filed_away, reconnect, hook_settings, mesh_peers)."""

from __future__ import annotations

from mempalace_cli.mcp.spec import ToolSpec

TOOLS: tuple[ToolSpec, ...] = ()
