"""The MCP front end: the tools an agent calls, over stdio or HTTP.

Lives here: `server` (the MCPServer and `serve-mcp`), `tools` (every tool: its arguments,
schema and the service verb it calls), `transport` (frames in, frames out), `options`
(read-only, mining roots), `policy` (what an agent may make the palace do), `doc` (the
generated tool reference).

May import: `mempalace_cli.service`, `mempalace_cli.serving` and the layers below them.
Never `mempalace_cli.cli`.
"""
