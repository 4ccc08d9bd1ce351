"""One rule for anything served over HTTP (`serve-mcp --transport http` and `mempalace ui`).

Lives here: `access` (which host is loopback, when a token is needed, the Host/Origin
allow-list), `http` (uvicorn with the slow-client limits and the stop deadline) and `auth`
(the bearer token).

May import: `mempalace_cli.common` only.
"""
