"""The coordination log's tools: events (append, list, wait, ack), tasks, artifacts and patches,
through which agents hand work to each other."""

from __future__ import annotations

from mempalace_cli.mcp.spec import ToolSpec

TOOLS: tuple[ToolSpec, ...] = ()
