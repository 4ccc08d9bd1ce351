"""Miners turn folders into drawers: project files (`project`) and chat exports (`convos`).

May import: `memory`, `storage`, `embedders` and `common`. Never the service, search
ranking or a front end.
"""
