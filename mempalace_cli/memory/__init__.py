"""What an agent keeps besides drawers: facts with a history, the palace graph, wake-up.

Lives here: `kg` (the temporal knowledge graph), `kg_store` and `kg_store_chroma` (where facts
are stored, locally or on a team server), `graph` (wings, rooms and tunnels), `layers` (the
wake-up context), `aaak` (the compressed dialect) and `protocol` (the memory protocol text).

May import: `mempalace_cli.common` and `mempalace_cli.storage`. Never the service, search
ranking, miners or any front end.
"""
