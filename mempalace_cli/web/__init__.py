"""`mempalace ui`: a local web page over the same service as the CLI and the MCP server.

Lives here: `server` (start it: the serving rule of `serving.access`, uvicorn with the slow-
client limits and stop deadline of `serving.http`), `app` (the Starlette routes, one per view:
map, search, drawer, knowledge graph, diaries, health, activity), `guard` (the token a browser
carries in a cookie, and the CSRF check of every write), `i18n` (every string of the pages, in
English and Chinese, in one catalogue), `templates/` (Jinja2, rendered on the server) and
`static/` (our one small script, the stylesheet, and the vendored graph library with its
licence). Nothing is fetched from elsewhere: the page works offline.

The pages call the service only (`Palace`, its parts, `service.overview`,
`service.duplicates`, `service.audit`): no SQL and no Chroma here.

May import: `serving`, `service`, `search.passages` (the best passage of a hit, pure text),
`memory.kg.FactInput` (what the service's `kg_add` takes) and `common`. Never `cli` or `mcp`
(a front end beside it).
"""
